"""Flush services (spec message-and-store-format.md §11.2).

* :class:`FlushRealTimeService` — ASYNC_FLUSH: every ``flushIntervalCommitLog``
  ms flush when ``flushCommitLogLeastPages`` pages are dirty, everything at
  least every ``flushCommitLogThoroughInterval`` ms.
* :class:`GroupCommitService` — SYNC_FLUSH: writers wait for the flushed offset
  to pass their record; one fsync covers every request queued while the
  previous one ran (group commit).
* :class:`FlushConsumeQueueService` — consume queues and, on the thorough
  round, the checkpoint.

fsync runs in the loop's default executor, never on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from store.store_checkpoint import StoreCheckpoint

__all__ = ["FlushRealTimeService", "GroupCommitService", "FlushConsumeQueueService", "flush_until"]

log = logging.getLogger(__name__)


def flush_until(commit_log, target: int) -> int:
    """Flush the CommitLog until its flushed offset reaches ``target`` (or stops moving); blocking."""
    q = commit_log.mapped_file_queue
    for _ in range(1 + len(q.mapped_files) * 2):
        if q.flushed_where >= target:
            break
        before = q.flushed_where
        q.flush(0)
        if q.flushed_where == before:
            # the file holding flushed_where is fully flushed: step to the next one
            mf = q.find_mapped_file_by_offset(before)
            if mf is None or mf.flushed_position < mf.wrote_position:
                break
            if mf.is_full():
                q.flushed_where = mf.file_from_offset + mf.file_size
            else:
                break
    return q.flushed_where


class FlushRealTimeService:
    """Periodic CommitLog flush for ASYNC_FLUSH."""

    def __init__(self, commit_log, config, checkpoint: StoreCheckpoint | None) -> None:
        self.commit_log = commit_log
        self.config = config
        self.checkpoint = checkpoint
        self._stopped = False
        self._event = asyncio.Event()
        self._last_thorough = time.monotonic()

    def wakeup(self) -> None:
        self._event.set()

    def _flush(self, least_pages: int) -> None:
        q = self.commit_log.mapped_file_queue
        if least_pages == 0:
            flush_until(self.commit_log, q.get_max_offset())
        else:
            q.flush(least_pages)
        if self.checkpoint is not None and q.store_timestamp:
            self.checkpoint.physic_msg_timestamp = q.store_timestamp

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopped:
            interval = self.config.flushIntervalCommitLog / 1000.0
            if self.config.flushCommitLogTimed:
                await asyncio.sleep(interval)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._event.wait(), interval)
                self._event.clear()
            least = self.config.flushCommitLogLeastPages
            now = time.monotonic()
            if (now - self._last_thorough) * 1000 >= self.config.flushCommitLogThoroughInterval:
                self._last_thorough = now
                least = 0
            try:
                await loop.run_in_executor(None, self._flush, least)
            except Exception:
                log.exception("commit log flush failed")

    def stop(self) -> None:
        self._stopped = True
        self._event.set()


def _expire(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(False)


class GroupCommitService:
    """SYNC_FLUSH: resolve each writer once the data covering its record is on disk."""

    def __init__(self, commit_log, checkpoint: StoreCheckpoint | None) -> None:
        self.commit_log = commit_log
        self.checkpoint = checkpoint
        self._requests: list[tuple[int, asyncio.Future]] = []
        self._event = asyncio.Event()
        self._stopped = False
        self.fsync_count = 0

    def wakeup(self) -> None:
        self._event.set()

    async def wait_for_flush(self, target: int, timeout_ms: int) -> bool:
        """True once the flushed offset is ≥ ``target``; False after ``timeout_ms``."""
        if self.commit_log.mapped_file_queue.flushed_where >= target:
            return True
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._requests.append((target, fut))
        self._event.set()
        # a timer instead of wait_for(): no extra task per writer on this hot path
        timer = loop.call_later(timeout_ms / 1000.0, _expire, fut)
        try:
            return await fut
        finally:
            timer.cancel()

    def _flush(self, target: int) -> int:
        flushed = flush_until(self.commit_log, target)
        ts = self.commit_log.mapped_file_queue.store_timestamp
        if self.checkpoint is not None and ts:
            self.checkpoint.physic_msg_timestamp = ts
        return flushed

    async def _round(self) -> None:
        reqs, self._requests = self._requests, []
        if not reqs:
            return
        loop = asyncio.get_running_loop()
        # flush everything written so far: later writers of this round are covered too
        target = self.commit_log.get_max_offset()
        try:
            flushed = await loop.run_in_executor(None, self._flush, target)
        except Exception:
            log.exception("group commit flush failed")
            flushed = self.commit_log.mapped_file_queue.flushed_where
        self.fsync_count += 1
        for t, fut in reqs:
            if not fut.done():
                if flushed >= t:
                    fut.set_result(True)
                else:
                    self._requests.append((t, fut))  # retried next round until its deadline

    async def run(self) -> None:
        while not self._stopped:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), 0.01)
            self._event.clear()
            await self._round()
        await self._round()

    def stop(self) -> None:
        self._stopped = True
        self._event.set()


class FlushConsumeQueueService:
    """Periodic consume-queue flush; the thorough round also writes the checkpoint."""

    def __init__(self, consume_queues, config, checkpoint: StoreCheckpoint,
                 logics_timestamp: Callable[[], int]) -> None:
        self.consume_queues = consume_queues
        self.config = config
        self.checkpoint = checkpoint
        self._logics_timestamp = logics_timestamp
        self._stopped = False
        self._last_thorough = time.monotonic()

    def flush(self, least_pages: int) -> None:
        """Blocking flush (also used at shutdown with ``least_pages`` 0)."""
        ts = self._logics_timestamp()
        self.consume_queues.flush(least_pages)
        if least_pages == 0:
            if ts > 0:
                self.checkpoint.logics_msg_timestamp = ts
            self.checkpoint.flush()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stopped:
            await asyncio.sleep(self.config.flushIntervalConsumeQueue / 1000.0)
            least = self.config.flushConsumeQueueLeastPages
            now = time.monotonic()
            if (now - self._last_thorough) * 1000 >= self.config.flushConsumeQueueThoroughInterval:
                self._last_thorough = now
                least = 0
            try:
                await loop.run_in_executor(None, self.flush, least)
            except Exception:
                log.exception("consume queue flush failed")

    def stop(self) -> None:
        self._stopped = True

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
import concurrent.futures
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


class GroupCommitService:
    """SYNC_FLUSH: resolve each writer once the data covering its record is on disk.

    Callback driven, on its own flush thread (RocketMQ's GroupCommitService
    thread): a round fsyncs everything written so far; writers arriving while it
    runs share the next round, which starts as soon as the previous one ends. The
    end of a round is handled by the loop callback the flush thread schedules:
    waiters are answered in that same loop iteration (no task wake-up in
    between), which keeps the fsync chain short under load.

    Waiting costs a future and a list entry, no timer per writer: one timer,
    armed for the oldest deadline, answers writers whose ``syncFlushTimeout``
    passed (the disk may hang in fsync) with False, i.e. FLUSH_DISK_TIMEOUT.
    """

    def __init__(self, commit_log, checkpoint: StoreCheckpoint | None) -> None:
        self.commit_log = commit_log
        self.checkpoint = checkpoint
        # (target offset, future, loop-time deadline), oldest first
        self._requests: list[tuple[int, asyncio.Future, float]] = []
        self._in_round: list[tuple[int, asyncio.Future, float]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._flushing = False
        self._target = 0
        self._woken = False
        self._stopped = False
        self._idle_waiters: list[asyncio.Future] = []
        self._stop_fut: asyncio.Future | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self.fsync_count = 0

    # -- writers -----------------------------------------------------------------------

    def wakeup(self) -> None:
        """Flush soon even without waiters (a WAIT=false put under SYNC_FLUSH)."""
        if self._flushing:
            self._woken = True
        else:
            self._start_round()

    async def wait_for_flush(self, target: int, timeout_ms: int) -> bool:
        """True once the flushed offset is ≥ ``target``; False after ``timeout_ms``."""
        if self.commit_log.mapped_file_queue.flushed_where >= target:
            return True
        if timeout_ms <= 0:  # Java's await(0): only what is already on disk counts
            self.wakeup()
            return False
        loop = self._loop_now()
        fut = loop.create_future()
        deadline = loop.time() + timeout_ms / 1000.0
        self._requests.append((target, fut, deadline))
        if self._timer is None or deadline < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._arm(deadline)
        if not self._flushing:
            self._start_round()
        return await fut

    # -- rounds ------------------------------------------------------------------------

    def _loop_now(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def _flush(self, target: int) -> int:
        flushed = flush_until(self.commit_log, target)
        ts = self.commit_log.mapped_file_queue.store_timestamp
        if self.checkpoint is not None and ts:
            self.checkpoint.physic_msg_timestamp = ts
        return flushed

    def _start_round(self) -> None:
        """Fsync everything written so far on the flush thread (no-op while a round runs)."""
        if self._flushing:
            return
        self._woken = False
        cl = self.commit_log
        target = cl.get_max_offset()
        reqs, self._requests = self._requests, []
        if target <= cl.mapped_file_queue.flushed_where:
            self._resolve(reqs, cl.mapped_file_queue.flushed_where)
            self._wake_idle()
            return
        loop = self._loop_now()
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="group-commit")
        self._flushing = True
        self._target = target
        self._in_round = reqs
        try:
            cf = self._executor.submit(self._flush, target)
        except RuntimeError:  # executor shut down (late waiters after stop): flush inline
            cf = concurrent.futures.Future()
            try:
                cf.set_result(self._flush(target))
            except Exception as e:  # noqa: BLE001
                cf.set_exception(e)
            self._round_done(cf)
            return
        cf.add_done_callback(lambda f: loop.call_soon_threadsafe(self._round_done, f))

    def _round_done(self, cf: concurrent.futures.Future) -> None:
        self._flushing = False
        self.fsync_count += 1
        try:
            flushed = cf.result()
        except Exception:
            log.exception("group commit flush failed")
            flushed = self.commit_log.mapped_file_queue.flushed_where
        stalled = flushed < self._target
        reqs, self._in_round = self._in_round, []
        # writers that queued during the fsync and are covered by it need no other round
        late, self._requests = self._requests, []
        self._resolve(reqs, flushed)
        self._resolve(late, flushed)
        if self._requests or self._woken:
            if stalled:  # the flush fails or lags: retry shortly, no busy loop on a broken disk
                self._loop_now().call_later(0.01, self._start_round)
            else:
                self._start_round()
        if not self._flushing:
            self._wake_idle()

    def _resolve(self, reqs: list, flushed: int) -> None:
        for req in reqs:
            fut = req[1]
            if not fut.done():
                if flushed >= req[0]:
                    fut.set_result(True)
                else:
                    self._requests.append(req)  # retried next round until its deadline

    def _wake_idle(self) -> None:
        waiters, self._idle_waiters = self._idle_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    # -- timeouts ------------------------------------------------------------------------

    def _arm(self, at: float) -> None:
        self._timer_at = at
        self._timer = self._loop_now().call_at(at, self._expire_due)

    def _expire_due(self) -> None:
        """Answer False to writers past their deadline; re-arm for the oldest one left."""
        self._timer = None
        now = self._loop_now().time()
        earliest = None
        for reqs in (self._requests, self._in_round):
            keep = []
            for req in reqs:
                fut = req[1]
                if fut.done():
                    continue
                if req[2] <= now:
                    fut.set_result(False)
                else:
                    keep.append(req)
                    if earliest is None or req[2] < earliest:
                        earliest = req[2]
            reqs[:] = keep
        if earliest is not None:
            self._arm(earliest)

    # -- life cycle ------------------------------------------------------------------------

    async def _round(self) -> None:
        """Wait for the running round, then flush everything and answer every waiter it covers."""
        loop = self._loop_now()
        while self._flushing:
            w = loop.create_future()
            self._idle_waiters.append(w)
            await w
        self._start_round()
        while self._flushing:
            w = loop.create_future()
            self._idle_waiters.append(w)
            await w

    async def run(self) -> None:
        """Bind to the running loop and stay until :meth:`stop` (rounds are driven by the writers)."""
        loop = self._loop_now()
        try:
            if not self._stopped:
                self._stop_fut = loop.create_future()
                await self._stop_fut
            await self._round()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=False)

    def stop(self) -> None:
        self._stopped = True
        if self._stop_fut is not None and not self._stop_fut.done():
            self._stop_fut.set_result(None)


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

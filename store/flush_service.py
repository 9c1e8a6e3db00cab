"""Flush services (spec message-and-store-format.md §11.2).

* :class:`FlushRealTimeService` — ASYNC_FLUSH: every ``flushIntervalCommitLog``
  ms flush when ``flushCommitLogLeastPages`` pages are dirty, everything at
  least every ``flushCommitLogThoroughInterval`` ms.
* :class:`GroupCommitService` — SYNC_FLUSH: writers wait for the flushed offset
  to pass their record; one fsync covers every request queued while the
  previous one ran (group commit), on a thread of its own
  (:class:`common.fsync_worker.FsyncWorker`).
* :class:`FlushConsumeQueueService` — consume queues and, on the thorough
  round, the checkpoint.

fsync never runs on the event loop: in the loop's default executor, or on the
group-commit worker's thread.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import time
from collections.abc import Callable

from common.fsync_worker import FsyncWorker
from store.config import MessageStoreConfig
from store.message_store import CommitLogBackend
from store.store_checkpoint import StoreCheckpoint

__all__ = ["ThoroughFlush", "FlushRealTimeService", "GroupCommitService", "FlushConsumeQueueService", "flush_until"]

log = logging.getLogger(__name__)


def flush_until(commit_log: CommitLogBackend, target: int) -> int:
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


class ThoroughFlush:
    """When a flush service last flushed everything: every ``*ThoroughInterval`` ms a round flushes
    whatever is dirty (least pages 0) instead of waiting for ``*LeastPages`` of it."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last = time.monotonic()

    def least_pages(self, least: int, thorough_interval_ms: int) -> int:
        now = time.monotonic()
        if (now - self.last) * 1000 >= thorough_interval_ms:
            self.last = now
            return 0
        return least

    async def round(self, flush: Callable[[int], object], least: int, thorough_interval_ms: int, what: str) -> None:
        """One flush round in the default executor (off the event loop); a failure is logged and the
        next round tries again."""
        try:
            await asyncio.get_running_loop().run_in_executor(None, flush, self.least_pages(least, thorough_interval_ms))
        except Exception:
            log.exception("%s flush failed", what)


class FlushRealTimeService:
    """Periodic CommitLog flush for ASYNC_FLUSH."""

    def __init__(self, commit_log: CommitLogBackend, config: MessageStoreConfig,
                 checkpoint: StoreCheckpoint | None) -> None:
        self.commit_log = commit_log
        self.config = config
        self.checkpoint = checkpoint
        self._stopped = False
        self._event = asyncio.Event()
        self._thorough = ThoroughFlush()

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
        while not self._stopped:
            interval = self.config.flushIntervalCommitLog / 1000.0
            if self.config.flushCommitLogTimed:
                await asyncio.sleep(interval)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._event.wait(), interval)
                self._event.clear()
            await self._thorough.round(self._flush, self.config.flushCommitLogLeastPages,
                                       self.config.flushCommitLogThoroughInterval, "commit log")

    def stop(self) -> None:
        self._stopped = True
        self._event.set()


class GroupCommitService:
    """SYNC_FLUSH: resolve each writer once the data covering its record is on disk.

    The fsyncs run on RocketMQ's GroupCommitService thread, here a
    :class:`common.fsync_worker.FsyncWorker`: each round makes durable everything
    asked before it starts, and the next starts as soon as it ends, without waiting
    for the event loop. Writers that append while a round runs share the next one
    (group commit), and the loop keeps appending while the disk syncs: the two
    overlap instead of taking turns. Each wait asks for everything appended so far,
    not only the writer's own record.

    After each round the worker's eventfd turns readable; the loop then marks the
    CommitLog flushed (positions, checkpoint time) and answers every waiter the round
    covers. Waiting costs a future and a list entry, no timer per writer: one timer,
    armed for the oldest deadline, answers writers whose ``syncFlushTimeout`` passed
    (the disk may hang in fsync) with False, i.e. FLUSH_DISK_TIMEOUT.
    """

    def __init__(self, commit_log: CommitLogBackend, checkpoint: StoreCheckpoint | None) -> None:
        self.commit_log = commit_log
        self.checkpoint = checkpoint
        # (target offset, future or None, loop-time deadline, callback or None), in arrival order
        self._requests: list[tuple[int, asyncio.Future | None, float, Callable[[bool], None] | None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.worker: FsyncWorker | None = None
        self._file = None  # the MappedFile whose descriptor _fd is, the last one asked for
        self._fd = -1
        self._asked = 0  # highest offset asked for
        self._ask_soon = False  # an ask is due at the end of this loop turn
        # (asked offset, store time of the last record below it): the checkpoint's physic time
        self._marks: collections.deque[tuple[int, int]] = collections.deque()
        self._stopped = False
        self._closed = False
        self._stop_fut: asyncio.Future | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._logged_error = 0
        self._closed_rounds = 0

    @property
    def fsync_count(self) -> int:
        """fsync rounds run so far (runtime info ``groupCommitFsyncCount``)."""
        return self.worker.rounds if self.worker is not None else self._closed_rounds

    # -- writers -----------------------------------------------------------------------

    def wakeup(self) -> None:
        """Flush soon even without waiters (a WAIT=false put under SYNC_FLUSH)."""
        self._ask()

    async def wait_for_flush(self, target: int, timeout_ms: int) -> bool:
        """True once the flushed offset is ≥ ``target``; False after ``timeout_ms``."""
        w = self.flush_waiter(target, timeout_ms)
        return w if w.__class__ is bool else await w

    def flush_waiter(self, target: int, timeout_ms: int) -> bool | asyncio.Future:
        """:meth:`wait_for_flush` without its coroutine (the send path awaits the future itself):
        the answer when it is known now, else a future of it."""
        if self.commit_log.mapped_file_queue.flushed_where >= target:
            return True
        if timeout_ms <= 0:  # Java's await(0): only what is already on disk counts
            self.wakeup()
            return False
        loop = self._loop_now()
        fut = loop.create_future()
        self._enqueue(target, fut, loop.time() + timeout_ms / 1000.0, None)
        return fut

    def flush_callback(self, target: int, timeout_ms: int, callback: Callable[[bool], None]) -> None:
        """:meth:`flush_waiter` without a future: ``callback(ok)`` once the flushed offset is ≥
        ``target`` (True) or ``timeout_ms`` passed (False); called at once when that is known now.
        Callbacks run on the loop in the round's own wake-up, in arrival order, with no task or
        loop iteration between the fsync and the answers."""
        if self.commit_log.mapped_file_queue.flushed_where >= target:
            callback(True)
            return
        if timeout_ms <= 0:
            self.wakeup()
            callback(False)
            return
        loop = self._loop_now()
        self._enqueue(target, None, loop.time() + timeout_ms / 1000.0, callback)

    def _enqueue(self, target: int, fut: asyncio.Future | None, deadline: float,
                 callback: Callable[[bool], None] | None) -> None:
        self._requests.append((target, fut, deadline, callback))
        if self._timer is None or deadline < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._arm(deadline)
        self._ask()

    # -- the worker ----------------------------------------------------------------------

    def _loop_now(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def _ask(self) -> None:
        """Ask the worker for everything appended so far, at the end of this loop turn (loop thread).

        The reads of one turn (every socket the poll found readable) share one round: asked
        one by one, an idle worker would start a round for the first read alone and leave the
        others to the next one. The ask waits for no timer and no other event, only for the
        callbacks already due in this turn."""
        if not self._ask_soon:
            self._ask_soon = True
            self._loop_now().call_soon(self._ask_now)

    def _ask_now(self) -> None:
        self._ask_soon = False
        q = self.commit_log.mapped_file_queue
        mf = q.get_last_mapped_file()
        if mf is None:
            return
        end = mf.file_from_offset + mf.wrote_position
        if end <= self._asked:
            return
        if self._closed:
            self._flush_inline(end)
            return
        worker = self._ensure_worker()
        if mf is not self._file:
            self._switch_file(mf)
        worker.ask(self._fd, end, mf.file_from_offset)
        self._asked = end
        self._marks.append((end, mf.store_timestamp))

    def _ensure_worker(self) -> FsyncWorker:
        worker = self.worker
        if worker is None:
            # No page-cache fill by the worker (FsyncWorker's ``ahead``): the CommitLog writes
            # zeros ahead of its writer itself (MappedFile.warm_ahead), so the pages are cached.
            worker = self.worker = FsyncWorker(ahead=0)
            self._loop_now().add_reader(worker.fileno(), self._on_round)
        return worker

    def hold(self, on: bool) -> None:
        """Tests: while ``on``, the next fsync round waits (a hanging disk)."""
        self._ensure_worker().hold(on)

    def _switch_file(self, mf) -> None:
        """The CommitLog rolled: the worker finishes the previous file, then syncs ``mf``."""
        old, old_fd = self._file, self._fd
        if old is not None and self.worker is not None:
            # everything the old file will ever hold (its records and the blank end)
            self.worker.ask(old_fd, old.file_from_offset + (old.file_size if old.is_full() else old.wrote_position))
        self._fd = os.open(mf.path, os.O_RDONLY | os.O_CLOEXEC)
        self._file = mf
        if old_fd >= 0:
            os.close(old_fd)  # the worker keeps its own duplicate while it needs one

    def _on_round(self) -> None:
        """After a round: mark the CommitLog flushed, answer every waiter it covers (loop thread)."""
        worker = self.worker
        if worker is None:
            return
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(worker.fileno())
        err = worker.error
        if err and err != self._logged_error:
            log.error("group commit fsync failed: %s", os.strerror(err))
        self._logged_error = err
        self._mark_flushed(worker.done)

    def _mark_flushed(self, done: int) -> None:
        marks = self._marks
        ts = 0
        while marks and marks[0][0] <= done:
            ts = marks.popleft()[1]
        q = self.commit_log.mapped_file_queue
        q.mark_flushed(done, ts)
        if ts and self.checkpoint is not None:
            self.checkpoint.physic_msg_timestamp = ts
        self._resolve(q.flushed_where)

    def _resolve(self, flushed: int) -> None:
        reqs = self._requests
        if not reqs:
            return
        keep = []
        for req in reqs:
            if flushed >= req[0]:
                _answer(req, True)
            elif req[3] is not None or not req[1].done():
                keep.append(req)
        self._requests = keep

    def _flush_inline(self, end: int) -> None:
        """Late writers after the worker closed: flush here (blocking, but the store is shutting down)."""
        try:
            flush_until(self.commit_log, end)
        except Exception:
            log.exception("group commit flush failed")
        self._closed_rounds += 1
        q = self.commit_log.mapped_file_queue
        if self.checkpoint is not None and q.store_timestamp:
            self.checkpoint.physic_msg_timestamp = q.store_timestamp
        self._loop_now().call_soon(self._resolve, q.flushed_where)

    # -- timeouts ------------------------------------------------------------------------

    def _arm(self, at: float) -> None:
        self._timer_at = at
        self._timer = self._loop_now().call_at(at, self._expire_due)

    def _expire_due(self) -> None:
        """Answer False to writers past their deadline; re-arm for the oldest one left."""
        self._timer = None
        now = self._loop_now().time()
        earliest = None
        keep = []
        for req in self._requests:
            if req[3] is None and req[1].done():
                continue
            if req[2] <= now:
                _answer(req, False)
            else:
                keep.append(req)
                if earliest is None or req[2] < earliest:
                    earliest = req[2]
        self._requests = keep
        if earliest is not None:
            self._arm(earliest)

    # -- life cycle ------------------------------------------------------------------------

    async def _round(self) -> None:
        """Make everything written so far durable and answer every waiter it covers."""
        target = self.commit_log.get_max_offset()
        if self.commit_log.mapped_file_queue.flushed_where >= target:
            self._resolve(self.commit_log.mapped_file_queue.flushed_where)
            return
        fut = self._loop_now().create_future()
        self._requests.append((target, fut, float("inf"), None))
        self._ask()
        await fut

    async def run(self) -> None:
        """Bind to the running loop and stay until :meth:`stop` (rounds are driven by the writers)."""
        loop = self._loop_now()
        try:
            if not self._stopped:
                self._stop_fut = loop.create_future()
                await self._stop_fut
            await self._round()
        finally:
            self._close()

    def _close(self) -> None:
        self._closed = True
        worker, self.worker = self.worker, None
        if worker is not None:
            with contextlib.suppress(Exception):
                self._loop_now().remove_reader(worker.fileno())
            done = worker.done
            self._closed_rounds = worker.rounds
            worker.close()
            self._mark_flushed(done)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._file = None

    def stop(self) -> None:
        self._stopped = True
        if self._stop_fut is not None and not self._stop_fut.done():
            self._stop_fut.set_result(None)


def _answer(req: tuple, ok: bool) -> None:
    """Tell one group-commit waiter (a future or a callback) whether its record is on disk."""
    cb = req[3]
    if cb is None:
        fut = req[1]
        if not fut.done():  # a waiter that gave up (cancelled) is skipped
            fut.set_result(ok)
        return
    try:
        cb(ok)
    except Exception:  # one failing waiter must not keep the others of the round unanswered
        log.exception("group commit callback failed")


class FlushConsumeQueueService:
    """Periodic consume-queue flush; the thorough round also writes the checkpoint."""

    def __init__(self, consume_queues, config, checkpoint: StoreCheckpoint,
                 logics_timestamp: Callable[[], int]) -> None:
        self.consume_queues = consume_queues
        self.config = config
        self.checkpoint = checkpoint
        self._logics_timestamp = logics_timestamp
        self._stopped = False
        self._thorough = ThoroughFlush()

    def flush(self, least_pages: int) -> None:
        """Blocking flush (also used at shutdown with ``least_pages`` 0)."""
        ts = self._logics_timestamp()
        self.consume_queues.flush(least_pages)
        if least_pages == 0:
            if ts > 0:
                self.checkpoint.logics_msg_timestamp = ts
            self.checkpoint.flush()

    async def run(self) -> None:
        while not self._stopped:
            await asyncio.sleep(self.config.flushIntervalConsumeQueue / 1000.0)
            await self._thorough.round(self.flush, self.config.flushConsumeQueueLeastPages,
                                       self.config.flushConsumeQueueThoroughInterval, "consume queue")

    def stop(self) -> None:
        self._stopped = True

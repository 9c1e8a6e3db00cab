"""ReputMessageService: tails the CommitLog and dispatches every new record (spec §11.1).

:meth:`do_reput` is synchronous and processes everything readable now;
:meth:`run` is the asyncio task that calls it whenever :meth:`wakeup` is
signalled by an append (or every ``idle_ms`` as a safety net).
"""

from __future__ import annotations

import asyncio
import logging
import operator
import struct
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from common.mapped_file import DiskFullError
from dledger.entry import BODY_OFFSET
from store.dispatch import CommitLogDispatcher, DispatchRequest

if TYPE_CHECKING:
    from store.message_store import CommitLogBackend

__all__ = ["ReputMessageService", "ArrivingListener", "ArrivalsListener", "per_record"]

log = logging.getLogger(__name__)

# (topic, queue_id, next queue offset, tags code, store time, properties): the properties are a
# Mapping parsed only if the listener reads them
ArrivingListener = Callable[[str, int, int, int, int, Mapping], None]
# the records of one dispatched run, in CommitLog order: one call per run, not per record
ArrivalsListener = Callable[[list[DispatchRequest]], None]


def per_record(listener: ArrivingListener) -> ArrivalsListener:
    """The ArrivalsListener that calls a per-record ``listener`` for each record of a run."""

    def arrivals(run: list[DispatchRequest]) -> None:
        for req in run:
            listener(req.topic, req.queue_id, req.consume_queue_offset + 1, req.tags_code, req.store_timestamp,
                     req.properties_mapping())

    return arrivals


_SIZE = operator.attrgetter("msg_size")
_II = struct.Struct(">ii")
_NEVER = 1 << 62  # entries_from of a log without DLedger entries
_NO_PREPARED: tuple = ()
DISK_FULL_RETRY_S = 0.2


def _settle(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


class ReputMessageService:
    """Dispatch CommitLog records from ``reput_from_offset`` onwards.

    Records come with a prepared :class:`DispatchRequest` when the CommitLog's append
    left one in ``commit_log.prepared`` (a deque in offset order, see
    ``CommitLog.enable_prepared_dispatch``); every other record (recovery, a slave's
    replicated bytes, a full queue) is parsed from the log. Both give the same request.

    ``commit_log`` is the store's :class:`~store.message_store.CommitLogBackend`; its
    ``get_max_offset`` is the upper bound (a DLedger log's: the committed end).
    ``notify_arriving()`` tells whether to call the listener (master with long polling):
    ``arrivals_listener`` once per dispatched run, or ``arriving_listener`` once per record.

    ``entries_from()`` (DLedger, see store.dledger_commit_log): the offset from which each
    record is the body of a DLedger entry (a 48-byte header; a new leader's empty entries
    are stepped over); below it lie the plain records of the files written before DLedger
    was enabled, where a missing or corrupt file is stepped over. None: plain records only.
    """

    def __init__(
        self,
        commit_log: CommitLogBackend,
        dispatchers: list[CommitLogDispatcher],
        *,
        arriving_listener: ArrivingListener | None = None,
        arrivals_listener: ArrivalsListener | None = None,
        notify_arriving: Callable[[], bool] = lambda: True,
        skip_corrupt: Callable[[], bool] = lambda: True,
        on_dispatched: Callable[[DispatchRequest], None] | None = None,
        entries_from: Callable[[], int] | None = None,
        idle_ms: int = 100,
    ) -> None:
        self.commit_log = commit_log
        self.dispatchers = dispatchers  # shared: the store may plug dispatchers in after construction
        if arrivals_listener is None and arriving_listener is not None:
            arrivals_listener = per_record(arriving_listener)
        self.arrivals_listener = arrivals_listener
        self._notify_arriving = notify_arriving
        self._skip_corrupt = skip_corrupt
        self._on_dispatched = on_dispatched
        self._entries_from = entries_from
        self.reput_from_offset = 0
        self._idle = idle_ms / 1000.0
        # the run loop's wait for new records: a bare future, resolved by wakeup() or the idle timer
        self._waiter: asyncio.Future | None = None
        self._wake_asked = False
        self._stopped = False
        self.dispatched_count = 0

    def behind(self) -> int:
        return self.commit_log.get_max_offset() - self.reput_from_offset

    def is_commit_log_available(self) -> bool:
        return self.reput_from_offset < self.commit_log.get_max_offset()

    def do_reput(self) -> int:
        """Dispatch every complete record readable now; return how many.

        One pass per mapped-file view: its records go to each dispatcher in one call,
        ``on_dispatched`` gets the last record dispatched and every dispatcher's
        ``end_batch`` is called once at the end.
        """
        cl = self.commit_log
        count = 0
        dispatchers = tuple(self.dispatchers)
        dispatch_many = [d.dispatch_many for d in dispatchers]
        listener = self.arrivals_listener if self._notify_arriving() else None
        prepared = cl.prepared
        if prepared is None:
            prepared = _NO_PREPARED
        entries_from = _NEVER if self._entries_from is None else self._entries_from()
        last = None
        try:
            while self.reput_from_offset < cl.get_max_offset():
                offset = self.reput_from_offset
                min_offset = cl.get_min_offset()
                if offset < min_offset:
                    log.warning("reput offset %d below commit log min %d: jumping", offset, min_offset)
                    self.reput_from_offset = min_offset
                    continue
                mv = cl.get_data(offset)
                if mv is None:
                    if offset < entries_from < _NEVER:  # a file written before DLedger is gone: the next one
                        self.reput_from_offset = min(cl.roll_next_file(offset), entries_from)
                        continue
                    break
                run: list[DispatchRequest] = []
                with memoryview(mv) as view:
                    if offset >= entries_from:
                        self._read_entries(view, offset, run)
                    else:
                        self._read_records(view, offset, prepared, run, entries_from < _NEVER)
                mv.release()
                if run:
                    try:
                        for many in dispatch_many:
                            many(run)
                    except BaseException:
                        # e.g. no room for a queue file (DiskFullError): this view again later (units
                        # already written are not written twice), nothing skipped
                        self.reput_from_offset = offset
                        raise
                    if listener is not None:
                        listener(run)
                    last = run[-1]
                    count += len(run)
                if self.reput_from_offset == offset:
                    break  # nothing complete yet
        finally:
            if last is not None:
                if self._on_dispatched is not None:
                    self._on_dispatched(last)
                for d in dispatchers:
                    d.end_batch()
            self.dispatched_count += count
        return count

    def _read_records(self, view: memoryview, offset: int, prepared, run: list[DispatchRequest],
                      legacy: bool) -> None:
        """Collect the plain records of ``view`` (the log from ``offset``) into ``run``, advancing
        ``reput_from_offset`` past each; ``legacy``: the files below a DLedger log's entries."""
        cl = self.commit_log
        file_size = cl.file_size
        base = offset - offset % file_size
        check = cl.check_message_and_return_size
        n = len(view)
        rel = 0
        while rel < n:
            if prepared:
                # the appends left these records' requests: no need to parse them back
                while prepared and prepared[0].commit_log_offset < offset + rel:
                    prepared.popleft()  # stale (the reput jumped past it)
                taken = False
                if prepared and prepared[0].commit_log_offset == offset + rel:
                    last_req = prepared[-1]
                    end_rel = last_req.commit_log_offset + last_req.msg_size - offset
                    if end_rel <= n and end_rel - rel == sum(map(_SIZE, prepared)):
                        # all of them, back to back in this view: take them at once
                        run.extend(prepared)
                        prepared.clear()
                        rel = end_rel
                        taken = True
                while prepared:
                    head = prepared[0]
                    if head.commit_log_offset != offset + rel or rel + head.msg_size > n:
                        break
                    run.append(prepared.popleft())
                    rel += head.msg_size
                    taken = True
                if taken:
                    self.reput_from_offset = offset + rel
                    continue
            req = check(view, rel, base, False)
            size = req.msg_size
            if size > 0 and req.success:
                run.append(req)
                rel += size
                self.reput_from_offset = offset + rel
            elif req.success:  # BLANK: the rest of the file is filler
                self.reput_from_offset = cl.roll_next_file(offset + rel)
                return
            elif legacy:
                log.error("reput: corrupt legacy record at %d, going to the next file", offset + rel)
                self.reput_from_offset = cl.roll_next_file(offset + rel)
                return
            else:
                if self._incomplete(view, rel) or not self._skip_corrupt():
                    return
                log.error("reput: corrupt record at %d, skipping the rest of the buffer", offset + rel)
                self.reput_from_offset = offset + n
                return

    def _read_entries(self, view: memoryview, offset: int, run: list[DispatchRequest]) -> None:
        """Collect the records of the DLedger entries of ``view`` into ``run`` (see the class doc)."""
        cl = self.commit_log
        check = cl.check_message_and_return_size
        n = len(view)
        rel = 0
        while rel + 8 <= n:
            magic, step = _II.unpack_from(view, rel)
            if magic == -1:  # DLedger end-of-file blank
                self.reput_from_offset = cl.roll_next_file(offset + rel)
                return
            if step < BODY_OFFSET or rel + step > n:
                return
            if step > BODY_OFFSET:  # else an empty entry (a new leader's no-op)
                # the record's own size must fill the entry exactly (checked below), so parsing in
                # the whole view never takes bytes of the next entry
                req = check(view, rel + BODY_OFFSET, offset, False)
                if req.success and req.msg_size == step - BODY_OFFSET:
                    run.append(req)
                else:
                    log.error("reput: entry at %d does not hold one CommitLog record; skipped", offset + rel)
            rel += step
            self.reput_from_offset = offset + rel

    @staticmethod
    def _incomplete(view: memoryview, rel: int) -> bool:
        """A record whose header is there but whose bytes are still arriving (replication)."""
        if rel + 8 > len(view):
            return True
        total = int.from_bytes(view[rel : rel + 4], "big", signed=True)
        return total > len(view) - rel

    def wakeup(self) -> None:
        w = self._waiter
        if w is not None and not self._wake_asked:
            # settled a loop turn later: the puts of the reads still queued in this turn join the run
            self._wake_asked = True
            w.get_loop().call_soon(_settle, w)

    async def run(self) -> None:
        """Task body: dispatch, then wait for a wakeup (or ``idle``: a look without one)."""
        loop = asyncio.get_running_loop()
        self._stopped = False
        paused = False
        while not self._stopped:
            try:
                self.do_reput()
            except DiskFullError as e:
                # a queue or index file found no room: nothing is skipped, the same records are
                # dispatched again once space returns (units already written are not written twice)
                if not paused:
                    log.error("dispatch paused at %d: %s; retrying until space returns", self.reput_from_offset, e)
                paused = True
                await asyncio.sleep(DISK_FULL_RETRY_S)
                continue
            except Exception:  # keep dispatching; a bug must not stop the store silently
                log.exception("reput failed at %d", self.reput_from_offset)
            if paused:
                log.info("dispatch resumed at %d", self.reput_from_offset)
                paused = False
            if self.is_commit_log_available():
                await asyncio.sleep(0)
                continue
            # A future and a timer rather than wait_for(Event.wait()): that made a task, an event
            # waiter and a timeout per wait, i.e. per loop turn with puts (~3 % of the broker's CPU).
            # No wakeup is lost: nothing between do_reput and here yields to the loop.
            fut = self._waiter = loop.create_future()
            self._wake_asked = False
            timer = loop.call_later(self._idle, _settle, fut)
            try:
                await fut
            finally:
                timer.cancel()
                self._waiter = None

    def stop(self) -> None:
        self._stopped = True
        self.wakeup()

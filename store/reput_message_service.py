"""ReputMessageService: tails the CommitLog and dispatches every new record (spec §11.1).

:meth:`do_reput` is synchronous and processes everything readable now;
:meth:`run` is the asyncio task that calls it whenever :meth:`wakeup` is
signalled by an append (or every ``idle_ms`` as a safety net).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import operator
from collections.abc import Callable, Mapping

from common.mapped_file import DiskFullError
from store.dispatch import CommitLogDispatcher, DispatchRequest

__all__ = ["ReputMessageService", "ArrivingListener"]

log = logging.getLogger(__name__)

# (topic, queue_id, next queue offset, tags code, store time, properties): the properties are a
# Mapping parsed only if the listener reads them
ArrivingListener = Callable[[str, int, int, int, int, Mapping], None]


_SIZE = operator.attrgetter("msg_size")
DISK_FULL_RETRY_S = 0.2


def _dispatch_each(dispatcher: CommitLogDispatcher, requests: list[DispatchRequest]) -> None:
    for r in requests:
        dispatcher.dispatch(r)


class ReputMessageService:
    """Dispatch CommitLog records from ``reput_from_offset`` onwards.

    Records come with a prepared :class:`DispatchRequest` when the CommitLog's append
    left one in ``commit_log.prepared`` (a deque in offset order, see
    ``CommitLog.enable_prepared_dispatch``); every other record (recovery, a slave's
    replicated bytes, a full queue) is parsed from the log. Both give the same request.

    ``commit_log`` needs ``get_max_offset``, ``get_data``, ``roll_next_file``,
    ``file_size`` and ``check_message_and_return_size``. ``notify_arriving()``
    tells whether to call the listener (master with long polling).
    """

    def __init__(
        self,
        commit_log,
        dispatchers: list[CommitLogDispatcher],
        *,
        arriving_listener: ArrivingListener | None = None,
        notify_arriving: Callable[[], bool] = lambda: True,
        skip_corrupt: Callable[[], bool] = lambda: True,
        on_dispatched: Callable[[DispatchRequest], None] | None = None,
        idle_ms: int = 100,
    ) -> None:
        self.commit_log = commit_log
        self.dispatchers = dispatchers  # shared: the store may plug dispatchers in after construction
        self.arriving_listener = arriving_listener
        self._notify_arriving = notify_arriving
        self._skip_corrupt = skip_corrupt
        self._on_dispatched = on_dispatched
        self.reput_from_offset = 0
        self._idle = idle_ms / 1000.0
        self._event: asyncio.Event | None = None
        self._stopped = False
        self.dispatched_count = 0

    def behind(self) -> int:
        return self.commit_log.get_max_offset() - self.reput_from_offset

    def is_commit_log_available(self) -> bool:
        return self.reput_from_offset < self.commit_log.get_max_offset()

    def do_reput(self) -> int:
        """Dispatch every complete record readable now; return how many.

        One pass per mapped-file view; ``on_dispatched`` gets the last record of
        each pass and dispatchers with ``end_batch`` are told when a pass ends.
        """
        cl = self.commit_log
        count = 0
        dispatchers = tuple(self.dispatchers)
        dispatch_many = [getattr(d, "dispatch_many", None) or functools.partial(_dispatch_each, d)
                         for d in dispatchers]
        listener = self.arriving_listener if self._notify_arriving() else None
        file_size = cl.file_size
        check = cl.check_message_and_return_size
        prepared = getattr(cl, "prepared", None)
        if prepared is None:
            prepared = ()
        last = None
        try:
            while self.reput_from_offset < cl.get_max_offset():
                offset = self.reput_from_offset
                if offset < cl.get_min_offset():
                    log.warning("reput offset %d below commit log min %d: jumping", offset, cl.get_min_offset())
                    self.reput_from_offset = cl.get_min_offset()
                    continue
                mv = cl.get_data(offset)
                if mv is None:
                    break
                base = offset - offset % file_size
                start = offset % file_size
                n = len(mv)  # the view starts at ``start``; ``rel`` indexes it
                progressed = True
                with memoryview(mv) as view:
                    rel = 0
                    while rel < n:
                        if prepared:
                            # the appends left these records' requests: no need to parse them back
                            while prepared and prepared[0].commit_log_offset < offset + rel:
                                prepared.popleft()  # stale (the reput jumped past it)
                            run = []
                            if prepared and prepared[0].commit_log_offset == offset + rel:
                                last_req = prepared[-1]
                                end_rel = last_req.commit_log_offset + last_req.msg_size - offset
                                if end_rel <= n and end_rel - rel == sum(map(_SIZE, prepared)):
                                    # all of them, back to back in this view: take them at once
                                    run = list(prepared)
                                    prepared.clear()
                                    rel = end_rel
                            while prepared:
                                head = prepared[0]
                                if head.commit_log_offset != offset + rel or rel + head.msg_size > n:
                                    break
                                run.append(prepared.popleft())
                                rel += head.msg_size
                            if run:
                                for many in dispatch_many:
                                    many(run)
                                if listener is not None:
                                    for req in run:
                                        listener(req.topic, req.queue_id, req.consume_queue_offset + 1, req.tags_code,
                                                 req.store_timestamp, req.properties_mapping())
                                last = run[-1]
                                count += len(run)
                                self.reput_from_offset = offset + rel
                                continue
                        req = check(view, rel, base, False)
                        size = req.msg_size
                        if size > 0 and req.success:
                            for d in dispatchers:
                                d.dispatch(req)
                            if listener is not None:
                                listener(req.topic, req.queue_id, req.consume_queue_offset + 1, req.tags_code,
                                         req.store_timestamp, req.properties_mapping())
                            last = req
                            rel += size
                            count += 1
                            self.reput_from_offset = offset + rel
                        elif req.success:
                            self.reput_from_offset = cl.roll_next_file(base + start + rel)
                            break
                        else:
                            if self._incomplete(view, rel) or not self._skip_corrupt():
                                progressed = rel > 0
                                break
                            log.error("reput: corrupt record at %d, skipping the rest of the buffer", offset + rel)
                            self.reput_from_offset = offset + n
                            break
                mv.release()
                if not progressed:
                    break
        finally:
            if last is not None:
                if self._on_dispatched is not None:
                    self._on_dispatched(last)
                for d in dispatchers:
                    end = getattr(d, "end_batch", None)
                    if end is not None:
                        end()
            self.dispatched_count += count
        return count

    @staticmethod
    def _incomplete(view: memoryview, rel: int) -> bool:
        """A record whose header is there but whose bytes are still arriving (replication)."""
        if rel + 8 > len(view):
            return True
        total = int.from_bytes(view[rel : rel + 4], "big", signed=True)
        return total > len(view) - rel

    def wakeup(self) -> None:
        if self._event is not None:
            self._event.set()

    async def run(self) -> None:
        """Task body: dispatch, then wait for a wakeup."""
        self._event = asyncio.Event()
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
            self._event.clear()
            if self.is_commit_log_available():
                await asyncio.sleep(0)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._event.wait(), self._idle)

    def stop(self) -> None:
        self._stopped = True
        self.wakeup()

"""PullRequestHoldService: long polling of PULL_MESSAGE.

A pull that finds nothing (PULL_NOT_FOUND) with the suspend bit is parked under
``(topic, queueId)`` instead of answered. It is re-executed (without suspend)
and answered with its original opaque when:

* a message lands in that queue and matches the request's filter (the store's
  arriving listener calls :meth:`notify_message_arriving`);
* its hold time expires (a timer per request, so the answer comes at the
  suspend time, not up to 5 s later);
* the periodic re-check (every 5 s, or ``shortPollingTimeMills`` without long
  polling) sees the queue's max offset past the request's offset.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from remoting.connection import Connection
from store.message_store import MessageStore

if TYPE_CHECKING:  # the recorders' types only
    from broker.metrics.request_path_metrics import LateAnswerTimer

__all__ = ["PullRequest", "PullRequestHoldService"]

log = logging.getLogger(__name__)


class PullRequest:
    """A parked pull: the request, its connection, where it reads from, its filter and deadline."""

    __slots__ = ("request", "conn", "pull_from_offset", "message_filter", "deadline", "timer", "done", "received_at")

    def __init__(self, request: Any, conn: Connection, pull_from_offset: int, message_filter: Any, timeout_ms: int):
        self.request = request
        self.conn = conn
        self.pull_from_offset = pull_from_offset
        self.message_filter = message_filter
        self.deadline = time.monotonic() + timeout_ms / 1000.0
        self.timer: asyncio.TimerHandle | None = None
        self.done = False
        #: when the pull arrived (``Connection.received_at``; 0.0 for a connection that does not stamp)
        self.received_at: float = conn.received_at if isinstance(conn, Connection) else 0.0


class PullRequestHoldService:
    """Holds suspended pulls; ``execute(request, conn)`` re-runs a pull and returns its response."""

    def __init__(
        self,
        store: MessageStore,
        execute: Callable[[Any, Any], Any],
        *,
        long_polling_enable: bool = True,
        short_polling_ms: int = 1000,
        rpc_latency: LateAnswerTimer | None = None,
    ):
        self.store = store
        self.execute = execute
        self.long_polling_enable = long_polling_enable
        self.short_polling_ms = short_polling_ms
        self.table: dict[tuple[str, int], list[PullRequest]] = {}
        #: remoting.rpc_latency RpcLatencyHook when metrics are on: a held pull's answer is late, timed here
        self.rpc_latency = rpc_latency
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._task = self._loop.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
            self._task = None
        for reqs in self.table.values():
            for pr in reqs:
                if pr.timer is not None:
                    pr.timer.cancel()
        self.table.clear()

    def parked_count(self) -> int:
        return sum(len(v) for v in self.table.values())

    # -- parking -------------------------------------------------------------------

    def suspend_pull_request(self, topic: str, queue_id: int, pr: PullRequest) -> None:
        key = (topic, queue_id)
        lst = self.table.get(key)
        if lst is None:
            lst = self.table[key] = []
        lst.append(pr)
        loop = self._loop or asyncio.get_running_loop()
        delay = max(0.0, pr.deadline - time.monotonic())
        pr.timer = loop.call_later(delay, self._on_timeout, key, pr)

    def _on_timeout(self, key: tuple[str, int], pr: PullRequest) -> None:
        pr.timer = None
        self._wake(key, pr)

    def _remove(self, key: tuple[str, int], pr: PullRequest) -> None:
        lst = self.table.get(key)
        if lst is None:
            return
        try:
            lst.remove(pr)
        except ValueError:
            return
        if not lst:
            del self.table[key]

    def _wake(self, key: tuple[str, int], pr: PullRequest) -> None:
        if pr.done:
            return
        pr.done = True
        if pr.timer is not None:
            pr.timer.cancel()
            pr.timer = None
        self._remove(key, pr)
        if pr.conn.closed:
            return
        try:
            resp = self.execute(pr.request, pr.conn)
        except Exception as e:  # noqa: BLE001 - answer the client rather than leaving it hanging
            log.exception("re-executing a suspended pull failed")
            resp = pr.request.response_to(1, f"{type(e).__name__}: {e}")
        if resp is None:
            return  # parked again (only when re-execution may suspend, which it may not) or oneway
        if asyncio.iscoroutine(resp) or isinstance(resp, asyncio.Future):
            fut = asyncio.ensure_future(resp)
            fut.add_done_callback(lambda f: (not f.cancelled() and f.exception() is None and f.result() is not None)
                                  and self._answer(pr, f.result()))
            return
        if not pr.request.is_oneway:
            self._answer(pr, resp)

    def _answer(self, pr: PullRequest, resp: Any) -> None:
        pr.conn.send_response(resp)
        if self.rpc_latency is not None and pr.received_at:
            self.rpc_latency.observe(pr.request.code, resp.code, pr.received_at, long_polling=True)

    # -- wake-ups --------------------------------------------------------------------

    def notify_message_arriving(
        self,
        topic: str,
        queue_id: int,
        max_offset: int,
        tags_code: int | None = None,
        store_timestamp: int = 0,
        properties: dict | None = None,
    ) -> None:
        """A message was dispatched to (topic, queue_id); ``max_offset`` is the queue's next offset."""
        if not self.table:
            return
        if self._loop_thread is not None and threading.get_ident() != self._loop_thread:
            self._loop.call_soon_threadsafe(
                self.notify_message_arriving, topic, queue_id, max_offset, tags_code, store_timestamp, properties
            )
            return
        key = (topic, queue_id)
        lst = self.table.get(key)
        if not lst:
            return
        now = time.monotonic()
        for pr in list(lst):
            if max_offset > pr.pull_from_offset:
                f = pr.message_filter
                match = True
                if f is not None and tags_code is not None:
                    match = f.is_matched_by_consume_queue(tags_code, None)
                    if match and properties is not None:
                        match = f.is_matched_by_commit_log(None, properties)
                if match:
                    self._wake(key, pr)
                    continue
            if now >= pr.deadline:
                self._wake(key, pr)

    def check_hold_request(self) -> None:
        """Periodic re-check of every parked queue against its current max offset."""
        for key in list(self.table):
            try:
                max_offset = self.store.get_max_offset_in_queue(key[0], key[1])
            except Exception:  # noqa: BLE001
                log.exception("max offset of %s failed", key)
                continue
            self.notify_message_arriving(key[0], key[1], max_offset)

    async def _run(self) -> None:
        period = 5.0 if self.long_polling_enable else self.short_polling_ms / 1000.0
        while True:
            await asyncio.sleep(period)
            try:
                self.check_hold_request()
            except Exception:  # noqa: BLE001
                log.exception("pull hold check failed")

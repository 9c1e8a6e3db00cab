"""One store append for the single sends of one socket read.

The send processor checks and builds each message at once, then queues it here;
the first queued send asks the connection to run a flush at the end of the read
(``Connection.defer``), which appends the whole queue with one store call
(``put_message_list``) and answers each send with the read's other responses.
When the put must wait for durability (SYNC_FLUSH, SYNC_MASTER) the read's sends
are answered from the group commit's round (``put_message_list_then``) or, where
replicas are waited for too, by one task awaiting ``put_message_list_async``: one
wait for the whole read instead of a task, a future and a timer per message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from common.message import MessageExtBrokerInner
from remoting.codes import RPC_ONEWAY, RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection

if TYPE_CHECKING:  # the recorders' types only
    from broker.metrics.request_path_metrics import LateAnswerTimer

__all__ = ["SendPutBatcher"]

log = logging.getLogger(__name__)

_SUCCESS = int(ResponseCode.SUCCESS)
_SYSTEM_ERROR = int(ResponseCode.SYSTEM_ERROR)
_SEND_V2 = int(RequestCode.SEND_MESSAGE_V2)

# (connection, request, message, topic, body size, queue id answered)
Pending = tuple[Any, RemotingCommand, MessageExtBrokerInner, str, int, int]


class SendPutBatcher:
    """Queues a read's single sends and appends them together when the read has been handled.

    ``respond(req, result, topic, qid, size, msg)`` builds a send's answer from its put result (and
    counts the put);
    ``settled(n)`` is told when ``n`` waiting puts are over (the processor counts them for its
    back-pressure). ``rpc_latency`` (a remoting.rpc_latency RpcLatencyHook) times the answers,
    which leave after the read's dispatch, when metrics are on.
    """

    def __init__(
        self,
        put_list: Callable[[list], Any] | None,
        put_list_async: Callable[[list], Any] | None,
        respond: Callable[..., RemotingCommand],
        settled: Callable[[int], None],
        rpc_latency: LateAnswerTimer | None = None,
        put_list_then: Callable[[list, Callable[[list], None]], bool] | None = None,
        *,
        answer_ok: Callable[..., bool] | None = None,
    ):
        self._put_list = put_list
        self._put_list_async = put_list_async
        self._put_list_then = put_list_then
        self._inflight = 0  # reads answered by put_list_then's callback, not yet answered
        self._drained: asyncio.Future | None = None  # done when _inflight comes back to 0
        self._respond = respond
        # answer_ok(conn, req, result, topic, qid, size, msg): writes the usual SUCCESS itself and says
        # True, else False with nothing done (respond builds the answer)
        self._answer_ok = answer_ok
        self._settled = settled
        self.pending: list[Pending] = []
        self.rpc_latency = rpc_latency
        # SEND_MESSAGE_V2 answered SUCCESS, the usual answer: its histogram found once (at the first
        # such answer, so the series appears with traffic, as every other code's), not per read
        self._time_ok: Callable[[float, int], None] | None = None

    def queue(self, conn: Connection, req: RemotingCommand, msg: MessageExtBrokerInner, topic: str, size: int,
              qid: int, flush: Any) -> None:
        pending = self.pending
        if not pending:
            conn.defer(flush)  # one flush for whatever is queued until it runs
        pending.append((conn, req, msg, topic, size, qid))

    def answer(self, pending: list, results: Any, error: BaseException | None, received_at: float) -> None:
        """Answer the sends of one read; ``received_at``: that read's ``Connection.received_at``."""
        if error is None and (results is None or len(results) != len(pending)):
            error = RuntimeError(f"store returned {0 if results is None else len(results)} results "
                                 f"for {len(pending)} messages")
        lat = self.rpc_latency
        if error is not None:
            log.warning("put of %d messages failed: %r", len(pending), error)
            text = str(error) or type(error).__name__
            for conn, req, _msg, _topic, _size, _qid in pending:
                if not req.flag & RPC_ONEWAY:
                    conn.send_response(req.response_to(ResponseCode.SYSTEM_ERROR, text))
                    if lat is not None:
                        lat.observe(req.code, _SYSTEM_ERROR, received_at)
            return
        response = self._respond
        answer_ok = self._answer_ok
        ok = 0  # SEND_MESSAGE_V2 answered SUCCESS: timed together below (one histogram update a read)
        for (conn, req, msg, topic, size, qid), result in zip(pending, results, strict=True):
            if answer_ok is not None and answer_ok(conn, req, result, topic, qid, size, msg):
                if req.code == _SEND_V2:
                    ok += 1
                elif lat is not None:
                    lat.observe(req.code, _SUCCESS, received_at)
                continue
            resp = response(req, result, topic, qid, size, msg)
            if not req.flag & RPC_ONEWAY:
                conn.send_response(resp)
                if resp.code or req.code != _SEND_V2:
                    if lat is not None:
                        lat.observe(req.code, resp.code, received_at)
                else:
                    ok += 1
        if ok and lat is not None:
            time_ok = self._time_ok
            if time_ok is None:
                time_ok = self._time_ok = lat.timer(_SEND_V2, _SUCCESS)
            time_ok(received_at, ok)

    def append_pending(self) -> None:
        """Append the queued sends with one store call and answer each (end of a read)."""
        pending, self.pending = self.pending, []
        if not pending:
            return
        received_at = pending[0][0].received_at  # the read they came in (all of them: one read's work)
        try:
            results = self._put_list([p[2] for p in pending])
        except Exception as e:  # noqa: BLE001 - every queued sender gets SYSTEM_ERROR
            self.answer(pending, None, e, received_at)
        else:
            self.answer(pending, results, None, received_at)

    def append_pending_async(self) -> None:
        """Append the queued sends and have them answered once durable (end of a read).

        Where the store can (``put_list_then``: only the group commit to wait for), the answers
        come from the group commit's round itself: no task per read, and each connection's
        answers of one round leave in one write (``send_response`` buffers them until the loop's
        next turn). Otherwise one task awaits ``put_list_async`` for the whole read."""
        pending, self.pending = self.pending, []
        if not pending:
            return
        conn = pending[0][0]
        msgs = [p[2] for p in pending]
        then = self._put_list_then
        if then is not None:
            received_at = conn.received_at
            self._inflight += 1  # before the call: the callback may come at once
            try:
                queued = then(msgs, lambda results: self._durable(pending, results, received_at))
            except Exception as e:  # noqa: BLE001 - every queued sender gets SYSTEM_ERROR
                self._settle(pending, None, e, received_at)
                return
            if queued:
                if self._inflight and self._drained is None:
                    # the server's stop waits for this (as for a task) before closing connections
                    self._drained = asyncio.get_running_loop().create_future()
                    conn.spawn(self._drained)
                return
            self._inflight -= 1
        conn.spawn(self._put_pending(pending, msgs, conn.received_at))

    def _durable(self, pending: list, results: list, received_at: float) -> None:
        """``put_list_then``'s callback: the sends of one read are durable (or timed out)."""
        self._settle(pending, results, None, received_at)

    def _settle(self, pending: list, results: Any, error: BaseException | None, received_at: float) -> None:
        try:
            self.answer(pending, results, error, received_at)
        finally:
            self._settled(len(pending))
            self._left()

    def _left(self) -> None:
        """One read fewer waiting in the store; the last one lets a stopping server go on."""
        self._inflight -= 1
        if self._inflight == 0 and self._drained is not None:
            if not self._drained.done():
                self._drained.set_result(None)
            self._drained = None

    async def _put_pending(self, pending: list, msgs: list, received_at: float) -> None:
        try:
            results = await self._put_list_async(msgs)
        except Exception as e:  # noqa: BLE001 - every queued sender gets SYSTEM_ERROR
            self.answer(pending, None, e, received_at)
        else:
            self.answer(pending, results, None, received_at)
        finally:
            self._settled(len(pending))
        # the answers leave now, not one loop iteration later (one connection per read, as a rule)
        first = pending[0][0]
        first.flush()
        if pending[-1][0] is not first:
            for conn in {p[0] for p in pending} - {first}:
                conn.flush()

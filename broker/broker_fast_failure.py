"""BrokerFastFailure: answer SYSTEM_BUSY at once to requests that waited too long for their turn.

RocketMQ 4.9.7 polls its thread-pool queues every 10 ms and answers the requests that waited
longer than ``waitTimeMillsInSendQueue`` (sends), ``waitTimeMillsInPullQueue`` (pulls),
``waitTimeMillsInHeartbeatQueue`` and ``waitTimeMillsInTransactionQueue`` with SYSTEM_BUSY
``[TIMEOUT_CLEAN_QUEUE]``, and drains the send queue with ``[PCBUSY_CLEAN_QUEUE]`` while the page
cache is busy. This broker has no thread-pool queues: requests are served on the event loop as
they are read, and what cannot be served in a connection's fair turn waits in that connection's
backlog (remoting.fair_dispatch). That backlog is the queue: a request's wait is the time from
its read to its turn, and this policy decides, per backlogged request, whether it is still worth
serving. The limits are read at each decision, so UPDATE_BROKER_CONFIG changes apply at once.

:meth:`BrokerFastFailure.accepting` is the dispatcher's gate: while more puts wait for the disk
(or the replicas) than :data:`MAX_WAITING_PUTS` (at most a sixteenth of
``sendThreadPoolQueueCapacity``), backlogged requests wait too, so a flood cannot stack up flush
rounds in front of a peer sending one message at a time (whose request has no backlog and is
served at once); the backlog then ages and is shed as above.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Protocol

from broker.config import BrokerConfig
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.fair_dispatch import FairDispatcher

__all__ = ["BrokerFastFailure", "backlog_runtime_info"]

_SEND, _PULL, _HEARTBEAT, _TRANSACTION = 1, 2, 3, 4

# The request codes of RocketMQ's send / pull / heartbeat / end-transaction pools.
_QUEUE_OF: dict[int, int] = {
    int(RequestCode.SEND_MESSAGE): _SEND,
    int(RequestCode.SEND_MESSAGE_V2): _SEND,
    int(RequestCode.SEND_BATCH_MESSAGE): _SEND,
    int(RequestCode.CONSUMER_SEND_MSG_BACK): _SEND,
    int(RequestCode.PULL_MESSAGE): _PULL,
    int(RequestCode.HEART_BEAT): _HEARTBEAT,
    int(RequestCode.END_TRANSACTION): _TRANSACTION,
}

_BUSY = int(ResponseCode.SYSTEM_BUSY)

#: Puts waiting for durability above which backlogs wait: a flush round then carries at most about
#: this many messages in front of a one-at-a-time sender (A/B under a flood: 156 vs 625 waiting
#: halved the canary's latency and cost the flood a third of its throughput).
MAX_WAITING_PUTS = 256


class PutBacklog(Protocol):
    """What the send path reports: puts appended and waiting for durability (flush / replicas)."""

    waiting_puts: int


class BrokerFastFailure:
    """``policy(request, waited_ms, queued)`` -> a SYSTEM_BUSY answer, or None to serve the request."""

    def __init__(self, config: BrokerConfig, puts: PutBacklog | None = None,
                 os_page_cache_busy: Callable[[], bool] | None = None):
        self.config = config
        self._puts = puts
        self._page_cache_busy = os_page_cache_busy

    def accepting(self) -> bool:
        """Whether backlogged requests may be served now (False: too many puts wait for the disk)."""
        puts = self._puts
        return puts is None or puts.waiting_puts < max(1, min(MAX_WAITING_PUTS,
                                                              self.config.sendThreadPoolQueueCapacity // 16))

    def _limit_ms(self, queue: int) -> int:
        c = self.config
        if queue == _SEND:
            return c.waitTimeMillsInSendQueue
        if queue == _PULL:
            return c.waitTimeMillsInPullQueue
        if queue == _HEARTBEAT:
            return c.waitTimeMillsInHeartbeatQueue
        return c.waitTimeMillsInTransactionQueue

    def __call__(self, req: RemotingCommand, waited_ms: float, queued: int) -> RemotingCommand | None:
        queue = _QUEUE_OF.get(req.code)
        if queue is None or not self.config.brokerFastFailureEnable:
            return None
        if queue == _SEND and self._page_cache_busy is not None and self._page_cache_busy():
            return req.response_to(_BUSY, (
                "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, "
                f"period in queue: {int(waited_ms)}ms, size of queue: {queued}"))
        if waited_ms < self._limit_ms(queue):
            return None
        return req.response_to(_BUSY, (
            "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
            f"period in queue: {int(waited_ms)}ms, size of queue: {queued}"))


def backlog_runtime_info(fairs: Sequence[FairDispatcher]) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO keys of the request backlogs: 4.9.7's send-queue keys (what
    dashboards watch for overload) report the backlog of every request, plus how many were shed."""
    now = time.monotonic()  # the loop's clock (asyncio uses time.monotonic)
    return {
        "sendThreadPoolQueueSize": str(sum(f.queued for f in fairs)),
        "sendThreadPoolQueueHeadWaitTimeMills": str(int(max((f.head_wait_ms(now) for f in fairs), default=0))),
        "requestsShedByFastFailure": str(sum(f.shed for f in fairs)),
    }

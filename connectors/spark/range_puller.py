"""RangePuller: one task's pulls of one queue range ``[start, end)``, in order, stopping exactly at ``end``.

No consumer state on the broker: every PULL_MESSAGE carries its subscription
(the SUBSCRIPTION sysFlag, as Java's pull consumer), no heartbeat, no
rebalance, no offset commit. Queue offsets are contiguous, so the next
``depth`` windows of ``batch`` offsets are requested at once and answered in
order; a short answer (byte limits) is followed by a pull of the gap before
anything later is used. The pulls run on a private event loop, entered once
per ``group_answers`` answers or 4 MiB of them (entering and leaving a uvloop
costs more than decoding an answer of 32 messages), so memory stays bounded by
``depth`` answers in flight plus one group.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Iterator

from client.mq_client_api import MQClientAPI
from client.pull_api_wrapper import PullSysFlag, decompress_body
from common.filter import ExpressionType, build_subscription_data
from common.message import MessageConst, MessageExt, decode_messages
from connectors.spark.errors import ConnectorError
from remoting import RemotingClient, RemotingError, ResponseCode, new_event_loop
from remoting.header.broker import PullMessageRequestHeader, PullMessageResponseHeader

__all__ = ["RangePuller"]

log = logging.getLogger("connectors.spark")

_FOUND = ResponseCode.SUCCESS
_GROUP_BYTES = 4 * 1024 * 1024  # a group of answers ends here too (answers of big messages)
_EMPTY = (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY)


class RangePuller:
    """Pulls ``[start, end)`` of one queue; iterate :meth:`messages` once."""

    def __init__(self, name_server: str, addr: str, topic: str, broker: str, queue_id: int, start: int, end: int,
                 *, group: str, sub_expression: str = "*", batch: int = 32, depth: int = 4,
                 fail_on_data_loss: bool = True, timeout: float = 5.0, group_answers: int = 64):
        self.name_server = name_server
        self.addr = addr
        self.topic, self.broker, self.queue_id = topic, broker, queue_id
        self.start, self.end = start, end
        self.group = group
        self.batch = batch
        self.depth = depth
        self.group_answers = group_answers
        self.fail_on_data_loss = fail_on_data_loss
        self.timeout = timeout
        sub = build_subscription_data(topic, sub_expression, ExpressionType.TAG)
        self._sub = sub
        self._tags = set(sub.tagsSet) if sub.tagsSet else None
        self._flag = PullSysFlag.build(False, False, True)
        self.skipped = 0  # offsets lost to retention (failOnDataLoss=false)

    def _name(self) -> str:
        return f"{self.topic}/{self.broker}/{self.queue_id}"

    @property
    def tags(self) -> set[str] | None:
        """The tags the subscription keeps (None: every message)."""
        return self._tags

    def messages(self) -> Iterator[MessageExt]:
        """The range's messages in queue order (tag-filtered, bodies inflated)."""
        for body, lo, hi in self.answers():
            for m in decode_messages(body):
                q = m.queue_offset
                if q < lo:
                    continue
                if q >= hi:
                    break
                if self._tags is not None and m.properties.get(MessageConst.TAGS) not in self._tags:
                    continue
                decompress_body(m)
                yield m

    def answers(self) -> Iterator[tuple[bytes, int, int]]:
        """The FOUND answers' bodies in queue order, each with the queue offsets ``[lo, hi)`` of it to use.

        A body's records are in queue order; those below ``lo`` were used already (an answer that
        overlaps a gap pull), those from ``hi`` on lie past the range. Tags are not filtered here.
        """
        if self.start >= self.end:
            return
        loop = new_event_loop()
        remoting = RemotingClient(connect_timeout=self.timeout, name="spark-pull")
        api = MQClientAPI(remoting, [self.name_server], self.timeout)
        answers = self._run(api)
        try:
            done = False
            while not done:
                # one loop run per group of answers (see the module docstring)
                group, done = loop.run_until_complete(self._group(answers))
                yield from group
        finally:
            loop.run_until_complete(answers.aclose())
            loop.run_until_complete(remoting.close())
            loop.close()

    async def _group(self, answers: AsyncIterator[tuple[bytes, int, int]]) -> tuple[list, bool]:
        out = []
        size = 0
        async for a in answers:
            out.append(a)
            size += len(a[0])
            if len(out) >= self.group_answers or size >= _GROUP_BYTES:
                return out, False
        return out, True

    def _request(self, api: MQClientAPI, offset: int, n: int):
        h = PullMessageRequestHeader(
            consumerGroup=self.group, topic=self.topic, queueId=self.queue_id, queueOffset=offset, maxMsgNums=n,
            sysFlag=self._flag, commitOffset=0, suspendTimeoutMillis=0, subscription=self._sub.subString,
            subVersion=self._sub.subVersion, expressionType=self._sub.expressionType, bname=self.broker,
        )
        return api.pull_message(self.addr, h, self.timeout)

    async def _run(self, api: MQClientAPI) -> AsyncIterator[tuple[bytes, int, int]]:
        end = self.end
        nxt = self.start  # next offset owed to the caller
        issued = self.start  # first offset not yet requested
        pending: deque[tuple[int, int, asyncio.Task]] = deque()
        try:
            while nxt < end:
                while len(pending) < self.depth and issued < end:
                    n = min(self.batch, end - issued)
                    pending.append((issued, n, asyncio.create_task(self._request(api, issued, n))))
                    issued += n
                off, n, task = pending.popleft()
                if off + n <= nxt:  # covered already by a filtered answer that ran ahead
                    task.cancel()
                    continue
                try:
                    resp = await task
                except RemotingError as e:
                    raise ConnectorError(f"pulling {self._name()} at offset {off} from {self.addr} failed: {e}") from e
                code = resp.code
                if code not in (_FOUND, *_EMPTY, ResponseCode.PULL_OFFSET_MOVED):
                    raise ConnectorError(f"pulling {self._name()} at offset {off}: CODE: {code} DESC: {resp.remark}",
                                         code)
                rh = resp.decode_header(PullMessageResponseHeader)
                nb = rh.nextBeginOffset
                if code == ResponseCode.PULL_OFFSET_MOVED or (code == ResponseCode.PULL_NOT_FOUND and nb > off):
                    if nb <= off:
                        raise ConnectorError(f"queue {self._name()}: offset {off} is beyond the queue's end "
                                             f"{rh.maxOffset} (planned end {end})")
                    self._lost(off, rh.minOffset, nb)
                    nxt = max(nxt, min(nb, end))
                    continue
                if code == ResponseCode.PULL_NOT_FOUND:
                    # planned from a max offset the queue no longer reaches (truncated): nothing more to read
                    log.warning("queue %s: no message at %d (max %d); range ends early", self._name(), off,
                                rh.maxOffset)
                    return
                if code == _FOUND and resp.body:
                    yield resp.body, nxt, end
                covered = min(max(nb, off), end)
                if covered == off:
                    raise ConnectorError(f"queue {self._name()}: the broker made no progress at offset {off} "
                                         f"(code {code}, next begin {nb})")
                if covered < off + n and covered >= nxt:
                    # a short answer: pull the gap before anything later
                    gap = off + n - covered
                    pending.appendleft((covered, gap, asyncio.create_task(self._request(api, covered, gap))))
                nxt = max(nxt, covered)
        finally:
            for _, _, t in pending:
                t.cancel()
            if pending:
                await asyncio.gather(*(t for _, _, t in pending), return_exceptions=True)

    def _lost(self, planned: int, min_offset: int, next_begin: int) -> None:
        msg = (f"queue {self._name()}: messages from offset {planned} are gone (the broker's min offset is now "
               f"{min_offset}); the planned start {planned} was removed by retention")
        if self.fail_on_data_loss:
            raise ConnectorError(msg + ". Set failOnDataLoss=false to skip to the min offset instead.")
        self.skipped += max(0, next_begin - planned)
        log.warning("%s; skipping to %d (failOnDataLoss=false)", msg, next_begin)

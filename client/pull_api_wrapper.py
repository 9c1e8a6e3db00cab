"""PullAPIWrapper: one PULL_MESSAGE round trip and the client-side processing of its answer.

Found records are decoded, re-filtered by tag string (the broker only
compares hash codes), decompressed, given MIN_OFFSET/MAX_OFFSET and, for
retry topics, their original topic back (RETRY_TOPIC).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from client.exceptions import MQBrokerError, MQClientError
from common.filter import ExpressionType
from common.message import MessageConst, MessageExt, MessageSysFlag, decode_messages
from common.mixall import RETRY_GROUP_TOPIC_PREFIX
from common.pull_status import PullStatus
from remoting import ResponseCode
from remoting.body.consumer import MessageQueue
from remoting.body.heartbeat import SubscriptionData
from remoting.header.broker import PullMessageRequestHeader, PullMessageResponseHeader

__all__ = ["PullResult", "PullSysFlag", "PullAPIWrapper", "decompress_body", "restore_retry_topic"]


class PullSysFlag:
    COMMIT_OFFSET = 0x1
    SUSPEND = 0x2
    SUBSCRIPTION = 0x4
    CLASS_FILTER = 0x8
    LITE_PULL = 0x10

    @staticmethod
    def build(commit_offset: bool, suspend: bool, subscription: bool, class_filter: bool = False,
              lite_pull: bool = False) -> int:
        return ((PullSysFlag.COMMIT_OFFSET if commit_offset else 0) | (PullSysFlag.SUSPEND if suspend else 0)
                | (PullSysFlag.SUBSCRIPTION if subscription else 0) | (PullSysFlag.CLASS_FILTER if class_filter else 0)
                | (PullSysFlag.LITE_PULL if lite_pull else 0))


_STATUS = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(slots=True)
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    msg_found_list: list[MessageExt] = field(default_factory=list)
    suggest_which_broker_id: int = 0


def decompress_body(msg: MessageExt) -> None:
    """Inflate a COMPRESSED body in place (zlib; LZ4/ZSTD are not supported and left as is)."""
    if not msg.sys_flag & MessageSysFlag.COMPRESSED:
        return
    ctype = msg.sys_flag & MessageSysFlag.COMPRESSION_TYPE_MASK
    if ctype not in (0, MessageSysFlag.COMPRESSION_ZLIB):
        return
    try:
        msg.body = zlib.decompress(msg.body)
    except zlib.error:
        return
    msg.sys_flag &= ~MessageSysFlag.COMPRESSED


def restore_retry_topic(msg: MessageExt, group: str) -> None:
    """Deliver a message pulled from ``%RETRY%group`` under its original topic."""
    retry = msg.properties.get(MessageConst.RETRY_TOPIC)
    if retry is not None and msg.topic == RETRY_GROUP_TOPIC_PREFIX + group:
        msg.topic = retry


class PullAPIWrapper:
    """Pulls from the broker a queue lives on, remembering each queue's suggested broker id."""

    def __init__(self, instance, group: str, unit_mode: bool = False):
        self.instance = instance
        self.group = group
        self.suggest: dict[MessageQueue, int] = {}

    async def pull_kernel(self, mq: MessageQueue, sub: SubscriptionData, offset: int, max_nums: int, sys_flag: int,
                          commit_offset: int, suspend_ms: int, timeout: float) -> PullResult:
        inst = self.instance
        bid = self.suggest.get(mq, 0)
        addr, slave = inst.find_broker_address_in_subscribe(mq.brokerName, bid, False)
        if addr is None:
            await inst.update_topic_route_from_namesrv(mq.topic)
            addr, slave = inst.find_broker_address_in_subscribe(mq.brokerName, bid, False)
        if addr is None:
            raise MQClientError(f"The broker[{mq.brokerName}] not exist")
        if slave:
            sys_flag &= ~PullSysFlag.COMMIT_OFFSET
        h = PullMessageRequestHeader(
            consumerGroup=self.group, topic=mq.topic, queueId=mq.queueId, queueOffset=offset, maxMsgNums=max_nums,
            sysFlag=sys_flag, commitOffset=commit_offset, suspendTimeoutMillis=suspend_ms,
            subVersion=sub.subVersion, subscription=sub.subString, expressionType=sub.expressionType,
            bname=mq.brokerName,
        )
        resp = await inst.api.pull_message(addr, h, timeout)
        status = _STATUS.get(resp.code)
        if status is None:
            raise MQBrokerError(resp.code, resp.remark, addr)
        rh = resp.decode_header(PullMessageResponseHeader)
        self.suggest[mq] = rh.suggestWhichBrokerId
        result = PullResult(status, rh.nextBeginOffset, rh.minOffset, rh.maxOffset,
                            suggest_which_broker_id=rh.suggestWhichBrokerId)
        if status == PullStatus.FOUND:
            self._process(mq, result, resp.body or b"", sub)
        return result

    def _process(self, mq: MessageQueue, result: PullResult, body: bytes, sub: SubscriptionData) -> None:
        msgs = decode_messages(body)
        if sub.tagsSet and ExpressionType.is_tag_type(sub.expressionType) and not sub.classFilterMode:
            tags = set(sub.tagsSet)
            msgs = [m for m in msgs if m.properties.get(MessageConst.TAGS) in tags]
        mn, mx = str(result.min_offset), str(result.max_offset)
        for m in msgs:
            m.properties[MessageConst.MIN_OFFSET] = mn
            m.properties[MessageConst.MAX_OFFSET] = mx
            decompress_body(m)
        result.msg_found_list = msgs

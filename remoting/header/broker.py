"""Custom headers of the requests a broker serves (and of its responses).

Field names are the Java field names (the extFields keys). SEND_MESSAGE_V2 /
SEND_BATCH_MESSAGE use single-letter names (:class:`SendMessageRequestHeaderV2`).
"""

from __future__ import annotations

from remoting.header import CommandHeader, header

__all__ = [
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "UpdateConsumerOffsetRequestHeader",
    "TopicQueueRequestHeader",
    "GetMaxOffsetRequestHeader",
    "GetMinOffsetRequestHeader",
    "OffsetResponseHeader",
    "SearchOffsetRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "GetConsumerListByGroupRequestHeader",
    "UnregisterClientRequestHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "CreateTopicRequestHeader",
    "DeleteTopicRequestHeader",
    "DeleteSubscriptionGroupRequestHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "ViewMessageRequestHeader",
    "GetConsumeStatsRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetProducerConnectionListRequestHeader",
    "ResetOffsetRequestHeader",
    "QueryTopicConsumeByWhoRequestHeader",
    "GetBrokerConfigResponseHeader",
    "ConsumerSendMsgBackRequestHeader",
    "EndTransactionRequestHeader",
    "CloneGroupOffsetRequestHeader",
    "QueryConsumeTimeSpanRequestHeader",
    "ViewBrokerStatsDataRequestHeader",
]


@header
class SendMessageRequestHeader(CommandHeader):
    """SEND_MESSAGE (10) with the long field names."""

    producerGroup: str
    topic: str
    defaultTopic: str
    defaultTopicQueueNums: int
    queueId: int
    sysFlag: int
    bornTimestamp: int
    flag: int
    properties: str | None = None
    reconsumeTimes: int | None = None
    unitMode: bool | None = None
    batch: bool | None = None
    maxReconsumeTimes: int | None = None
    bname: str | None = None


@header
class SendMessageRequestHeaderV2(CommandHeader):
    """SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320): same fields, single-letter keys a..n."""

    a: str  # producerGroup
    b: str  # topic
    c: str  # defaultTopic
    d: int  # defaultTopicQueueNums
    e: int  # queueId
    f: int  # sysFlag
    g: int  # bornTimestamp
    h: int  # flag
    i: str | None = None  # properties
    j: int | None = None  # reconsumeTimes
    k: bool | None = None  # unitMode
    l: int | None = None  # maxReconsumeTimes  # noqa: E741 - the wire name
    m: bool | None = None  # batch
    n: str | None = None  # bname

    @classmethod
    def from_v1(cls, v1: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
        return cls(**{key: getattr(v1, name) for key, name in _V2_KEYS.items()})

    def to_v1(self) -> SendMessageRequestHeader:
        return SendMessageRequestHeader(**{name: getattr(self, key) for key, name in _V2_KEYS.items()})


# SEND_MESSAGE_V2's key for each SendMessageRequestHeader field (RocketMQ's createSendMessageRequestHeaderV2)
_V2_KEYS = dict(zip("abcdefghijklmn", (
    "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag",
    "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "bname",
), strict=True))


@header
class SendMessageResponseHeader(CommandHeader):
    msgId: str
    queueId: int
    queueOffset: int
    transactionId: str | None = None


@header
class PullMessageRequestHeader(CommandHeader):
    consumerGroup: str
    topic: str
    queueId: int
    queueOffset: int
    maxMsgNums: int
    sysFlag: int
    commitOffset: int
    suspendTimeoutMillis: int
    subVersion: int
    subscription: str | None = None
    expressionType: str | None = None
    bname: str | None = None


@header
class PullMessageResponseHeader(CommandHeader):
    suggestWhichBrokerId: int
    nextBeginOffset: int
    minOffset: int
    maxOffset: int


@header
class QueryConsumerOffsetRequestHeader(CommandHeader):
    consumerGroup: str
    topic: str
    queueId: int
    bname: str | None = None


@header
class QueryConsumerOffsetResponseHeader(CommandHeader):
    offset: int | None = None


@header
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    consumerGroup: str
    topic: str
    queueId: int
    commitOffset: int
    bname: str | None = None


@header
class TopicQueueRequestHeader(CommandHeader):
    """The fields of the requests about one queue and nothing more (RocketMQ 5's TopicQueueRequestHeader)."""

    topic: str
    queueId: int
    bname: str | None = None


@header
class GetMaxOffsetRequestHeader(TopicQueueRequestHeader):
    """GET_MAX_OFFSET (30)."""


@header
class GetMinOffsetRequestHeader(TopicQueueRequestHeader):
    """GET_MIN_OFFSET (31)."""


@header
class OffsetResponseHeader(CommandHeader):
    """GET_MAX_OFFSET / GET_MIN_OFFSET / SEARCH_OFFSET_BY_TIMESTAMP answer."""

    offset: int


@header
class SearchOffsetRequestHeader(CommandHeader):
    topic: str
    queueId: int
    timestamp: int
    bname: str | None = None


@header
class GetEarliestMsgStoretimeRequestHeader(TopicQueueRequestHeader):
    """GET_EARLIEST_MSG_STORETIME (32)."""


@header
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    timestamp: int


@header
class GetConsumerListByGroupRequestHeader(CommandHeader):
    consumerGroup: str


@header
class UnregisterClientRequestHeader(CommandHeader):
    clientID: str
    producerGroup: str | None = None
    consumerGroup: str | None = None


@header
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    consumerGroup: str


@header
class CreateTopicRequestHeader(CommandHeader):
    topic: str
    defaultTopic: str
    readQueueNums: int
    writeQueueNums: int
    perm: int
    topicFilterType: str
    topicSysFlag: int | None = None
    order: bool = False


@header
class DeleteTopicRequestHeader(CommandHeader):
    topic: str


@header
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    groupName: str
    removeOffset: bool = False


@header
class QueryMessageRequestHeader(CommandHeader):
    topic: str
    key: str
    maxNum: int
    beginTimestamp: int
    endTimestamp: int


@header
class QueryMessageResponseHeader(CommandHeader):
    indexLastUpdateTimestamp: int
    indexLastUpdatePhyoffset: int


@header
class ViewMessageRequestHeader(CommandHeader):
    offset: int


@header
class GetConsumeStatsRequestHeader(CommandHeader):
    consumerGroup: str
    topic: str | None = None


@header
class GetTopicStatsInfoRequestHeader(CommandHeader):
    topic: str


@header
class GetConsumerConnectionListRequestHeader(CommandHeader):
    consumerGroup: str


@header
class GetProducerConnectionListRequestHeader(CommandHeader):
    producerGroup: str


@header
class ResetOffsetRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220)."""

    topic: str
    group: str
    timestamp: int
    isForce: bool


@header
class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    topic: str


@header
class GetBrokerConfigResponseHeader(CommandHeader):
    version: str


@header
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    offset: int
    group: str
    delayLevel: int
    originMsgId: str | None = None
    originTopic: str | None = None
    unitMode: bool = False
    maxReconsumeTimes: int | None = None
    bname: str | None = None


@header
class EndTransactionRequestHeader(CommandHeader):
    producerGroup: str
    tranStateTableOffset: int
    commitLogOffset: int
    commitOrRollback: int
    msgId: str
    fromTransactionCheck: bool = False
    transactionId: str | None = None
    bname: str | None = None


@header
class CloneGroupOffsetRequestHeader(CommandHeader):
    srcGroup: str
    destGroup: str
    topic: str | None = None
    offline: bool = False


@header
class QueryConsumeTimeSpanRequestHeader(CommandHeader):
    topic: str
    group: str


@header
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    statsName: str
    statsKey: str

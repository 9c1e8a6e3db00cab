"""Consumer-side bodies: MessageQueue, connections, consumer lists, locks, consume stats, reset offsets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from remoting import fastjson
from remoting.body import REQUIRED, JsonBody, as_dict, as_int, as_list
from remoting.body.heartbeat import SubscriptionData

__all__ = [
    "MessageQueue",
    "Connection",
    "ConsumerConnection",
    "ProducerConnection",
    "GetConsumerListByGroupResponseBody",
    "LockBatchRequestBody",
    "UnlockBatchRequestBody",
    "LockBatchResponseBody",
    "OffsetWrapper",
    "ConsumeStats",
    "ResetOffsetBody",
    "ResetOffsetBodyForC",
    "OffsetMovedEvent",
]


@dataclass(slots=True, frozen=True)
class MessageQueue(JsonBody):
    """``{"brokerName":s,"queueId":i,"topic":s}``; hashable, usable as an object map key."""

    topic: str
    brokerName: str
    queueId: int

    @classmethod
    def from_obj(cls, obj: Any, key: str | None = None) -> MessageQueue:
        """Also reads the queue from its map-key text (an :class:`~remoting.fastjson.ObjectKey`)."""
        if isinstance(obj, str):
            obj = fastjson.loads(str.__str__(obj))
        return super(MessageQueue, cls).from_obj(obj, key)

    def key(self) -> fastjson.ObjectKey:
        """This queue as a key of an object-keyed map (fastjson writes it in key position)."""
        return fastjson.object_key(self.to_obj())


@dataclass(slots=True)
class Connection(JsonBody):
    """One client connection: ``{"clientAddr","clientId","language","version"}``."""

    clientId: str
    clientAddr: str
    language: str = "JAVA"
    version: int = 0


@dataclass(slots=True)
class ConsumerConnection(JsonBody):
    """GET_CONSUMER_CONNECTION_LIST answer."""

    connectionSet: list[Connection] = field(default_factory=list)
    subscriptionTable: dict[str, SubscriptionData] = field(default_factory=dict)
    consumeType: str | None = None
    messageModel: str | None = None
    consumeFromWhere: str | None = None


@dataclass(slots=True)
class ProducerConnection(JsonBody):
    """``{"connectionSet":[Connection]}``."""

    connectionSet: list[Connection] = field(default_factory=list)


@dataclass(slots=True)
class GetConsumerListByGroupResponseBody(JsonBody):
    """``{"consumerIdList":[s]}``."""

    consumerIdList: list[str] = field(default_factory=list)


@dataclass(slots=True)
class LockBatchRequestBody(JsonBody):
    """``{"clientId":s,"consumerGroup":s,"mqSet":[MessageQueue]}`` (also the unlock body)."""

    consumerGroup: str = ""
    clientId: str = ""
    mqSet: list[MessageQueue] = field(default_factory=list)


UnlockBatchRequestBody = LockBatchRequestBody


@dataclass(slots=True)
class LockBatchResponseBody(JsonBody):
    """``{"lockOKMQSet":[MessageQueue]}``."""

    lockOKMQSet: list[MessageQueue] = field(default_factory=list)


@dataclass(slots=True)
class OffsetWrapper(JsonBody):
    """Per-queue consume progress: broker (max) offset, consumer offset, last consumed store time."""

    brokerOffset: int = 0
    consumerOffset: int = 0
    lastTimestamp: int = 0

def _mq_map(obj: Any, name: str) -> dict:
    out = {}
    for k, v in as_dict(obj, name).items():
        out[MessageQueue.from_obj(k)] = v
    return out


@dataclass(slots=True)
class ConsumeStats(JsonBody):
    """``{"consumeTps":d,"offsetTable":{MessageQueue:OffsetWrapper}}``."""

    offsetTable: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consumeTps: float = 0.0


@dataclass(slots=True)
class ResetOffsetBody(JsonBody):
    """``{"offsetTable":{MessageQueue:offset}}``."""

    offsetTable: dict[MessageQueue, int] = field(default_factory=dict)


@dataclass(slots=True)
class ResetOffsetBodyForC(JsonBody):
    """The C++ client's variant: ``{"offsetTable":[{"brokerName","offset","queueId","topic"}]}``."""

    offsetTable: dict[MessageQueue, int] = field(default_factory=dict)

    def to_obj(self) -> dict:
        return {
            "offsetTable": [
                {"brokerName": mq.brokerName, "offset": off, "queueId": mq.queueId, "topic": mq.topic}
                for mq, off in self.offsetTable.items()
            ]
        }

    @classmethod
    def from_obj(cls, obj: Any) -> ResetOffsetBodyForC:
        table = {}
        for e in as_list(as_dict(obj, "resetOffsetBodyForC").get("offsetTable"), "offsetTable"):
            e = as_dict(e, "offsetTable entry")
            table[MessageQueue.from_obj(e)] = as_int(e.get("offset"), 0, "offset")
        return cls(offsetTable=table)


@dataclass(slots=True)
class OffsetMovedEvent(JsonBody):
    """Body of the OFFSET_MOVED_EVENT message a master writes on PULL_OFFSET_MOVED."""

    consumerGroup: str
    messageQueue: MessageQueue = field(metadata=REQUIRED)
    offsetRequest: int
    offsetNew: int

"""Consumer-side bodies: MessageQueue, connections, consumer lists, locks, consume stats, reset offsets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from remoting import fastjson
from remoting.body import BodyError, JsonBody, as_dict, as_int, as_list, as_str
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


def as_float(v: Any, default: float) -> float:
    """A JSON number (or numeric string) as float."""
    if v is None:
        return default
    try:
        return float(v)
    except (TypeError, ValueError):
        raise BodyError(f"not a number: {v!r}") from None


@dataclass(slots=True, frozen=True)
class MessageQueue(JsonBody):
    """``{"brokerName":s,"queueId":i,"topic":s}``; hashable, usable as an object map key."""

    topic: str
    brokerName: str
    queueId: int

    def to_obj(self) -> dict:
        return {"brokerName": self.brokerName, "queueId": self.queueId, "topic": self.topic}

    @classmethod
    def from_obj(cls, obj: Any) -> MessageQueue:
        if isinstance(obj, fastjson.ObjectKey) or isinstance(obj, str):
            obj = fastjson.loads(str.__str__(obj))
        obj = as_dict(obj, "messageQueue")
        return cls(
            topic=as_str(obj.get("topic"), ""),
            brokerName=as_str(obj.get("brokerName"), ""),
            queueId=as_int(obj.get("queueId"), 0, "queueId"),
        )

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

    def to_obj(self) -> dict:
        return {"clientAddr": self.clientAddr, "clientId": self.clientId, "language": self.language, "version": self.version}

    @classmethod
    def from_obj(cls, obj: Any) -> Connection:
        obj = as_dict(obj, "connection")
        return cls(
            clientId=as_str(obj.get("clientId"), ""),
            clientAddr=as_str(obj.get("clientAddr"), ""),
            language=as_str(obj.get("language"), "JAVA"),
            version=as_int(obj.get("version"), 0, "version"),
        )


@dataclass(slots=True)
class ConsumerConnection(JsonBody):
    """GET_CONSUMER_CONNECTION_LIST answer."""

    connectionSet: list[Connection] = field(default_factory=list)
    subscriptionTable: dict[str, SubscriptionData] = field(default_factory=dict)
    consumeType: str | None = None
    messageModel: str | None = None
    consumeFromWhere: str | None = None

    def to_obj(self) -> dict:
        return {
            "connectionSet": [c.to_obj() for c in self.connectionSet],
            "consumeFromWhere": self.consumeFromWhere,
            "consumeType": self.consumeType,
            "messageModel": self.messageModel,
            "subscriptionTable": {k: v.to_obj() for k, v in self.subscriptionTable.items()},
        }

    @classmethod
    def from_obj(cls, obj: Any) -> ConsumerConnection:
        obj = as_dict(obj, "consumerConnection")
        return cls(
            connectionSet=[Connection.from_obj(c) for c in as_list(obj.get("connectionSet"), "connectionSet")],
            subscriptionTable={
                str.__str__(k): SubscriptionData.from_obj(v)
                for k, v in as_dict(obj.get("subscriptionTable"), "subscriptionTable").items()
            },
            consumeType=as_str(obj.get("consumeType"), None),
            messageModel=as_str(obj.get("messageModel"), None),
            consumeFromWhere=as_str(obj.get("consumeFromWhere"), None),
        )


@dataclass(slots=True)
class ProducerConnection(JsonBody):
    """``{"connectionSet":[Connection]}``."""

    connectionSet: list[Connection] = field(default_factory=list)

    def to_obj(self) -> dict:
        return {"connectionSet": [c.to_obj() for c in self.connectionSet]}

    @classmethod
    def from_obj(cls, obj: Any) -> ProducerConnection:
        obj = as_dict(obj, "producerConnection")
        return cls(connectionSet=[Connection.from_obj(c) for c in as_list(obj.get("connectionSet"), "connectionSet")])


@dataclass(slots=True)
class GetConsumerListByGroupResponseBody(JsonBody):
    """``{"consumerIdList":[s]}``."""

    consumerIdList: list[str] = field(default_factory=list)

    def to_obj(self) -> dict:
        return {"consumerIdList": list(self.consumerIdList)}

    @classmethod
    def from_obj(cls, obj: Any) -> GetConsumerListByGroupResponseBody:
        obj = as_dict(obj, "consumerList")
        return cls(consumerIdList=[as_str(s, "") for s in as_list(obj.get("consumerIdList"), "consumerIdList")])


@dataclass(slots=True)
class LockBatchRequestBody(JsonBody):
    """``{"clientId":s,"consumerGroup":s,"mqSet":[MessageQueue]}`` (also the unlock body)."""

    consumerGroup: str = ""
    clientId: str = ""
    mqSet: list[MessageQueue] = field(default_factory=list)

    def to_obj(self) -> dict:
        return {
            "clientId": self.clientId,
            "consumerGroup": self.consumerGroup,
            "mqSet": [m.to_obj() for m in self.mqSet],
        }

    @classmethod
    def from_obj(cls, obj: Any) -> LockBatchRequestBody:
        obj = as_dict(obj, "lockBatchRequest")
        return cls(
            consumerGroup=as_str(obj.get("consumerGroup"), ""),
            clientId=as_str(obj.get("clientId"), ""),
            mqSet=[MessageQueue.from_obj(m) for m in as_list(obj.get("mqSet"), "mqSet")],
        )


UnlockBatchRequestBody = LockBatchRequestBody


@dataclass(slots=True)
class LockBatchResponseBody(JsonBody):
    """``{"lockOKMQSet":[MessageQueue]}``."""

    lockOKMQSet: list[MessageQueue] = field(default_factory=list)

    def to_obj(self) -> dict:
        return {"lockOKMQSet": [m.to_obj() for m in self.lockOKMQSet]}

    @classmethod
    def from_obj(cls, obj: Any) -> LockBatchResponseBody:
        obj = as_dict(obj, "lockBatchResponse")
        return cls(lockOKMQSet=[MessageQueue.from_obj(m) for m in as_list(obj.get("lockOKMQSet"), "lockOKMQSet")])


@dataclass(slots=True)
class OffsetWrapper(JsonBody):
    """Per-queue consume progress: broker (max) offset, consumer offset, last consumed store time."""

    brokerOffset: int = 0
    consumerOffset: int = 0
    lastTimestamp: int = 0

    def to_obj(self) -> dict:
        return {
            "brokerOffset": self.brokerOffset,
            "consumerOffset": self.consumerOffset,
            "lastTimestamp": self.lastTimestamp,
        }

    @classmethod
    def from_obj(cls, obj: Any) -> OffsetWrapper:
        obj = as_dict(obj, "offsetWrapper")
        return cls(
            brokerOffset=as_int(obj.get("brokerOffset"), 0, "brokerOffset"),
            consumerOffset=as_int(obj.get("consumerOffset"), 0, "consumerOffset"),
            lastTimestamp=as_int(obj.get("lastTimestamp"), 0, "lastTimestamp"),
        )


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

    def to_obj(self) -> dict:
        return {
            "consumeTps": self.consumeTps,
            "offsetTable": {mq.key(): w.to_obj() for mq, w in self.offsetTable.items()},
        }

    @classmethod
    def from_obj(cls, obj: Any) -> ConsumeStats:
        obj = as_dict(obj, "consumeStats")
        return cls(
            offsetTable={mq: OffsetWrapper.from_obj(v) for mq, v in _mq_map(obj.get("offsetTable"), "offsetTable").items()},
            consumeTps=as_float(obj.get("consumeTps"), 0.0),
        )


@dataclass(slots=True)
class ResetOffsetBody(JsonBody):
    """``{"offsetTable":{MessageQueue:offset}}``."""

    offsetTable: dict[MessageQueue, int] = field(default_factory=dict)

    def to_obj(self) -> dict:
        return {"offsetTable": {mq.key(): off for mq, off in self.offsetTable.items()}}

    @classmethod
    def from_obj(cls, obj: Any) -> ResetOffsetBody:
        obj = as_dict(obj, "resetOffsetBody")
        return cls(
            offsetTable={mq: as_int(v, 0, "offset") for mq, v in _mq_map(obj.get("offsetTable"), "offsetTable").items()}
        )


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
    messageQueue: MessageQueue
    offsetRequest: int
    offsetNew: int

    def to_obj(self) -> dict:
        return {
            "consumerGroup": self.consumerGroup,
            "messageQueue": self.messageQueue.to_obj(),
            "offsetNew": self.offsetNew,
            "offsetRequest": self.offsetRequest,
        }

    @classmethod
    def from_obj(cls, obj: Any) -> OffsetMovedEvent:
        obj = as_dict(obj, "offsetMovedEvent")
        mq = obj.get("messageQueue")
        if mq is None:
            raise BodyError("offsetMovedEvent without messageQueue")
        return cls(
            consumerGroup=as_str(obj.get("consumerGroup"), ""),
            messageQueue=MessageQueue.from_obj(mq),
            offsetRequest=as_int(obj.get("offsetRequest"), 0, "offsetRequest"),
            offsetNew=as_int(obj.get("offsetNew"), 0, "offsetNew"),
        )

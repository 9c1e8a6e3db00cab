"""Admin bodies served by the broker: topic stats, group lists, consumer-offset table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from remoting.body import JsonBody, as_dict, as_int, as_list, as_str
from remoting.body.consumer import MessageQueue

__all__ = ["TopicOffset", "TopicStatsTable", "GroupList", "ConsumerOffsetSerializeWrapper", "QueryConsumeTimeSpan"]


@dataclass(slots=True)
class TopicOffset(JsonBody):
    """``{"lastUpdateTimestamp":l,"maxOffset":l,"minOffset":l}``."""

    minOffset: int = 0
    maxOffset: int = 0
    lastUpdateTimestamp: int = 0

    def to_obj(self) -> dict:
        return {"lastUpdateTimestamp": self.lastUpdateTimestamp, "maxOffset": self.maxOffset, "minOffset": self.minOffset}

    @classmethod
    def from_obj(cls, obj: Any) -> TopicOffset:
        obj = as_dict(obj, "topicOffset")
        return cls(
            minOffset=as_int(obj.get("minOffset"), 0, "minOffset"),
            maxOffset=as_int(obj.get("maxOffset"), 0, "maxOffset"),
            lastUpdateTimestamp=as_int(obj.get("lastUpdateTimestamp"), 0, "lastUpdateTimestamp"),
        )


@dataclass(slots=True)
class TopicStatsTable(JsonBody):
    """``{"offsetTable":{MessageQueue:TopicOffset}}``."""

    offsetTable: dict[MessageQueue, TopicOffset] = field(default_factory=dict)

    def to_obj(self) -> dict:
        return {"offsetTable": {mq.key(): v.to_obj() for mq, v in self.offsetTable.items()}}

    @classmethod
    def from_obj(cls, obj: Any) -> TopicStatsTable:
        table = as_dict(as_dict(obj, "topicStatsTable").get("offsetTable"), "offsetTable")
        return cls(offsetTable={MessageQueue.from_obj(k): TopicOffset.from_obj(v) for k, v in table.items()})


@dataclass(slots=True)
class GroupList(JsonBody):
    """``{"groupList":[s]}``."""

    groupList: list[str] = field(default_factory=list)

    def to_obj(self) -> dict:
        return {"groupList": list(self.groupList)}

    @classmethod
    def from_obj(cls, obj: Any) -> GroupList:
        return cls(groupList=[as_str(g, "") for g in as_list(as_dict(obj, "groupList").get("groupList"), "groupList")])


@dataclass(slots=True)
class ConsumerOffsetSerializeWrapper(JsonBody):
    """``{"offsetTable":{"topic@group":{queueId:offset}}}`` (consumerOffset.json, GET_ALL_CONSUMER_OFFSET)."""

    offsetTable: dict[str, dict[int, int]] = field(default_factory=dict)

    def to_obj(self) -> dict:
        return {"offsetTable": {k: dict(v) for k, v in self.offsetTable.items()}}

    @classmethod
    def from_obj(cls, obj: Any) -> ConsumerOffsetSerializeWrapper:
        table = as_dict(as_dict(obj, "consumerOffset").get("offsetTable"), "offsetTable")
        out: dict[str, dict[int, int]] = {}
        for k, v in table.items():
            out[str.__str__(k)] = {
                as_int(q, 0, "queueId"): as_int(o, 0, "offset") for q, o in as_dict(v, "offsets").items()
            }
        return cls(offsetTable=out)


@dataclass(slots=True)
class QueryConsumeTimeSpan(JsonBody):
    """One queue of QueryConsumeTimeSpanBody."""

    messageQueue: MessageQueue
    minTimeStamp: int = 0
    maxTimeStamp: int = 0
    consumeTimeStamp: int = 0
    delayTime: int = 0

    def to_obj(self) -> dict:
        return {
            "consumeTimeStamp": self.consumeTimeStamp,
            "delayTime": self.delayTime,
            "maxTimeStamp": self.maxTimeStamp,
            "messageQueue": self.messageQueue.to_obj(),
            "minTimeStamp": self.minTimeStamp,
        }

    @classmethod
    def from_obj(cls, obj: Any) -> QueryConsumeTimeSpan:
        obj = as_dict(obj, "queryConsumeTimeSpan")
        return cls(
            messageQueue=MessageQueue.from_obj(obj.get("messageQueue") or {}),
            minTimeStamp=as_int(obj.get("minTimeStamp"), 0, "minTimeStamp"),
            maxTimeStamp=as_int(obj.get("maxTimeStamp"), 0, "maxTimeStamp"),
            consumeTimeStamp=as_int(obj.get("consumeTimeStamp"), 0, "consumeTimeStamp"),
            delayTime=as_int(obj.get("delayTime"), 0, "delayTime"),
        )

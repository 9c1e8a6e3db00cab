"""Admin bodies served by the broker: topic stats, group lists, consumer-offset table."""

from __future__ import annotations

from dataclasses import dataclass, field

from remoting.body import JsonBody
from remoting.body.consumer import MessageQueue

__all__ = ["TopicOffset", "TopicStatsTable", "GroupList", "ConsumerOffsetSerializeWrapper", "QueryConsumeTimeSpan"]


@dataclass(slots=True)
class TopicOffset(JsonBody):
    """``{"lastUpdateTimestamp":l,"maxOffset":l,"minOffset":l}``."""

    minOffset: int = 0
    maxOffset: int = 0
    lastUpdateTimestamp: int = 0


@dataclass(slots=True)
class TopicStatsTable(JsonBody):
    """``{"offsetTable":{MessageQueue:TopicOffset}}``."""

    offsetTable: dict[MessageQueue, TopicOffset] = field(default_factory=dict)


@dataclass(slots=True)
class GroupList(JsonBody):
    """``{"groupList":[s]}``."""

    groupList: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ConsumerOffsetSerializeWrapper(JsonBody):
    """``{"offsetTable":{"topic@group":{queueId:offset}}}`` (consumerOffset.json, GET_ALL_CONSUMER_OFFSET)."""

    offsetTable: dict[str, dict[int, int]] = field(default_factory=dict)


@dataclass(slots=True)
class QueryConsumeTimeSpan(JsonBody):
    """One queue of QueryConsumeTimeSpanBody."""

    messageQueue: MessageQueue
    minTimeStamp: int = 0
    maxTimeStamp: int = 0
    consumeTimeStamp: int = 0
    delayTime: int = 0

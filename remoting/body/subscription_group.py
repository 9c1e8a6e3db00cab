"""SubscriptionGroupConfig and SubscriptionGroupWrapper (subscriptionGroup.json, admin bodies)."""

from __future__ import annotations

from dataclasses import dataclass, field

from remoting.body import KEYED, JsonBody, absent
from remoting.body.topic_config import DataVersion

__all__ = ["SubscriptionGroupConfig", "SubscriptionGroupWrapper"]


@dataclass(slots=True)
class SubscriptionGroupConfig(JsonBody):
    """One consumer group's broker-side settings; defaults are RocketMQ's."""

    groupName: str = field(metadata=KEYED)
    consumeEnable: bool = True
    consumeFromMinEnable: bool = True
    consumeBroadcastEnable: bool = True
    retryQueueNums: int = 1
    retryMaxTimes: int = 16
    brokerId: int = 0
    whichBrokerWhenConsumeSlowly: int = 1
    notifyConsumerIdsChangedEnable: bool = True


@dataclass(slots=True)
class SubscriptionGroupWrapper(JsonBody):
    """``{"dataVersion":DataVersion,"subscriptionGroupTable":{group:SubscriptionGroupConfig}}``."""

    subscriptionGroupTable: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    dataVersion: DataVersion = field(default_factory=DataVersion, metadata=absent(lambda: DataVersion(0, 0)))

"""SubscriptionGroupConfig and SubscriptionGroupWrapper (subscriptionGroup.json, admin bodies)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from remoting.body import BodyError, JsonBody, as_bool, as_dict, as_int, as_str
from remoting.body.topic_config import DataVersion

__all__ = ["SubscriptionGroupConfig", "SubscriptionGroupWrapper"]


@dataclass(slots=True)
class SubscriptionGroupConfig(JsonBody):
    """One consumer group's broker-side settings; defaults are RocketMQ's."""

    groupName: str
    consumeEnable: bool = True
    consumeFromMinEnable: bool = True
    consumeBroadcastEnable: bool = True
    retryQueueNums: int = 1
    retryMaxTimes: int = 16
    brokerId: int = 0
    whichBrokerWhenConsumeSlowly: int = 1
    notifyConsumerIdsChangedEnable: bool = True

    def to_obj(self) -> dict:
        return {
            "brokerId": self.brokerId,
            "consumeBroadcastEnable": self.consumeBroadcastEnable,
            "consumeEnable": self.consumeEnable,
            "consumeFromMinEnable": self.consumeFromMinEnable,
            "groupName": self.groupName,
            "notifyConsumerIdsChangedEnable": self.notifyConsumerIdsChangedEnable,
            "retryMaxTimes": self.retryMaxTimes,
            "retryQueueNums": self.retryQueueNums,
            "whichBrokerWhenConsumeSlowly": self.whichBrokerWhenConsumeSlowly,
        }

    @classmethod
    def from_obj(cls, obj: Any, group_name: str | None = None) -> SubscriptionGroupConfig:
        obj = as_dict(obj, "subscriptionGroupConfig")
        name = as_str(obj.get("groupName"), group_name)
        if name is None:
            raise BodyError("subscriptionGroupConfig without groupName")
        return cls(
            groupName=name,
            consumeEnable=as_bool(obj.get("consumeEnable"), True),
            consumeFromMinEnable=as_bool(obj.get("consumeFromMinEnable"), True),
            consumeBroadcastEnable=as_bool(obj.get("consumeBroadcastEnable"), True),
            retryQueueNums=as_int(obj.get("retryQueueNums"), 1, "retryQueueNums"),
            retryMaxTimes=as_int(obj.get("retryMaxTimes"), 16, "retryMaxTimes"),
            brokerId=as_int(obj.get("brokerId"), 0, "brokerId"),
            whichBrokerWhenConsumeSlowly=as_int(obj.get("whichBrokerWhenConsumeSlowly"), 1, "whichBrokerWhenConsumeSlowly"),
            notifyConsumerIdsChangedEnable=as_bool(obj.get("notifyConsumerIdsChangedEnable"), True),
        )


@dataclass(slots=True)
class SubscriptionGroupWrapper(JsonBody):
    """``{"dataVersion":DataVersion,"subscriptionGroupTable":{group:SubscriptionGroupConfig}}``."""

    subscriptionGroupTable: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    dataVersion: DataVersion = field(default_factory=DataVersion)

    def to_obj(self) -> dict:
        return {
            "dataVersion": self.dataVersion.to_obj(),
            "subscriptionGroupTable": {k: v.to_obj() for k, v in self.subscriptionGroupTable.items()},
        }

    @classmethod
    def from_obj(cls, obj: Any) -> SubscriptionGroupWrapper:
        obj = as_dict(obj, "subscriptionGroupWrapper")
        table = {
            str.__str__(k): SubscriptionGroupConfig.from_obj(v, str.__str__(k))
            for k, v in as_dict(obj.get("subscriptionGroupTable"), "subscriptionGroupTable").items()
        }
        dv = obj.get("dataVersion")
        return cls(subscriptionGroupTable=table, dataVersion=DataVersion.from_obj(dv) if dv is not None else DataVersion(0, 0))

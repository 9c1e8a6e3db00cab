"""Topic route beans: QueueData, BrokerData, TopicRouteData."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from remoting.body import REQUIRED, JsonBody, as_dict

__all__ = ["MASTER_ID", "QueueData", "BrokerData", "TopicRouteData"]

MASTER_ID = 0


@dataclass(slots=True)
class QueueData(JsonBody):
    """One broker's share of a topic: ``{"brokerName","perm","readQueueNums","topicSysFlag","writeQueueNums"}``."""

    brokerName: str = field(metadata=REQUIRED)
    readQueueNums: int = 0
    writeQueueNums: int = 0
    perm: int = 0
    topicSysFlag: int = 0

    @classmethod
    def from_obj(cls, obj: Any, key: str | None = None) -> QueueData:
        obj = as_dict(obj, "queueData")
        if "topicSysFlag" not in obj and "topicSynFlag" in obj:
            obj = {**obj, "topicSysFlag": obj["topicSynFlag"]}  # pre-4.x brokers spelled it so
        return super(QueueData, cls).from_obj(obj, key)

    def copy(self) -> QueueData:
        return QueueData(
            self.brokerName, self.readQueueNums, self.writeQueueNums, self.perm, self.topicSysFlag
        )


@dataclass(slots=True)
class BrokerData(JsonBody):
    """A replica group: ``{"brokerAddrs":{brokerId:addr},"brokerName","cluster"}`` (ids are longs)."""

    cluster: str
    brokerName: str
    brokerAddrs: dict[int, str] = field(default_factory=dict)
    enableActingMaster: bool | None = None  # 5.x
    zoneName: str | None = None  # 5.x

    def copy(self) -> BrokerData:
        return BrokerData(
            self.cluster, self.brokerName, dict(self.brokerAddrs), self.enableActingMaster, self.zoneName
        )

    def master_addr(self) -> str | None:
        return self.brokerAddrs.get(MASTER_ID)

    def select_broker_addr(self) -> str | None:
        """The master's address, else a random replica's (as the Java client picks)."""
        addr = self.brokerAddrs.get(MASTER_ID)
        if addr is None and self.brokerAddrs:
            return random.choice(list(self.brokerAddrs.values()))
        return addr


@dataclass(slots=True)
class TopicRouteData(JsonBody):
    """GET_ROUTEINFO_BY_TOPIC answer: queue data, broker data, filter servers, order conf."""

    queueDatas: list[QueueData] = field(default_factory=list)
    brokerDatas: list[BrokerData] = field(default_factory=list)
    filterServerTable: dict[str, list[str]] = field(default_factory=dict)
    orderTopicConf: str | None = None

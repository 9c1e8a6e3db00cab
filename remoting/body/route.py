"""Topic route beans: QueueData, BrokerData, TopicRouteData."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from remoting.body import BodyError, JsonBody, as_bool, as_dict, as_int, as_list, as_str

__all__ = ["MASTER_ID", "QueueData", "BrokerData", "TopicRouteData"]

MASTER_ID = 0


@dataclass(slots=True)
class QueueData(JsonBody):
    """One broker's share of a topic: ``{"brokerName","perm","readQueueNums","topicSysFlag","writeQueueNums"}``."""

    brokerName: str
    readQueueNums: int = 0
    writeQueueNums: int = 0
    perm: int = 0
    topicSysFlag: int = 0

    def to_obj(self) -> dict:
        return {
            "brokerName": self.brokerName,
            "perm": self.perm,
            "readQueueNums": self.readQueueNums,
            "topicSysFlag": self.topicSysFlag,
            "writeQueueNums": self.writeQueueNums,
        }

    @classmethod
    def from_obj(cls, obj: Any) -> QueueData:
        obj = as_dict(obj, "queueData")
        name = as_str(obj.get("brokerName"), None)
        if name is None:
            raise BodyError("queueData without brokerName")
        # Pre-4.x brokers spelled it topicSynFlag.
        sys_flag = obj.get("topicSysFlag", obj.get("topicSynFlag"))
        return cls(
            brokerName=name,
            readQueueNums=as_int(obj.get("readQueueNums"), 0, "readQueueNums"),
            writeQueueNums=as_int(obj.get("writeQueueNums"), 0, "writeQueueNums"),
            perm=as_int(obj.get("perm"), 0, "perm"),
            topicSysFlag=as_int(sys_flag, 0, "topicSysFlag"),
        )

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

    def to_obj(self) -> dict:
        d: dict[str, Any] = {
            "brokerAddrs": dict(self.brokerAddrs),
            "brokerName": self.brokerName,
            "cluster": self.cluster,
        }
        if self.enableActingMaster is not None:
            d["enableActingMaster"] = self.enableActingMaster
        if self.zoneName is not None:
            d["zoneName"] = self.zoneName
        return d

    @classmethod
    def from_obj(cls, obj: Any) -> BrokerData:
        obj = as_dict(obj, "brokerData")
        addrs: dict[int, str] = {}
        for k, v in as_dict(obj.get("brokerAddrs"), "brokerAddrs").items():
            addrs[as_int(k, 0, "brokerAddrs key")] = as_str(v, "")
        eam = obj.get("enableActingMaster")
        return cls(
            cluster=as_str(obj.get("cluster"), "") or "",
            brokerName=as_str(obj.get("brokerName"), "") or "",
            brokerAddrs=addrs,
            enableActingMaster=None if eam is None else as_bool(eam, False),
            zoneName=as_str(obj.get("zoneName"), None),
        )

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

    def to_obj(self) -> dict:
        d: dict[str, Any] = {
            "brokerDatas": [b.to_obj() for b in self.brokerDatas],
            "filterServerTable": {k: list(v) for k, v in self.filterServerTable.items()},
        }
        if self.orderTopicConf is not None:
            d["orderTopicConf"] = self.orderTopicConf
        d["queueDatas"] = [q.to_obj() for q in self.queueDatas]
        return d

    @classmethod
    def from_obj(cls, obj: Any) -> TopicRouteData:
        obj = as_dict(obj, "topicRouteData")
        fst = {}
        for k, v in as_dict(obj.get("filterServerTable"), "filterServerTable").items():
            fst[str.__str__(k)] = [as_str(s, "") for s in as_list(v, "filterServerTable value")]
        return cls(
            queueDatas=[QueueData.from_obj(q) for q in as_list(obj.get("queueDatas"), "queueDatas")],
            brokerDatas=[BrokerData.from_obj(b) for b in as_list(obj.get("brokerDatas"), "brokerDatas")],
            filterServerTable=fst,
            orderTopicConf=as_str(obj.get("orderTopicConf"), None),
        )

"""ClusterInfo (GET_BROKER_CLUSTER_INFO) and TopicList (topic-list requests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from remoting.body import JsonBody, as_dict, as_list, as_str
from remoting.body.route import BrokerData

__all__ = ["ClusterInfo", "TopicList"]


@dataclass(slots=True)
class ClusterInfo(JsonBody):
    """``{"brokerAddrTable":{brokerName:BrokerData},"clusterAddrTable":{cluster:[brokerName]}}``."""

    brokerAddrTable: dict[str, BrokerData] = field(default_factory=dict)
    clusterAddrTable: dict[str, list[str]] = field(default_factory=dict)

    def to_obj(self) -> dict:
        return {
            "brokerAddrTable": {k: v.to_obj() for k, v in self.brokerAddrTable.items()},
            "clusterAddrTable": {k: list(v) for k, v in self.clusterAddrTable.items()},
        }

    @classmethod
    def from_obj(cls, obj: Any) -> ClusterInfo:
        obj = as_dict(obj, "clusterInfo")
        return cls(
            brokerAddrTable={
                str.__str__(k): BrokerData.from_obj(v)
                for k, v in as_dict(obj.get("brokerAddrTable"), "brokerAddrTable").items()
            },
            clusterAddrTable={
                str.__str__(k): [as_str(s, "") for s in as_list(v, "clusterAddrTable value")]
                for k, v in as_dict(obj.get("clusterAddrTable"), "clusterAddrTable").items()
            },
        )


@dataclass(slots=True)
class TopicList(JsonBody):
    """``{"brokerAddr":s?,"topicList":[s]}`` (a Java Set, written as an array)."""

    topicList: list[str] = field(default_factory=list)
    brokerAddr: str | None = None

    def to_obj(self) -> dict:
        d: dict[str, Any] = {}
        if self.brokerAddr is not None:
            d["brokerAddr"] = self.brokerAddr
        d["topicList"] = list(self.topicList)
        return d

    @classmethod
    def from_obj(cls, obj: Any) -> TopicList:
        obj = as_dict(obj, "topicList")
        return cls(
            topicList=[as_str(s, "") for s in as_list(obj.get("topicList"), "topicList")],
            brokerAddr=as_str(obj.get("brokerAddr"), None),
        )

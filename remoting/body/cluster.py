"""ClusterInfo (GET_BROKER_CLUSTER_INFO) and TopicList (topic-list requests)."""

from __future__ import annotations

from dataclasses import dataclass, field

from remoting.body import JsonBody
from remoting.body.route import BrokerData

__all__ = ["ClusterInfo", "TopicList"]


@dataclass(slots=True)
class ClusterInfo(JsonBody):
    """``{"brokerAddrTable":{brokerName:BrokerData},"clusterAddrTable":{cluster:[brokerName]}}``."""

    brokerAddrTable: dict[str, BrokerData] = field(default_factory=dict)
    clusterAddrTable: dict[str, list[str]] = field(default_factory=dict)


@dataclass(slots=True)
class TopicList(JsonBody):
    """``{"brokerAddr":s?,"topicList":[s]}`` (a Java Set, written as an array)."""

    topicList: list[str] = field(default_factory=list)
    brokerAddr: str | None = None

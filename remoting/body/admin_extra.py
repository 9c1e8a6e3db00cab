"""Bodies of the less common broker admin requests (fastjson beans of RocketMQ 4.9.7).

QUERY_CONSUME_QUEUE (321) answers :class:`QueryConsumeQueueResponseBody` (a list of
:class:`ConsumeQueueData`), QUERY_CORRECTION_OFFSET (308) :class:`QueryCorrectionOffsetBody`,
GET_ALL_PRODUCER_INFO (328) :class:`ProducerTableInfo`; GET_BROKER_CLUSTER_ACL_CONFIG (54)
of an ACL broker answers :class:`GetBrokerClusterAclConfigResponseBody`. Keys are written in
alphabetical order and ``None`` fields are left out, as fastjson writes beans.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from remoting.body import JsonBody
from remoting.body.heartbeat import SubscriptionData

__all__ = [
    "ConsumeQueueData",
    "QueryConsumeQueueResponseBody",
    "QueryCorrectionOffsetBody",
    "ProducerInfo",
    "ProducerTableInfo",
    "PlainAccessConfig",
    "GetBrokerClusterAclConfigResponseBody",
]


@dataclass(slots=True)
class ConsumeQueueData(JsonBody):
    """One consume-queue unit: commit-log position, size, tags code, and the extension's view of it."""

    physicOffset: int = 0
    physicSize: int = 0
    tagsCode: int = 0
    extendDataJson: str | None = None
    bitMap: str | None = None
    eval: bool = False
    msg: str | None = None

    def __str__(self) -> str:
        """Java's ``ConsumeQueueData.toString`` (what mqadmin queryCq prints per unit)."""
        return (f"ConsumeQueueData{{physicOffset={self.physicOffset}, physicSize={self.physicSize}, "
                f"tagsCode={self.tagsCode}, extendDataJson='{_java(self.extendDataJson)}', "
                f"bitMap='{_java(self.bitMap)}', eval={_java(self.eval)}, msg='{_java(self.msg)}'}}")


def _java(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


@dataclass(slots=True)
class QueryConsumeQueueResponseBody(JsonBody):
    """QUERY_CONSUME_QUEUE answer. ``subscriptionData``/``filterData`` only when a consumer group was asked."""

    subscriptionData: SubscriptionData | None = None
    filterData: str | None = None
    queueData: list[ConsumeQueueData] | None = None
    maxQueueIndex: int = 0
    minQueueIndex: int = 0


@dataclass(slots=True)
class QueryCorrectionOffsetBody(JsonBody):
    """``{"correctionOffsets":{queueId:offset}}`` (Integer keys written bare, as fastjson does)."""

    correctionOffsets: dict[int, int] = field(default_factory=dict)


@dataclass(slots=True)
class ProducerInfo(JsonBody):
    """One producer instance of a group; ``remoteIP`` is Java's ``SocketAddress.toString`` (``/ip:port``)."""

    clientId: str = ""
    remoteIP: str = ""
    language: str = "JAVA"
    version: int = 0
    lastUpdateTimestamp: int = 0

    def __str__(self) -> str:
        """Java's ``ProducerInfo.toString`` (what mqadmin producer prints per instance)."""
        return (f"clientId={self.clientId},remoteIP={self.remoteIP}, language={self.language}, "
                f"version={self.version}, lastUpdateTimestamp={self.lastUpdateTimestamp}")


@dataclass(slots=True)
class ProducerTableInfo(JsonBody):
    """``{"data":{group:[ProducerInfo]}}``."""

    data: dict[str, list[ProducerInfo]] = field(default_factory=dict)


@dataclass(slots=True)
class PlainAccessConfig(JsonBody):
    """One ACL account as plain_acl.yml holds it (acl.md §2)."""

    accessKey: str | None = None
    secretKey: str | None = None
    whiteRemoteAddress: str | None = None
    admin: bool = False
    defaultTopicPerm: str | None = None
    defaultGroupPerm: str | None = None
    topicPerms: list[str] | None = None
    groupPerms: list[str] | None = None


@dataclass(slots=True)
class GetBrokerClusterAclConfigResponseBody(JsonBody):
    """``{"globalWhiteAddrs":[s],"plainAccessConfigs":[PlainAccessConfig]}``."""

    globalWhiteAddrs: list[str] | None = None
    plainAccessConfigs: list[PlainAccessConfig] | None = None

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

from remoting.body import BodyError, JsonBody, as_bool, as_dict, as_int, as_list, as_str
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

    def to_obj(self) -> dict:
        d: dict[str, Any] = {}
        if self.bitMap is not None:
            d["bitMap"] = self.bitMap
        d["eval"] = self.eval
        if self.extendDataJson is not None:
            d["extendDataJson"] = self.extendDataJson
        if self.msg is not None:
            d["msg"] = self.msg
        d["physicOffset"] = self.physicOffset
        d["physicSize"] = self.physicSize
        d["tagsCode"] = self.tagsCode
        return d

    @classmethod
    def from_obj(cls, obj: Any) -> ConsumeQueueData:
        obj = as_dict(obj, "consumeQueueData")
        return cls(
            physicOffset=as_int(obj.get("physicOffset"), 0, "physicOffset"),
            physicSize=as_int(obj.get("physicSize"), 0, "physicSize"),
            tagsCode=as_int(obj.get("tagsCode"), 0, "tagsCode"),
            extendDataJson=as_str(obj.get("extendDataJson"), None),
            bitMap=as_str(obj.get("bitMap"), None),
            eval=as_bool(obj.get("eval"), False),
            msg=as_str(obj.get("msg"), None),
        )

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

    def to_obj(self) -> dict:
        d: dict[str, Any] = {}
        if self.filterData is not None:
            d["filterData"] = self.filterData
        d["maxQueueIndex"] = self.maxQueueIndex
        d["minQueueIndex"] = self.minQueueIndex
        if self.queueData is not None:
            d["queueData"] = [q.to_obj() for q in self.queueData]
        if self.subscriptionData is not None:
            d["subscriptionData"] = self.subscriptionData.to_dict()
        return d

    @classmethod
    def from_obj(cls, obj: Any) -> QueryConsumeQueueResponseBody:
        obj = as_dict(obj, "queryConsumeQueueResponseBody")
        sd = obj.get("subscriptionData")
        qd = obj.get("queueData")
        return cls(
            subscriptionData=None if sd is None else SubscriptionData.from_obj(sd),
            filterData=as_str(obj.get("filterData"), None),
            queueData=None if qd is None else [ConsumeQueueData.from_obj(q) for q in as_list(qd, "queueData")],
            maxQueueIndex=as_int(obj.get("maxQueueIndex"), 0, "maxQueueIndex"),
            minQueueIndex=as_int(obj.get("minQueueIndex"), 0, "minQueueIndex"),
        )


@dataclass(slots=True)
class QueryCorrectionOffsetBody(JsonBody):
    """``{"correctionOffsets":{queueId:offset}}`` (Integer keys written bare, as fastjson does)."""

    correctionOffsets: dict[int, int] = field(default_factory=dict)

    def to_obj(self) -> dict:
        return {"correctionOffsets": dict(self.correctionOffsets)}

    @classmethod
    def from_obj(cls, obj: Any) -> QueryCorrectionOffsetBody:
        table = as_dict(as_dict(obj, "queryCorrectionOffsetBody").get("correctionOffsets"), "correctionOffsets")
        return cls(correctionOffsets={as_int(k, 0, "queueId"): as_int(v, 0, "offset") for k, v in table.items()})


@dataclass(slots=True)
class ProducerInfo(JsonBody):
    """One producer instance of a group; ``remoteIP`` is Java's ``SocketAddress.toString`` (``/ip:port``)."""

    clientId: str = ""
    remoteIP: str = ""
    language: str = "JAVA"
    version: int = 0
    lastUpdateTimestamp: int = 0

    def to_obj(self) -> dict:
        return {
            "clientId": self.clientId,
            "language": self.language,
            "lastUpdateTimestamp": self.lastUpdateTimestamp,
            "remoteIP": self.remoteIP,
            "version": self.version,
        }

    @classmethod
    def from_obj(cls, obj: Any) -> ProducerInfo:
        obj = as_dict(obj, "producerInfo")
        return cls(
            clientId=as_str(obj.get("clientId"), "") or "",
            remoteIP=as_str(obj.get("remoteIP"), "") or "",
            language=as_str(obj.get("language"), "JAVA") or "JAVA",
            version=as_int(obj.get("version"), 0, "version"),
            lastUpdateTimestamp=as_int(obj.get("lastUpdateTimestamp"), 0, "lastUpdateTimestamp"),
        )

    def __str__(self) -> str:
        """Java's ``ProducerInfo.toString`` (what mqadmin producer prints per instance)."""
        return (f"clientId={self.clientId},remoteIP={self.remoteIP}, language={self.language}, "
                f"version={self.version}, lastUpdateTimestamp={self.lastUpdateTimestamp}")


@dataclass(slots=True)
class ProducerTableInfo(JsonBody):
    """``{"data":{group:[ProducerInfo]}}``."""

    data: dict[str, list[ProducerInfo]] = field(default_factory=dict)

    def to_obj(self) -> dict:
        return {"data": {g: [p.to_obj() for p in ps] for g, ps in self.data.items()}}

    @classmethod
    def from_obj(cls, obj: Any) -> ProducerTableInfo:
        table = as_dict(as_dict(obj, "producerTableInfo").get("data"), "data")
        return cls(data={str.__str__(g): [ProducerInfo.from_obj(p) for p in as_list(ps, "producers")]
                         for g, ps in table.items()})


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

    def to_obj(self) -> dict:
        d: dict[str, Any] = {}
        for name in ("accessKey", "admin", "defaultGroupPerm", "defaultTopicPerm", "groupPerms", "secretKey",
                     "topicPerms", "whiteRemoteAddress"):
            v = getattr(self, name)
            if v is not None:
                d[name] = list(v) if isinstance(v, list) else v
        return d

    @classmethod
    def from_obj(cls, obj: Any) -> PlainAccessConfig:
        obj = as_dict(obj, "plainAccessConfig")

        def strs(key: str) -> list[str] | None:
            v = obj.get(key)
            return None if v is None else [as_str(x, "") or "" for x in as_list(v, key)]

        return cls(
            accessKey=as_str(obj.get("accessKey"), None),
            secretKey=as_str(obj.get("secretKey"), None),
            whiteRemoteAddress=as_str(obj.get("whiteRemoteAddress"), None),
            admin=as_bool(obj.get("admin"), False),
            defaultTopicPerm=as_str(obj.get("defaultTopicPerm"), None),
            defaultGroupPerm=as_str(obj.get("defaultGroupPerm"), None),
            topicPerms=strs("topicPerms"),
            groupPerms=strs("groupPerms"),
        )


@dataclass(slots=True)
class GetBrokerClusterAclConfigResponseBody(JsonBody):
    """``{"globalWhiteAddrs":[s],"plainAccessConfigs":[PlainAccessConfig]}``."""

    globalWhiteAddrs: list[str] | None = None
    plainAccessConfigs: list[PlainAccessConfig] | None = None

    def to_obj(self) -> dict:
        d: dict[str, Any] = {}
        if self.globalWhiteAddrs is not None:
            d["globalWhiteAddrs"] = list(self.globalWhiteAddrs)
        if self.plainAccessConfigs is not None:
            d["plainAccessConfigs"] = [p.to_obj() for p in self.plainAccessConfigs]
        return d

    @classmethod
    def from_obj(cls, obj: Any) -> GetBrokerClusterAclConfigResponseBody:
        obj = as_dict(obj, "getBrokerClusterAclConfigResponseBody")
        w = obj.get("globalWhiteAddrs")
        p = obj.get("plainAccessConfigs")
        if p is not None and not isinstance(p, list):
            raise BodyError("field plainAccessConfigs is not an array")
        return cls(
            globalWhiteAddrs=None if w is None else [as_str(x, "") or "" for x in as_list(w, "globalWhiteAddrs")],
            plainAccessConfigs=None if p is None else [PlainAccessConfig.from_obj(x) for x in p],
        )

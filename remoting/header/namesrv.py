"""Custom headers of the NameServer requests and responses (remoting-protocol.md §12).

Field names are Java's (they are the extFields keys). Required fields have no
default; optional ones default to None (or Java's field initialiser).
"""

from __future__ import annotations

from remoting.header import CommandHeader, header

__all__ = [
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "UnRegisterBrokerRequestHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "GetRouteInfoRequestHeader",
    "PutKVConfigRequestHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "DeleteKVConfigRequestHeader",
    "GetKVListByNamespaceRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "GetTopicsByClusterRequestHeader",
    "DeleteTopicFromNamesrvRequestHeader",
    "RegisterTopicRequestHeader",
]


@header
class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER (103). ``bodyCrc32`` = CRC32 of the body masked to 31 bits; 0 = not checked."""

    brokerName: str
    brokerAddr: str
    clusterName: str
    haServerAddr: str
    brokerId: int
    compressed: bool = False
    bodyCrc32: int = 0


@header
class RegisterBrokerResponseHeader(CommandHeader):
    """REGISTER_BROKER reply: the master's HA address and address (slaves only, master alive)."""

    haServerAddr: str | None = None
    masterAddr: str | None = None


@header
class UnRegisterBrokerRequestHeader(CommandHeader):
    """UNREGISTER_BROKER (104)."""

    brokerName: str
    brokerAddr: str
    clusterName: str
    brokerId: int


@header
class QueryDataVersionRequestHeader(CommandHeader):
    """QUERY_DATA_VERSION (322); body = the broker's DataVersion JSON."""

    brokerName: str
    brokerAddr: str
    clusterName: str
    brokerId: int


@header
class QueryDataVersionResponseHeader(CommandHeader):
    """QUERY_DATA_VERSION reply."""

    changed: bool | None = None


@header
class GetRouteInfoRequestHeader(CommandHeader):
    """GET_ROUTEINFO_BY_TOPIC (105)."""

    topic: str
    acceptStandardJsonOnly: bool | None = None


@header
class PutKVConfigRequestHeader(CommandHeader):
    """PUT_KV_CONFIG (100)."""

    namespace: str
    key: str
    value: str


@header
class GetKVConfigRequestHeader(CommandHeader):
    """GET_KV_CONFIG (101)."""

    namespace: str
    key: str


@header
class GetKVConfigResponseHeader(CommandHeader):
    """GET_KV_CONFIG reply."""

    value: str | None = None


@header
class DeleteKVConfigRequestHeader(CommandHeader):
    """DELETE_KV_CONFIG (102)."""

    namespace: str
    key: str


@header
class GetKVListByNamespaceRequestHeader(CommandHeader):
    """GET_KVLIST_BY_NAMESPACE (219)."""

    namespace: str


@header
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER (205)."""

    brokerName: str


@header
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER reply."""

    wipeTopicCount: int | None = None


@header
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    """ADD_WRITE_PERM_OF_BROKER (327)."""

    brokerName: str


@header
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    """ADD_WRITE_PERM_OF_BROKER reply."""

    addTopicCount: int | None = None


@header
class GetTopicsByClusterRequestHeader(CommandHeader):
    """GET_TOPICS_BY_CLUSTER (224)."""

    cluster: str


@header
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_NAMESRV (216); with ``clusterName`` only that cluster's brokers lose the topic."""

    topic: str
    clusterName: str | None = None


@header
class RegisterTopicRequestHeader(CommandHeader):
    """REGISTER_TOPIC_IN_NAMESRV (217, 5.x); body = TopicRouteData with the queue data."""

    topic: str

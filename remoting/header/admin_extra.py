"""Custom headers of the less common broker admin requests (RocketMQ 4.9.7 names and keys).

ACL 1.0 management (codes 50-54), QUERY_CONSUME_QUEUE (321), QUERY_CORRECTION_OFFSET (308),
RESUME_CHECK_HALF_MESSAGE (323), GET_ALL_PRODUCER_INFO (328) and the legacy
REGISTER_FILTER_SERVER (301). Required fields are the ones Java marks ``@CFNotNull``;
Java's primitive fields that may be absent default to 0 / false, as its decoder leaves them.
"""

from __future__ import annotations

from remoting.header import CommandHeader, header

__all__ = [
    "CreateAccessConfigRequestHeader",
    "DeleteAccessConfigRequestHeader",
    "UpdateGlobalWhiteAddrsConfigRequestHeader",
    "GetBrokerAclConfigResponseHeader",
    "QueryConsumeQueueRequestHeader",
    "QueryCorrectionOffsetHeader",
    "ResumeCheckHalfMessageRequestHeader",
    "GetAllProducerInfoRequestHeader",
    "RegisterFilterServerRequestHeader",
    "RegisterFilterServerResponseHeader",
]


@header
class CreateAccessConfigRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_ACL_CONFIG (50). ``topicPerms``/``groupPerms`` are ``name=PERM`` comma lists."""

    accessKey: str
    secretKey: str | None = None
    whiteRemoteAddress: str | None = None
    admin: bool = False
    defaultTopicPerm: str | None = None
    defaultGroupPerm: str | None = None
    topicPerms: str | None = None
    groupPerms: str | None = None


@header
class DeleteAccessConfigRequestHeader(CommandHeader):
    """DELETE_ACL_CONFIG (51)."""

    accessKey: str


@header
class UpdateGlobalWhiteAddrsConfigRequestHeader(CommandHeader):
    """UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53): ``globalWhiteAddrs`` is a comma list."""

    globalWhiteAddrs: str
    aclFileFullPath: str


@header
class GetBrokerAclConfigResponseHeader(CommandHeader):
    """Answer of GET_BROKER_CLUSTER_ACL_INFO (52) on a broker with ACL on."""

    version: str
    brokerName: str
    brokerAddr: str
    clusterName: str
    allAclFileVersion: str | None = None


@header
class QueryConsumeQueueRequestHeader(CommandHeader):
    """QUERY_CONSUME_QUEUE (321): ``count`` units of ``topic``/``queueId`` from unit ``index``."""

    topic: str
    queueId: int = 0
    index: int = 0
    count: int = 0
    consumerGroup: str | None = None


@header
class QueryCorrectionOffsetHeader(CommandHeader):
    """QUERY_CORRECTION_OFFSET (308); ``filterGroups`` is a comma list of groups to leave out."""

    compareGroup: str
    topic: str
    filterGroups: str | None = None


@header
class ResumeCheckHalfMessageRequestHeader(CommandHeader):
    """RESUME_CHECK_HALF_MESSAGE (323): ``msgId`` is the half message's offset message id."""

    msgId: str | None = None


@header
class GetAllProducerInfoRequestHeader(CommandHeader):
    """GET_ALL_PRODUCER_INFO (328): no fields."""


@header
class RegisterFilterServerRequestHeader(CommandHeader):
    """REGISTER_FILTER_SERVER (301, legacy filter server)."""

    filterServerAddr: str


@header
class RegisterFilterServerResponseHeader(CommandHeader):
    """Answer of REGISTER_FILTER_SERVER."""

    brokerName: str
    brokerId: int

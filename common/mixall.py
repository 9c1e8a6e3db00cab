"""RocketMQ's MixAll constants: system topic and group names, retry/DLQ prefixes, defaults."""

from __future__ import annotations

__all__ = [
    "DEFAULT_CLUSTER",
    "DEFAULT_TOPIC",
    "BENCHMARK_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
    "SCHEDULE_TOPIC",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "REPLY_TOPIC_POSTFIX",
    "RETRY_GROUP_TOPIC_PREFIX",
    "DLQ_GROUP_TOPIC_PREFIX",
    "SYSTEM_TOPIC_PREFIX",
    "CID_RMQ_SYS_PREFIX",
    "TOOLS_CONSUMER_GROUP",
    "FILTERSRV_CONSUMER_GROUP",
    "SELF_TEST_CONSUMER_GROUP",
    "ONS_HTTP_PROXY_GROUP",
    "CID_ONSAPI_PULL_GROUP",
    "CID_ONSAPI_PERMISSION_GROUP",
    "CID_ONSAPI_OWNER_GROUP",
    "CID_SYS_RMQ_TRANS",
    "DEFAULT_PRODUCER_GROUP",
    "CLIENT_INNER_PRODUCER_GROUP",
    "MASTER_ID",
    "DEFAULT_REGION",
    "get_retry_topic",
    "get_dlq_topic",
    "get_reply_topic",
    "is_retry_topic",
    "is_dlq_topic",
    "is_sys_consumer_group",
]

DEFAULT_CLUSTER = "DefaultCluster"
DEFAULT_TOPIC = "TBW102"  # AUTO_CREATE_TOPIC_KEY_TOPIC: template for auto-created topics
BENCHMARK_TOPIC = "BenchmarkTest"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
RMQ_SYS_TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
RMQ_SYS_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
REPLY_TOPIC_POSTFIX = "REPLY_TOPIC"

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"

TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
FILTERSRV_CONSUMER_GROUP = "FILTERSRV_CONSUMER"
SELF_TEST_CONSUMER_GROUP = "SELF_TEST_C_GROUP"
ONS_HTTP_PROXY_GROUP = "CID_ONS-HTTP-PROXY"
CID_ONSAPI_PULL_GROUP = "CID_ONSAPI_PULL"
CID_ONSAPI_PERMISSION_GROUP = "CID_ONSAPI_PERMISSION"
CID_ONSAPI_OWNER_GROUP = "CID_ONSAPI_OWNER"
CID_SYS_RMQ_TRANS = "CID_RMQ_SYS_TRANS"
DEFAULT_PRODUCER_GROUP = "DEFAULT_PRODUCER"
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"

MASTER_ID = 0
DEFAULT_REGION = "DefaultRegion"


def get_retry_topic(group: str) -> str:
    """``%RETRY%<group>``: where a consumer group's failed messages come back."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def get_dlq_topic(group: str) -> str:
    """``%DLQ%<group>``: dead letters of a consumer group."""
    return DLQ_GROUP_TOPIC_PREFIX + group


def get_reply_topic(cluster_name: str) -> str:
    """``<cluster>_REPLY_TOPIC`` used by request/reply messaging."""
    return f"{cluster_name}_{REPLY_TOPIC_POSTFIX}"


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def is_dlq_topic(topic: str) -> bool:
    return topic.startswith(DLQ_GROUP_TOPIC_PREFIX)


def is_sys_consumer_group(group: str) -> bool:
    return group.startswith(CID_RMQ_SYS_PREFIX)

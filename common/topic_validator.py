"""TopicValidator: which topic (and group) names are legal and which topics are system topics.

Names from the wire end up in file paths (``consumequeue/<topic>/``) and JSON
keys, so they are checked here before anything else touches them: only
``[%|a-zA-Z0-9_-]``, not blank, at most 127 characters (a topic length is a
signed byte in the CommitLog record). Group names get the same character rule
(the 4.9.7 broker does not check them; we do, because they become part of
retry-topic names and ``topic@group`` keys).
"""

from __future__ import annotations

import re

from common import mixall

__all__ = [
    "TOPIC_MAX_LENGTH",
    "GROUP_MAX_LENGTH",
    "SYSTEM_TOPICS",
    "NOT_ALLOWED_SEND_TOPICS",
    "validate_topic",
    "validate_group",
    "check_topic",
    "system_topic_remark",
    "not_allowed_send_remark",
    "is_topic_or_group_illegal",
    "is_system_topic",
    "is_not_allowed_send_topic",
    "add_system_topic",
]

TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
_VALID = re.compile(r"^[%|a-zA-Z0-9_-]+$")
_VALID_TEXT = "^[%|a-zA-Z0-9_-]+$"  # as the remarks print it

SYSTEM_TOPICS: set[str] = {
    mixall.DEFAULT_TOPIC,
    mixall.SCHEDULE_TOPIC,
    mixall.BENCHMARK_TOPIC,
    mixall.RMQ_SYS_TRANS_HALF_TOPIC,
    mixall.RMQ_SYS_TRACE_TOPIC,
    mixall.RMQ_SYS_TRANS_OP_HALF_TOPIC,
    mixall.TRANS_CHECK_MAX_TIME_TOPIC,
    mixall.SELF_TEST_TOPIC,
    mixall.OFFSET_MOVED_EVENT,
}

NOT_ALLOWED_SEND_TOPICS: frozenset[str] = frozenset(
    {
        mixall.SCHEDULE_TOPIC,
        mixall.RMQ_SYS_TRANS_HALF_TOPIC,
        mixall.RMQ_SYS_TRANS_OP_HALF_TOPIC,
        mixall.TRANS_CHECK_MAX_TIME_TOPIC,
        mixall.SELF_TEST_TOPIC,
        mixall.OFFSET_MOVED_EVENT,
    }
)


def is_topic_or_group_illegal(name: str) -> bool:
    """True when ``name`` has a character outside ``[%|a-zA-Z0-9_-]`` (or is empty)."""
    return _VALID.match(name) is None


def validate_topic(topic: str | None) -> str | None:
    """None when ``topic`` is a legal topic name, else the remark the broker answers with.

    RocketMQ 4.9.7's TopicValidator.validateTopic word for word, in its order: blank, illegal
    characters, then length."""
    if topic is None or not topic.strip():
        return "The specified topic is blank."
    if is_topic_or_group_illegal(topic):
        return f"The specified topic contains illegal characters, allowing only {_VALID_TEXT}"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def check_topic(topic: str | None) -> str | None:
    """The client side's check (4.9.7 Validators.checkTopic): same names accepted, its own texts and
    order (blank, length, illegal characters); None when legal."""
    return _name_error(topic, "The specified topic", "topic", TOPIC_MAX_LENGTH)


def validate_group(group: str | None) -> str | None:
    """None when ``group`` is a legal group name, else why not (4.9.7 Validators.checkGroup's texts
    and order: blank, length, illegal characters)."""
    return _name_error(group, "the specified group", "group", GROUP_MAX_LENGTH)


def _name_error(name: str | None, subject: str, kind: str, max_length: int) -> str | None:
    # Validators' texts differ only in subject (its capital letter included) and limit
    if name is None or not name.strip():
        return f"{subject} is blank"
    if len(name) > max_length:
        return f"{subject} is longer than {kind} max length {max_length}."
    if is_topic_or_group_illegal(name):
        return f"{subject}[{name}] contains illegal characters, allowing only {_VALID_TEXT}"
    return None


def system_topic_remark(topic: str) -> str:
    """TopicValidator.isSystemTopic(topic, response)'s remark (SYSTEM_ERROR)."""
    return f"The topic[{topic}] is conflict with system topic."


def not_allowed_send_remark(topic: str) -> str:
    """TopicValidator.isNotAllowedSendTopic(topic, response)'s remark (NO_PERMISSION)."""
    return f"Sending message to topic[{topic}] is forbidden."


def add_system_topic(topic: str) -> None:
    """Register a name-dependent system topic (cluster, broker, trace, reply topics)."""
    SYSTEM_TOPICS.add(topic)


def is_system_topic(topic: str) -> bool:
    """System topics may not be created or changed by UPDATE_AND_CREATE_TOPIC."""
    return topic in SYSTEM_TOPICS or topic.startswith(mixall.SYSTEM_TOPIC_PREFIX)


def is_not_allowed_send_topic(topic: str) -> bool:
    """Topics clients may not send to (NO_PERMISSION)."""
    return topic in NOT_ALLOWED_SEND_TOPICS

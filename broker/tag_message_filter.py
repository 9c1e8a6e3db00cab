"""Local stand-in for the filter engine: tag-hash filtering (ExpressionType TAG) only.

Used when ``broker.filter.build_message_filter`` is not available; SQL92 then
reports unsupported. Delete once broker/filter/ is always present.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TagMessageFilter", "build_message_filter", "FilterParseError"]


class FilterParseError(ValueError):
    """The subscription expression cannot be compiled."""


class TagMessageFilter:
    """Match a consume-queue unit by its tag hash code (RocketMQ's ExpressionMessageFilter, TAG part)."""

    __slots__ = ("all", "codes")

    def __init__(self, subscription_data: Any):
        sub = getattr(subscription_data, "subString", "*")
        self.codes = frozenset(getattr(subscription_data, "codeSet", ()) or ())
        self.all = sub in (None, "", "*") or (not self.codes and not getattr(subscription_data, "tagsSet", None))

    def is_matched_by_consume_queue(self, tags_code: int | None, cq_ext_unit: Any = None) -> bool:
        if self.all or tags_code is None:
            return True
        return tags_code in self.codes

    def is_matched_by_commit_log(self, msg_buffer: Any, properties: Any) -> bool:
        return True


def build_message_filter(subscription_data: Any, consumer_filter_data: Any = None, *, enable_property_filter: bool = False):
    expr = getattr(subscription_data, "expressionType", "TAG") or "TAG"
    if expr != "TAG":
        raise FilterParseError(f"expression type {expr} is not supported by this broker build")
    return TagMessageFilter(subscription_data)

"""The store's MessageFilter for a pull: tag hash codes, then SQL92 over properties.

``is_matched_by_consume_queue`` runs on every consume-queue unit the pull
scans (tag code, and for SQL92 the optional bloom bitmap);
``is_matched_by_commit_log`` runs on the records that passed, with their
properties (decoded from the record when the caller has none).

Use :func:`build_message_filter` to get the right class for the broker's
``enablePropertyFilter`` / ``filterSupportRetry`` settings, and
:func:`parse_pull_subscription` for a pull that carries its own subscription
(sysFlag bit 0x4).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from broker.filter.consumer_filter_data import ConsumerFilterData, build_consumer_filter_data
from broker.filter.record_properties import RecordDecodeError, decode_record_properties
from broker.filter.selector_parser import FilterParseError

if TYPE_CHECKING:
    from broker.filter.consumer_filter_manager import ConsumerFilterManager
from common.filter import (
    SUB_ALL,
    ExpressionType,
    SubscriptionData,
    SubscriptionParseError,
    build_subscription_data,
)
from store.message_store import CqExtUnit

__all__ = [
    "FilterNotSupportedError",
    "ExpressionMessageFilter",
    "ExpressionForRetryMessageFilter",
    "build_message_filter",
    "parse_pull_subscription",
]

log = logging.getLogger("rocketmq.filter")

RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
PROPERTY_RETRY_TOPIC = "RETRY_TOPIC"

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class FilterNotSupportedError(FilterParseError):
    """SQL92 subscription while the broker has ``enablePropertyFilter=false`` (answer SYSTEM_ERROR)."""


class ExpressionMessageFilter:
    """MessageFilter of one pull (RocketMQ ExpressionMessageFilter).

    ``consumer_filter_manager`` is only needed for the bloom bitmap check (its
    bloom filter) and by the retry variant.
    """

    __slots__ = (
        "subscription_data",
        "consumer_filter_data",
        "consumer_filter_manager",
        "_match_all",
        "_tag_type",
        "_sub_all",
        "_codes",
        "_bloom_valid",
    )

    def __init__(
        self,
        subscription_data: SubscriptionData | None,
        consumer_filter_data: ConsumerFilterData | None = None,
        consumer_filter_manager: ConsumerFilterManager | None = None,
    ):
        self.subscription_data = subscription_data
        self.consumer_filter_data = consumer_filter_data
        self.consumer_filter_manager = consumer_filter_manager
        self._match_all = subscription_data is None or subscription_data.classFilterMode
        self._tag_type = subscription_data is None or ExpressionType.is_tag_type(subscription_data.expressionType)
        self._sub_all = subscription_data is not None and subscription_data.subString == SUB_ALL
        self._codes = frozenset(subscription_data.codeSet) if subscription_data is not None else frozenset()
        bloom = consumer_filter_manager.bloom_filter if consumer_filter_manager is not None else None
        self._bloom_valid = (
            consumer_filter_data is not None
            and bloom is not None
            and bloom.is_valid(consumer_filter_data.bloomFilterData)
        )

    def is_matched_by_consume_queue(self, tags_code: int | None, cq_ext_unit: CqExtUnit | None = None) -> bool:
        """Tag filter by hash code; SQL92 passes unless its bloom bitmap rules the message out."""
        if self._match_all:
            return True
        if self._tag_type:
            if tags_code is None or self._sub_all:
                return True
            if tags_code < _INT32_MIN or tags_code > _INT32_MAX:
                # not a tag hash (an unresolved ext address): let the consumer decide
                return True
            return tags_code in self._codes
        return self._bitmap_match(cq_ext_unit)

    def _bitmap_match(self, cq_ext_unit: CqExtUnit | None) -> bool:
        data = self.consumer_filter_data
        if (
            data is None
            or data.expression is None
            or data.compiledExpression is None
            or data.bloomFilterData is None
            or cq_ext_unit is None
            or not self._bloom_valid
        ):
            return True
        store_time, bitmap = cq_ext_unit.msg_store_time, cq_ext_unit.filter_bit_map
        if store_time is None or not data.is_msg_in_live(store_time):
            # stored before this filter existed: no bits were computed for it
            return True
        bloom = self.consumer_filter_manager.bloom_filter
        if not bitmap or len(bitmap) * 8 != data.bloomFilterData.bitNum:
            return True
        try:
            return bloom.is_hit(data.bloomFilterData, bitmap)
        except ValueError as e:
            log.error("bloom filter check failed for %s: %s", data.consumerGroup, e)
            return True

    def is_matched_by_commit_log(self, msg_buffer: Any, properties: dict[str, str] | None) -> bool:
        """SQL92: evaluate against the record's properties (decoded from ``msg_buffer`` if not given)."""
        if self._match_all or self._tag_type:
            return True
        return self._evaluate(self.consumer_filter_data, msg_buffer, properties)

    @staticmethod
    def _evaluate(data: ConsumerFilterData | None, msg_buffer: Any, properties: dict[str, str] | None) -> bool:
        if data is None or data.expression is None or data.compiledExpression is None:
            return True
        if properties is None and msg_buffer is not None:
            properties = _decode(msg_buffer)
        return data.compiledExpression.evaluate(properties)


def _decode(msg_buffer: Any) -> dict[str, str]:
    try:
        return decode_record_properties(msg_buffer)
    except RecordDecodeError as e:
        log.error("cannot read properties of a record to filter: %s", e)
        return {}


class ExpressionForRetryMessageFilter(ExpressionMessageFilter):
    """With ``filterSupportRetry``: messages of ``%RETRY%<group>`` are filtered with the
    group's SQL92 filter of their original topic (property ``RETRY_TOPIC``)."""

    __slots__ = ()

    def is_matched_by_commit_log(self, msg_buffer: Any, properties: dict[str, str] | None) -> bool:
        if self._match_all:
            return True
        sub = self.subscription_data
        is_retry_topic = sub.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
        if not is_retry_topic and self._tag_type:
            return True
        data = self.consumer_filter_data
        if is_retry_topic:
            if properties is None and msg_buffer is not None:
                properties = _decode(msg_buffer)
            real_topic = properties.get(PROPERTY_RETRY_TOPIC) if properties else None
            group = sub.topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
            manager = self.consumer_filter_manager
            data = manager.get(real_topic, group) if manager is not None and real_topic else None
        return self._evaluate(data, msg_buffer, properties)


def build_message_filter(
    subscription_data: SubscriptionData | None,
    consumer_filter_data: ConsumerFilterData | None = None,
    *,
    enable_property_filter: bool = False,
    filter_support_retry: bool = False,
    consumer_filter_manager: ConsumerFilterManager | None = None,
) -> ExpressionMessageFilter:
    """The MessageFilter for one pull.

    ``consumer_filter_data`` is the registered filter of the group (from
    ConsumerFilterManager.get, or parse_pull_subscription); when it is None
    for a SQL92 subscription, the subscription's expression is compiled here
    and FilterParseError is raised if it is invalid (SUBSCRIPTION_PARSE_FAILED).

    Raises FilterNotSupportedError (a FilterParseError; answer SYSTEM_ERROR
    "The broker does not support consumer to filter message by SQL92") for a
    non-TAG subscription when ``enable_property_filter`` is off.
    """
    if (
        subscription_data is not None
        and not ExpressionType.is_tag_type(subscription_data.expressionType)
        and not enable_property_filter
    ):
        raise FilterNotSupportedError(
            f"The broker does not support consumer to filter message by {subscription_data.expressionType}"
        )
    if (
        consumer_filter_data is None
        and subscription_data is not None
        and not ExpressionType.is_tag_type(subscription_data.expressionType)
    ):
        # No registered filter data given: compile the subscription's own expression
        # (cached), so a SQL92 pull still filters and a bad expression is reported.
        consumer_filter_data = build_consumer_filter_data(
            subscription_data.topic,
            "",
            subscription_data.subString,
            subscription_data.expressionType,
            subscription_data.subVersion,
        )
    cls = ExpressionForRetryMessageFilter if filter_support_retry else ExpressionMessageFilter
    return cls(subscription_data, consumer_filter_data, consumer_filter_manager)


def parse_pull_subscription(
    topic: str,
    consumer_group: str,
    subscription: str | None,
    expression_type: str | None,
    sub_version: int,
) -> tuple[SubscriptionData, ConsumerFilterData | None]:
    """Subscription carried by a PULL_MESSAGE with sysFlag bit 0x4.

    Returns the SubscriptionData and, for SQL92, freshly compiled filter data
    (not registered anywhere). Raises FilterParseError for anything that does
    not parse: answer SUBSCRIPTION_PARSE_FAILED.
    """
    try:
        sub = build_subscription_data(topic, subscription, expression_type)
    except SubscriptionParseError as e:
        raise FilterParseError(str(e)) from None
    sub.subVersion = sub_version
    if ExpressionType.is_tag_type(sub.expressionType):
        return sub, None
    data = build_consumer_filter_data(topic, consumer_group, sub.subString, sub.expressionType, sub_version)
    return sub, data

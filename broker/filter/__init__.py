"""Message filtering on the broker: TAG hash codes and SQL92 property expressions.

Public API (see each module):

* :func:`compile_expression` (expression.py) and :class:`FilterParseError`;
* :func:`build_message_filter`, :class:`ExpressionMessageFilter`,
  :class:`ExpressionForRetryMessageFilter`, :func:`parse_pull_subscription`
  (expression_message_filter.py);
* :class:`ConsumerFilterManager` / :class:`ConsumerFilterData`
  (consumerFilter.json);
* :class:`BloomFilter` and :class:`CommitLogDispatcherCalcBitMap` for the
  optional SQL92 bitmaps;
* :func:`decode_record_properties` for a CommitLog record's properties.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.filter.bloom_filter import BloomFilter, BloomFilterData
    from broker.filter.commit_log_dispatcher_calc_bit_map import CommitLogDispatcherCalcBitMap
    from broker.filter.consumer_filter_data import ConsumerFilterData, build_consumer_filter_data
    from broker.filter.consumer_filter_manager import ConsumerFilterManager, consumer_filter_path
    from broker.filter.expression import (
        EvaluationError,
        Expression,
        SqlExpression,
        TagExpression,
        clear_expression_cache,
        compile_expression,
    )
    from broker.filter.expression_message_filter import (
        ExpressionForRetryMessageFilter,
        ExpressionMessageFilter,
        FilterNotSupportedError,
        build_message_filter,
        parse_pull_subscription,
    )
    from broker.filter.record_properties import RecordDecodeError, decode_record_properties
    from broker.filter.selector_parser import FilterParseError

# name -> submodule; imported on first use (PEP 562): a broker starts with only the consumer
# filter manager loaded, the SQL92 compiler and its grammar come with the first SQL92 subscription.
_EXPORTS = {
    "BloomFilter": "bloom_filter",
    "BloomFilterData": "bloom_filter",
    "CommitLogDispatcherCalcBitMap": "commit_log_dispatcher_calc_bit_map",
    "ConsumerFilterData": "consumer_filter_data",
    "build_consumer_filter_data": "consumer_filter_data",
    "ConsumerFilterManager": "consumer_filter_manager",
    "consumer_filter_path": "consumer_filter_manager",
    "EvaluationError": "expression",
    "Expression": "expression",
    "SqlExpression": "expression",
    "TagExpression": "expression",
    "clear_expression_cache": "expression",
    "compile_expression": "expression",
    "ExpressionForRetryMessageFilter": "expression_message_filter",
    "ExpressionMessageFilter": "expression_message_filter",
    "FilterNotSupportedError": "expression_message_filter",
    "build_message_filter": "expression_message_filter",
    "parse_pull_subscription": "expression_message_filter",
    "RecordDecodeError": "record_properties",
    "decode_record_properties": "record_properties",
    "FilterParseError": "selector_parser",
}


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value  # later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "BloomFilter",
    "BloomFilterData",
    "CommitLogDispatcherCalcBitMap",
    "ConsumerFilterData",
    "ConsumerFilterManager",
    "EvaluationError",
    "Expression",
    "ExpressionForRetryMessageFilter",
    "ExpressionMessageFilter",
    "FilterNotSupportedError",
    "FilterParseError",
    "RecordDecodeError",
    "SqlExpression",
    "TagExpression",
    "build_consumer_filter_data",
    "build_message_filter",
    "clear_expression_cache",
    "compile_expression",
    "consumer_filter_path",
    "decode_record_properties",
    "parse_pull_subscription",
]

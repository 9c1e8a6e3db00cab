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

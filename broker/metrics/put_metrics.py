"""The send path's counters as Prometheus families: ``rocketmq_messages_in_total``,
``rocketmq_throughput_in_total`` {topic, message_type} and ``rocketmq_message_size`` {topic}; and
the pull side's highest pulled offset per queue (what ``rocketmq_consumer_inflight_messages`` needs).

The counting itself is BrokerStatsManager's ``inc_put``, one call per stored put into
:class:`common.stats_counters.TopicPutCounters`, which keeps the statistics' pending counts and
these counters together (compiled: about 50 ns a put). So the endpoint being on adds nothing to
the send path; :class:`PutMetrics` only reads the counters, on the scrape's thread, as copies.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily

from broker.broker_stats_manager import MESSAGE_SIZE_BUCKETS
from common.metrics_exporter import cumulative_buckets

__all__ = ["PutMetrics", "PutCounterSource", "PullOffsets", "MESSAGE_TYPES", "MESSAGE_SIZE_BUCKETS"]

#: 5.x's TopicMessageType names, in the order of a counter's per-type counts (common.stats_counters)
MESSAGE_TYPES = ("normal", "fifo", "delay", "transaction")


class PutCounterSource(Protocol):
    """The broker's put statistics (BrokerStatsManager): the counters, and the drop of deleted topics'."""

    @property
    def puts(self) -> Any: ...  # a common.stats_counters.TopicPutCounters

    def forget_topics(self, live_topics: set[str]) -> None: ...


class PutMetrics:
    """Renders the put counters (see the module docstring)."""

    def __init__(self, base_labels: dict[str, str], stats: PutCounterSource):
        self._names = list(base_labels)
        self._base = list(base_labels.values())
        self._stats = stats

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        names, base = self._names, self._base
        msgs = CounterMetricFamily("rocketmq_messages_in", "Total number of incoming messages",
                                   labels=[*names, "topic", "message_type"])
        thr = CounterMetricFamily("rocketmq_throughput_in", "Total traffic of incoming messages",
                                  labels=[*names, "topic", "message_type"])
        size = HistogramMetricFamily("rocketmq_message_size", "Incoming messages size", labels=[*names, "topic"])
        counters = list(self._stats.puts.table.items())  # one C-level copy: the loop may add topics meanwhile
        for topic, c in counters:
            m, b, counts = c.msgs, c.bytes, c.counts  # copies (the compiled twin makes new lists)
            for i, kind in enumerate(MESSAGE_TYPES):
                if m[i]:
                    msgs.add_metric([*base, topic, kind], m[i])
                    thr.add_metric([*base, topic, kind], b[i])
            if any(counts):
                size.add_metric([*base, topic], cumulative_buckets(MESSAGE_SIZE_BUCKETS, list(counts)), float(sum(b)))
        yield msgs
        yield thr
        yield size

    def forget(self, live_topics: set[str]) -> None:
        """Drop the counters of deleted topics (run by the periodic refresh, on the loop)."""
        self._stats.forget_topics(live_topics)


class PullOffsets:
    """Highest offset handed to each (group, topic, queue) by a pull: in flight = that minus the
    committed offset. Recorded once per pull response, not per message."""

    def __init__(self) -> None:
        self.table: dict[tuple[str, str, int], int] = {}

    def record(self, group: str, topic: str, queue_id: int, next_begin_offset: int) -> None:
        self.table[(group, topic, queue_id)] = next_begin_offset

    def get(self, group: str, topic: str, queue_id: int) -> int:
        return self.table.get((group, topic, queue_id), -1)

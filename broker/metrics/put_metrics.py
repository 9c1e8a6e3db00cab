"""The send path's counters: ``rocketmq_messages_in_total``, ``rocketmq_throughput_in_total``
{topic, message_type} and ``rocketmq_message_size`` {topic}; and the pull side's highest
pulled offset per queue (what ``rocketmq_consumer_inflight_messages`` needs).

Each topic has one :class:`TopicPutSlot` (found with one dict lookup): a put adds to plain
integers there, with no lock and no label lookup, and to the topic's pending counts of the
broker's put statistics, which the slot holds: with the endpoint on, the send path makes this
one call per stored put instead of BrokerStatsManager.inc_put (measured: a second call per
message, or one per read, cost the broker 2-3 µs per 1 KiB send, ~10 %). Only the event loop
writes; the scrape (another thread) reads copies, and prometheus-client renders them.
"""

from __future__ import annotations

from bisect import bisect_left as _bisect
from collections.abc import Iterator
from typing import Any, Protocol

from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily

from common import mixall
from common.message import MessageConst
from common.metrics_exporter import LocalHistogram, histogram_family

__all__ = ["PutMetrics", "PutCounterSource", "PullOffsets", "TopicPutSlot", "MESSAGE_TYPES", "MESSAGE_SIZE_BUCKETS"]

#: 5.x's TopicMessageType names, in the order of the slot's per-type counters.
MESSAGE_TYPES = ("normal", "fifo", "delay", "transaction")
_NORMAL, _FIFO, _DELAY, _TRANSACTION = range(4)
#: 5.x's view: 1 KiB, 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB.
MESSAGE_SIZE_BUCKETS = (1024.0, 4096.0, 512 * 1024.0, 1024 * 1024.0, 2 * 1024 * 1024.0, 4 * 1024 * 1024.0)
assert MESSAGE_SIZE_BUCKETS[:2] == (1024.0, 4096.0)  # on_put tests the first two bounds inline
_SCHEDULE = mixall.SCHEDULE_TOPIC
_HALF = mixall.RMQ_SYS_TRANS_HALF_TOPIC
_SHARDING = MessageConst.SHARDING_KEY


def _typed(s: TopicPutSlot, topic: str, msg: Any, nums: int, size: int) -> None:
    """The type of a single send whose topic object or properties say it may not be normal."""
    t = msg.topic
    if t != topic:
        kind = _DELAY if t == _SCHEDULE else _TRANSACTION if t == _HALF else _NORMAL
    else:
        kind = _FIFO if _SHARDING in msg.properties else _NORMAL
    s.msgs[kind] += nums
    s.bytes[kind] += size


class PutCounterSource(Protocol):
    """Where the always-on put statistics keep a topic's pending counts (BrokerStatsManager)."""

    def put_counter(self, topic: str) -> list[int]: ...


class TopicPutSlot:
    """Counts for one topic: normal messages and their bytes (``n``, ``b``), the other types' messages
    and bytes by type (``msgs``, ``bytes``, index as MESSAGE_TYPES; [0] for normal messages seen on
    the typed path), the size histogram's bucket counts, and the topic's pending list in the broker's
    put statistics (``[nums, size, calls, first ms]``)."""

    __slots__ = ("n", "b", "msgs", "bytes", "counts", "stats")

    def __init__(self, stats: list[int]) -> None:
        self.n = self.b = 0
        self.msgs = [0, 0, 0, 0]
        self.bytes = [0, 0, 0, 0]
        self.counts = [0] * (len(MESSAGE_SIZE_BUCKETS) + 1)
        self.stats = stats

    def histogram(self) -> LocalHistogram:
        """A copy as a LocalHistogram (its sum: every type's bytes)."""
        h = LocalHistogram(MESSAGE_SIZE_BUCKETS)
        h.counts = list(self.counts)
        h.total = float(self.b + sum(self.bytes))
        return h


class PutMetrics:
    """The send path's one call per stored put when the endpoint is on (``on_put``, in place of
    BrokerStatsManager.inc_put, whose counts it keeps too): a Python call per message is what
    the counting costs, so the statistics and the metrics share it, and a normal message of up
    to 1 KiB takes the fewest steps."""

    def __init__(self, base_labels: dict[str, str], stats: PutCounterSource):
        self._names = list(base_labels)
        self._base = list(base_labels.values())
        self._stats = stats
        self.slots: dict[str, TopicPutSlot] = {}
        # the slot of the last put's topic: puts come in runs to one topic (no dict lookup then)
        self._last_topic: str | None = None
        self._last_slot: TopicPutSlot | None = None

    def on_put(self, topic: str, nums: int, size: int, msg: Any = None) -> None:
        """``nums`` messages of ``size`` body bytes stored to ``topic`` (``msg``: the stored message
        of a single send, which tells its type; None for a batch, counted as normal messages)."""
        if topic is self._last_topic:
            s = self._last_slot
        else:
            s = self.slots.get(topic)
            if s is None:
                s = self.slots[topic] = TopicPutSlot(self._stats.put_counter(topic))
            self._last_topic, self._last_slot = topic, s
        c = s.stats  # BrokerStatsManager.inc_put's three additions
        c[0] += nums
        c[1] += size
        c[2] += 1
        # the broker has already parked delayed and prepared messages in their system topics; the
        # send path hands the topic object it built the message with (an identity test suffices)
        if msg is not None and (msg.topic is not topic or _SHARDING in msg.properties):
            _typed(s, topic, msg, nums, size)
        else:
            s.n += nums  # type: ignore[union-attr]
            s.b += size  # type: ignore[union-attr]
        if nums == 1:
            s.counts[0 if size <= 1024 else 1 if size <= 4096 else _bisect(MESSAGE_SIZE_BUCKETS, size)] += 1  # type: ignore[union-attr]
        else:  # a batch counts each message at its mean size
            s.counts[_bisect(MESSAGE_SIZE_BUCKETS, size / nums)] += nums  # type: ignore[union-attr]

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        names, base = self._names, self._base
        msgs = CounterMetricFamily("rocketmq_messages_in", "Total number of incoming messages",
                                   labels=[*names, "topic", "message_type"])
        thr = CounterMetricFamily("rocketmq_throughput_in", "Total traffic of incoming messages",
                                  labels=[*names, "topic", "message_type"])
        slots = list(self.slots.items())  # one C-level copy: the loop may add topics meanwhile
        for topic, s in slots:
            m, b = list(s.msgs), list(s.bytes)
            m[0] += s.n
            b[0] += s.b
            for i, kind in enumerate(MESSAGE_TYPES):
                if m[i]:
                    msgs.add_metric([*base, topic, kind], m[i])
                    thr.add_metric([*base, topic, kind], b[i])
        yield msgs
        yield thr
        yield histogram_family("rocketmq_message_size", "Incoming messages size", [*names, "topic"],
                               (([*base, topic], s.histogram()) for topic, s in slots))

    def forget(self, live_topics: set[str]) -> None:
        """Drop the slots of deleted topics (run by the periodic refresh, on the loop)."""
        for t in [t for t in self.slots if t not in live_topics]:
            del self.slots[t]
        self._last_topic = self._last_slot = None


class PullOffsets:
    """Highest offset handed to each (group, topic, queue) by a pull: in flight = that minus the
    committed offset. Recorded once per pull response, not per message."""

    def __init__(self) -> None:
        self.table: dict[tuple[str, str, int], int] = {}

    def record(self, group: str, topic: str, queue_id: int, next_begin_offset: int) -> None:
        self.table[(group, topic, queue_id)] = next_begin_offset

    def get(self, group: str, topic: str, queue_id: int) -> int:
        return self.table.get((group, topic, queue_id), -1)

"""The send path's counters: ``rocketmq_messages_in_total``, ``rocketmq_throughput_in_total``
{topic, message_type} and ``rocketmq_message_size`` {topic}; and the pull side's highest
pulled offset per queue (what ``rocketmq_consumer_inflight_messages`` needs).

Each topic has one :class:`TopicPutSlot` (found with one dict lookup): a put adds to plain
integers there, with no lock and no label lookup. Only the event loop writes; the scrape
(another thread) reads copies, and prometheus-client renders them.
"""

from __future__ import annotations

from bisect import bisect_left as _bisect
from collections.abc import Container, Iterator, Sequence
from typing import Any

from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily

from common import mixall
from common.message import MessageConst
from common.metrics_exporter import LocalHistogram, histogram_family
from store.message_store import PutMessageStatus

__all__ = ["PutMetrics", "PullOffsets", "TopicPutSlot", "MESSAGE_TYPES", "MESSAGE_SIZE_BUCKETS"]

#: 5.x's TopicMessageType names, in the order of the slot's per-type counters.
MESSAGE_TYPES = ("normal", "fifo", "delay", "transaction")
_NORMAL, _FIFO, _DELAY, _TRANSACTION = range(4)
#: 5.x's view: 1 KiB, 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB.
MESSAGE_SIZE_BUCKETS = (1024.0, 4096.0, 512 * 1024.0, 1024 * 1024.0, 2 * 1024 * 1024.0, 4 * 1024 * 1024.0)
assert MESSAGE_SIZE_BUCKETS[:2] == (1024.0, 4096.0)  # on_put tests the first two bounds inline
_SCHEDULE = mixall.SCHEDULE_TOPIC
_HALF = mixall.RMQ_SYS_TRANS_HALF_TOPIC
_SHARDING = MessageConst.SHARDING_KEY
_PUT_OK = PutMessageStatus.PUT_OK


class TopicPutSlot:
    """Counts for one topic: messages and bytes by message type, and the size histogram."""

    __slots__ = ("msgs", "bytes", "size")

    def __init__(self) -> None:
        self.msgs = [0, 0, 0, 0]
        self.bytes = [0, 0, 0, 0]
        self.size = LocalHistogram(MESSAGE_SIZE_BUCKETS)


def _add_run(s: TopicPutSlot, n: int, nb: int, c0: int, c1: int) -> None:
    s.msgs[_NORMAL] += n
    s.bytes[_NORMAL] += nb
    counts = s.size.counts
    counts[0] += c0
    counts[1] += c1


class PutMetrics:
    """Called by SendMessageProcessor for every stored put (``on_put``)."""

    def __init__(self, base_labels: dict[str, str]):
        self._names = list(base_labels)
        self._base = list(base_labels.values())
        self.slots: dict[str, TopicPutSlot] = {}
        # the slot of the last put's topic: puts come in runs to one topic (no dict lookup then)
        self._last_topic: str | None = None
        self._last_slot: TopicPutSlot | None = None

    def on_put(self, topic: str, msg: Any, nums: int, size: int) -> None:
        if topic is self._last_topic:
            s = self._last_slot
        else:
            s = self.slots.get(topic)
            if s is None:
                s = self.slots[topic] = TopicPutSlot()
            self._last_topic, self._last_slot = topic, s
        kind = _NORMAL
        if msg is not None:
            # the broker has already parked delayed and prepared messages in their system topics
            t = msg.topic
            if t is not topic and t != topic:
                kind = _DELAY if t == _SCHEDULE else _TRANSACTION if t == _HALF else _NORMAL
            elif _SHARDING in msg.properties:
                kind = _FIFO
        s.msgs[kind] += nums
        s.bytes[kind] += size
        h = s.size
        # LocalHistogram.observe, inlined (hot path); a batch counts each message at its mean size
        if nums == 1:
            h.counts[0 if size <= 1024 else 1 if size <= 4096 else _bisect(MESSAGE_SIZE_BUCKETS, size)] += 1
        else:
            h.counts[_bisect(MESSAGE_SIZE_BUCKETS, size / nums)] += nums
        h.total += size

    def on_puts(self, pending: Sequence[tuple], results: Sequence[Any], stored: Container[Any]) -> None:
        """:meth:`on_put` for the single sends of one read, in one call (the send path's usual case):
        ``pending`` the single sends as SendPutBatcher queues them (conn, request, msg, topic, size,
        queue id), ``results`` the store's result for each, ``stored`` the statuses whose message was
        stored. A run of normal messages of one topic with sizes in the first two buckets is summed
        in locals and added to the slot once: the per-message work is a few local additions."""
        slots = self.slots
        last: str | None = None
        s: TopicPutSlot | None = None
        n = nb = c0 = c1 = 0  # the current topic's run: normal messages, their bytes, bucket 0 / 1 counts
        for p, r in zip(pending, results, strict=False):  # equal lengths: SendPutBatcher.answer checked
            st = r.status
            if st is not _PUT_OK and (r.append_result is None or st not in stored):  # identity first
                continue
            msg, topic, size = p[2], p[3], p[4]
            if topic is not last:
                if s is not None:
                    _add_run(s, n, nb, c0, c1)
                    n = nb = c0 = c1 = 0
                s = slots.get(topic)
                if s is None:
                    s = slots[topic] = TopicPutSlot()
                last = topic
            t = msg.topic
            if t is not topic and t != topic:
                kind = _DELAY if t == _SCHEDULE else _TRANSACTION if t == _HALF else _NORMAL
            else:
                kind = _FIFO if _SHARDING in msg.properties else _NORMAL
            if kind == _NORMAL:
                n += 1
                nb += size
            else:
                s.msgs[kind] += 1  # type: ignore[union-attr]
                s.bytes[kind] += size  # type: ignore[union-attr]
            if size <= 1024:
                c0 += 1
            elif size <= 4096:
                c1 += 1
            else:
                s.size.counts[_bisect(MESSAGE_SIZE_BUCKETS, size)] += 1  # type: ignore[union-attr]
            s.size.total += size  # type: ignore[union-attr]
        if s is not None:
            _add_run(s, n, nb, c0, c1)
        self._last_topic, self._last_slot = None, None  # on_put finds its slot again

    def collect(self) -> Iterator[CounterMetricFamily | HistogramMetricFamily]:
        names, base = self._names, self._base
        msgs = CounterMetricFamily("rocketmq_messages_in", "Total number of incoming messages",
                                   labels=[*names, "topic", "message_type"])
        thr = CounterMetricFamily("rocketmq_throughput_in", "Total traffic of incoming messages",
                                  labels=[*names, "topic", "message_type"])
        slots = list(self.slots.items())  # one C-level copy: the loop may add topics meanwhile
        for topic, s in slots:
            m, b = list(s.msgs), list(s.bytes)
            for i, kind in enumerate(MESSAGE_TYPES):
                if m[i]:
                    msgs.add_metric([*base, topic, kind], m[i])
                    thr.add_metric([*base, topic, kind], b[i])
        yield msgs
        yield thr
        yield histogram_family("rocketmq_message_size", "Incoming messages size", [*names, "topic"],
                               (([*base, topic], s.size) for topic, s in slots))

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

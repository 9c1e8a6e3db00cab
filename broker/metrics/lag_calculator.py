"""ConsumerLagCalculator: the gauges that walk topics and groups, computed on a timer.

One refresh walks every (group, topic) with a committed offset or an online subscription
and every topic, reads queue offsets (and, per lagging group, one store timestamp per
queue) and publishes an immutable :class:`LagSnapshot`. A scrape only reads the last
snapshot, so its cost does not grow with topics × groups, and no scrape makes the broker
read its store. The walk yields to the loop every few milliseconds, so a broker with
thousands of topics never stalls its clients for long.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from common import mixall
from common.util import now_ms

__all__ = ["ConsumerLagCalculator", "LagSnapshot", "LagRow", "TopicRow"]

#: Longest stretch of work before the walk gives the loop back (seconds).
SLICE_S = 0.004


class OffsetStore(Protocol):
    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int: ...
    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int: ...
    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int: ...


@dataclass(slots=True)
class LagRow:
    group: str
    topic: str
    is_retry: bool
    lag: int
    lag_latency_ms: int
    inflight: int
    consumer_offset: int
    consumer_tps: float
    online: int
    msg_model: str


@dataclass(slots=True)
class TopicRow:
    topic: str
    max_offset: int
    put_tps: float


@dataclass(slots=True)
class LagSnapshot:
    lags: list[LagRow] = field(default_factory=list)
    topics: list[TopicRow] = field(default_factory=list)
    dlq: dict[str, int] = field(default_factory=dict)  # consumer group -> messages sent to its DLQ
    producer_connections: dict[tuple[str, int], int] = field(default_factory=dict)  # (language, version)
    consumer_connections: dict[tuple[str, str, int, str], int] = field(default_factory=dict)
    half_messages: int = 0
    broker_tps: float = 0.0
    broker_qps: float = 0.0
    took_ms: float = 0.0
    taken_at_ms: int = 0


class ConsumerLagCalculator:
    """Builds :class:`LagSnapshot` from the broker's tables (all passed in)."""

    def __init__(self, store: OffsetStore, topics: Any, offsets: Any, consumers: Any, producers: Any,
                 stats: Any, pull_offsets: Any):
        self.store = store
        self.topics = topics  # TopicConfigManager: .table
        self.offsets = offsets  # ConsumerOffsetManager: .table {topic@group: {qid: offset}}
        self.consumers = consumers  # ConsumerManager: .table {group: ConsumerGroupInfo}
        self.producers = producers  # ProducerManager: .group_channel_table
        self.stats = stats  # BrokerStatsManager
        self.pull_offsets = pull_offsets  # PullOffsets
        self.snapshot = LagSnapshot()
        self.refreshes = 0

    async def refresh(self) -> LagSnapshot:
        t_start = time.perf_counter()
        slice_end = t_start + SLICE_S
        snap = LagSnapshot()
        store = self.store
        now = now_ms()
        topic_table = self.topics.table
        stats = self.stats
        put_total = stats.put_total  # folds the pending puts into the stats items
        del put_total
        put_items = stats.sets["TOPIC_PUT_NUMS"]

        # topics: the producers' side
        for name in list(topic_table):
            tc = topic_table.get(name)
            if tc is None:
                continue
            total = 0
            for qid in range(tc.writeQueueNums):
                total += max(0, store.get_max_offset_in_queue(name, qid))
            it = put_items.get(name)
            snap.topics.append(TopicRow(name, total, it.minute_stats().tps if it is not None else 0.0))
            if time.perf_counter() > slice_end:
                await asyncio.sleep(0)
                slice_end = time.perf_counter() + SLICE_S
            if name.startswith(mixall.DLQ_GROUP_TOPIC_PREFIX) and it is not None:
                snap.dlq[name[len(mixall.DLQ_GROUP_TOPIC_PREFIX):]] = it.value

        # (group, topic) pairs: committed offsets, online subscriptions and pulls without a commit yet
        pairs: dict[tuple[str, str], None] = {}
        for key in list(self.offsets.table):
            topic, sep, group = key.partition("@")
            if sep:
                pairs[(group, topic)] = None
        for group, info in list(self.consumers.table.items()):
            for topic in list(info.subscription_table):
                pairs[(group, topic)] = None
        live_groups = self.consumers.table
        for key in list(self.pull_offsets.table):
            group, topic, _qid = key
            if (group, topic) not in pairs and group not in live_groups and len(self.pull_offsets.table) > 10_000:
                del self.pull_offsets.table[key]  # bounded: a pull of a group long gone is forgotten
                continue
            pairs[(group, topic)] = None
        for group, topic in pairs:
            row = self._lag_row(group, topic, now)
            if row is not None:
                snap.lags.append(row)
            if time.perf_counter() > slice_end:
                await asyncio.sleep(0)
                slice_end = time.perf_counter() + SLICE_S

        for table in list(self.producers.group_channel_table.values()):
            for info in list(table.values()):
                k = (str(info.language).lower(), info.version)
                snap.producer_connections[k] = snap.producer_connections.get(k, 0) + 1
        for group, info in list(self.consumers.table.items()):
            for ch in list(info.channel_info_table.values()):
                k = (group, str(ch.language).lower(), ch.version, str(info.consume_type).lower())
                snap.consumer_connections[k] = snap.consumer_connections.get(k, 0) + 1

        snap.half_messages = self._half_messages()
        snap.broker_tps = stats.put_tps()
        snap.broker_qps = stats.get_tps()
        snap.took_ms = (time.perf_counter() - t_start) * 1000.0
        snap.taken_at_ms = now
        self.snapshot = snap  # one reference swap: a scrape sees the old or the new, never half
        self.refreshes += 1
        return snap

    def _lag_row(self, group: str, topic: str, now: int) -> LagRow | None:
        tc = self.topics.table.get(topic)
        committed = self.offsets.table.get(topic + "@" + group) or {}
        qids = range(tc.readQueueNums) if tc is not None else sorted(committed)
        if not qids:
            return None
        store = self.store
        lag = inflight = offset_sum = 0
        earliest = 0
        for qid in qids:
            max_off = store.get_max_offset_in_queue(topic, qid)
            co = committed.get(qid, -1)
            if co < 0:
                co = store.get_min_offset_in_queue(topic, qid)
            offset_sum += co
            behind = max_off - co
            if behind > 0:
                lag += behind
                ts = store.get_message_store_timestamp(topic, qid, co)
                if ts > 0 and (earliest == 0 or ts < earliest):
                    earliest = ts
                pulled = self.pull_offsets.get(group, topic, qid)
                if pulled > co:
                    inflight += min(pulled, max_off) - co
        info = self.consumers.table.get(group)
        online = len(info.channel_info_table) if info is not None else 0
        model = str(info.message_model) if info is not None else ""
        it = self.stats.sets["GROUP_GET_NUMS"].get(topic + "@" + group)
        return LagRow(
            group=group, topic=topic, is_retry=topic.startswith(mixall.RETRY_GROUP_TOPIC_PREFIX),
            lag=lag, lag_latency_ms=max(0, now - earliest) if earliest else 0, inflight=inflight,
            consumer_offset=offset_sum, consumer_tps=it.minute_stats().tps if it is not None else 0.0,
            online=online, msg_model=model,
        )

    def _half_messages(self) -> int:
        """Prepared messages not yet checked: the half queue's end minus the checker's offset."""
        tc = self.topics.table.get(mixall.RMQ_SYS_TRANS_HALF_TOPIC)
        if tc is None:
            return 0
        committed = self.offsets.table.get(mixall.RMQ_SYS_TRANS_HALF_TOPIC + "@" + mixall.CID_SYS_RMQ_TRANS) or {}
        total = 0
        for qid in range(max(tc.readQueueNums, 1)):
            max_off = self.store.get_max_offset_in_queue(mixall.RMQ_SYS_TRANS_HALF_TOPIC, qid)
            co = committed.get(qid, -1)
            if co < 0:
                co = self.store.get_min_offset_in_queue(mixall.RMQ_SYS_TRANS_HALF_TOPIC, qid)
            total += max(0, max_off - co)
        return total

"""PutMetrics' counters: message types, size buckets at their edges, and topics dropped by the refresh."""

from __future__ import annotations

from broker.metrics.put_metrics import MESSAGE_SIZE_BUCKETS, PutMetrics
from common import mixall


class _Msg:
    def __init__(self, topic: str, props: dict | None = None):
        self.topic = topic
        self.properties = props or {}


def _counts(pm: PutMetrics, topic: str) -> list[int]:
    return list(pm.slots[topic].size.counts)


def test_sizes_fall_in_their_buckets_and_types_are_told_apart():
    pm = PutMetrics({"cluster": "c"})
    for size in (1, 1024, 1025, 4096, 4097, 512 * 1024, 512 * 1024 + 1, 5 * 1024 * 1024):
        pm.on_put("T", _Msg("T"), 1, size)
    assert _counts(pm, "T") == [2, 2, 2, 1, 0, 0, 1]
    assert len(MESSAGE_SIZE_BUCKETS) + 1 == len(_counts(pm, "T"))
    pm.on_put("T", None, 4, 4 * 2000)  # a batch: each message at the mean size
    assert _counts(pm, "T")[1] == 6
    pm.on_put("T", _Msg(mixall.SCHEDULE_TOPIC), 1, 10)
    pm.on_put("T", _Msg(mixall.RMQ_SYS_TRANS_HALF_TOPIC), 1, 10)
    pm.on_put("T", _Msg("T", {"__SHARDINGKEY": "k"}), 1, 10)
    s = pm.slots["T"]
    assert s.msgs == [12, 1, 1, 1]  # normal, fifo, delay, transaction
    assert s.size.total == sum((1, 1024, 1025, 4096, 4097, 512 * 1024, 512 * 1024 + 1, 5 * 1024 * 1024)) + 8000 + 30


def test_a_topic_dropped_by_the_refresh_starts_again_from_zero():
    pm = PutMetrics({"cluster": "c"})
    pm.on_put("Gone", _Msg("Gone"), 1, 100)
    pm.on_put("Kept", _Msg("Kept"), 1, 100)
    pm.on_put("Gone", _Msg("Gone"), 1, 100)
    pm.forget({"Kept"})
    assert set(pm.slots) == {"Kept"}
    pm.on_put("Gone", _Msg("Gone"), 1, 100)  # re-created after the delete: a fresh slot that scrapes see
    assert pm.slots["Gone"].msgs[0] == 1

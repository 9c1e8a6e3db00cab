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


def test_one_reads_puts_in_one_call_count_as_one_call_per_put():
    """on_puts (the send batcher's once-per-read call) gives what on_put per stored message gives:
    types, sizes, topics; puts that were not stored are not counted."""
    from types import SimpleNamespace

    from store.message_store import PutMessageStatus as S

    def result(status):
        ar = SimpleNamespace(msg_num=1) if status is not S.CREATE_MAPEDFILE_FAILED else None
        return SimpleNamespace(status=status, append_result=ar)

    sends = [("A", _Msg("A"), 100, S.PUT_OK), ("A", _Msg("A", {"__SHARDINGKEY": "k"}), 5000, S.PUT_OK),
             ("B", _Msg(mixall.SCHEDULE_TOPIC), 2000, S.FLUSH_DISK_TIMEOUT),
             ("B", _Msg(mixall.RMQ_SYS_TRANS_HALF_TOPIC), 600 * 1024, S.PUT_OK),
             ("A", _Msg("A"), 70, S.MESSAGE_ILLEGAL), ("A", _Msg("A"), 80, S.CREATE_MAPEDFILE_FAILED),
             ("A", _Msg("A"), 4096, S.SLAVE_NOT_AVAILABLE)]
    stored = {S.PUT_OK, S.FLUSH_DISK_TIMEOUT, S.FLUSH_SLAVE_TIMEOUT, S.SLAVE_NOT_AVAILABLE}
    one = PutMetrics({"cluster": "c"})
    for topic, msg, size, status in sends:
        if status in stored:
            one.on_put(topic, msg, 1, size)
    bulk = PutMetrics({"cluster": "c"})
    pending = [(None, None, msg, topic, size, 0) for topic, msg, size, _st in sends]
    bulk.on_puts(pending, [result(st) for *_x, st in sends], stored)
    assert set(bulk.slots) == set(one.slots) == {"A", "B"}
    for t in ("A", "B"):
        a, b = one.slots[t], bulk.slots[t]
        assert (a.msgs, a.bytes, a.size.counts, a.size.total) == (b.msgs, b.bytes, b.size.counts, b.size.total)
    assert bulk.slots["A"].msgs == [2, 1, 0, 0] and bulk.slots["B"].msgs == [0, 0, 1, 1]

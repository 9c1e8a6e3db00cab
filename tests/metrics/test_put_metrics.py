"""The put counters as PutMetrics renders them: message types, size buckets at their edges, topics dropped
by the refresh, the broker statistics kept by the same call; the rpc latency timer of the send path."""

from __future__ import annotations

from broker.broker_stats_manager import TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, BrokerStatsManager
from broker.metrics.put_metrics import MESSAGE_SIZE_BUCKETS, PutMetrics
from common import mixall


class _Msg:
    def __init__(self, topic: str, props: dict | None = None):
        self.topic = topic
        self.properties = props or {}


def _counts(stats: BrokerStatsManager, topic: str) -> list[int]:
    return list(stats.puts.table[topic].counts)


def _by_type(pm: PutMetrics, name: str) -> dict[tuple[str, str], float]:
    """``rocketmq_messages_in`` / ``rocketmq_throughput_in`` as collected: (topic, type) -> value."""
    fam = next(f for f in pm.collect() if f.name == name)
    return {(x.labels["topic"], x.labels["message_type"]): x.value for x in fam.samples}


def test_sizes_fall_in_their_buckets_and_types_are_told_apart():
    stats = BrokerStatsManager("c")
    pm = PutMetrics({"cluster": "c"}, stats)
    put = stats.inc_put
    for size in (1, 1024, 1025, 4096, 4097, 512 * 1024, 512 * 1024 + 1, 5 * 1024 * 1024):
        put("T", 1, size, _Msg("T"))
    assert _counts(stats, "T") == [2, 2, 2, 1, 0, 0, 1]
    assert len(MESSAGE_SIZE_BUCKETS) + 1 == len(_counts(stats, "T"))
    put("T", 4, 4 * 2000, None)  # a batch: each message at the mean size
    assert _counts(stats, "T")[1] == 6
    put("T", 1, 10, _Msg(mixall.SCHEDULE_TOPIC))
    put("T", 1, 10, _Msg(mixall.RMQ_SYS_TRANS_HALF_TOPIC))
    put("T", 1, 10, _Msg("T", {"__SHARDINGKEY": "k"}))
    put("T", 1, 10, _Msg("".join("T")))  # the topic by equality, another str object: still normal
    sizes = sum((1, 1024, 1025, 4096, 4097, 512 * 1024, 512 * 1024 + 1, 5 * 1024 * 1024))
    assert _by_type(pm, "rocketmq_messages_in") == {("T", "normal"): 13, ("T", "fifo"): 1, ("T", "delay"): 1,
                                                   ("T", "transaction"): 1}
    assert _by_type(pm, "rocketmq_throughput_in") == {("T", "normal"): sizes + 8000 + 10, ("T", "fifo"): 10,
                                                     ("T", "delay"): 10, ("T", "transaction"): 10}
    hist = next(f for f in pm.collect() if f.name == "rocketmq_message_size")
    (total,) = [x.value for x in hist.samples if x.name.endswith("_sum")]
    (count,) = [x.value for x in hist.samples if x.name.endswith("_count")]
    assert (total, count) == (sizes + 8000 + 40, 16)


def test_a_topic_dropped_by_the_refresh_starts_again_from_zero_and_its_statistics_are_kept():
    stats = BrokerStatsManager("c")
    pm = PutMetrics({"cluster": "c"}, stats)
    stats.inc_put("Gone", 1, 100, _Msg("Gone"))
    stats.inc_put("Kept", 1, 100, _Msg("Kept"))
    stats.inc_put("Gone", 1, 100, _Msg("Gone"))
    pm.forget({"Kept"})
    assert set(stats.puts.table) == {"Kept"}
    gone = stats.get_item(TOPIC_PUT_NUMS, "Gone")  # its pending puts were folded before the drop
    assert (gone.value, gone.times) == (2, 2)
    stats.inc_put("Gone", 1, 100, _Msg("Gone"))  # re-created after the delete: a fresh counter that scrapes see
    assert _by_type(pm, "rocketmq_messages_in")[("Gone", "normal")] == 1
    assert stats.put_total == 4


def test_folds_take_the_statistics_and_leave_the_metrics_counts_growing():
    """The statistics (GET_BROKER_RUNTIME_INFO, VIEW_BROKER_STATS_DATA, the lag refresh) fold and zero
    their pending counts; the Prometheus counters, in the same per-topic counter, keep growing."""
    stats = BrokerStatsManager("c")
    pm = PutMetrics({"cluster": "c"}, stats)
    puts = [("A", 1, 100), ("A", 1, 5000), ("B", 16, 16 * 1024), ("A", 1, 70)]
    for round_ in range(3):
        for topic, nums, size in puts:
            stats.inc_put(topic, nums, size, _Msg(topic) if nums == 1 else None)
        assert stats.put_total == (round_ + 1) * 19  # folds
        assert stats.puts.table["A"].calls == 0
    a_nums, a_size = stats.get_item(TOPIC_PUT_NUMS, "A"), stats.get_item(TOPIC_PUT_SIZE, "A")
    assert (a_nums.value, a_nums.times, a_size.value) == (9, 9, 3 * 5170)
    b_nums = stats.get_item(TOPIC_PUT_NUMS, "B")
    assert (b_nums.value, b_nums.times) == (48, 3)  # a batch counts once
    counts = _by_type(pm, "rocketmq_messages_in")
    assert counts[("A", "normal")] == 9 and counts[("B", "normal")] == 48


def test_the_rpc_timer_of_one_code_pair_counts_n_answers_in_one_call():
    import time

    from remoting.rpc_latency import RpcLatencyHook

    hook = RpcLatencyHook({"cluster": "c"})
    send_ok = hook.timer(310, 0)
    send_ok(time.perf_counter(), 3)  # three answers of one read, well under a millisecond
    send_ok(time.perf_counter() - 0.004, 2)  # two more, 4 ms old: the (3, 5] ms bucket
    (h,) = hook.histograms.values()
    assert h.counts[0] == 3 and h.counts[2] == 2 and sum(h.counts) == 5
    assert 8.0 <= h.total < 9.5
    assert hook.timer(310, 0) == send_ok  # the same histogram, not a second series
    (fam,) = hook.collect()
    labels = {s.labels["request_code"] for s in fam.samples}
    assert labels == {"send_message_v2"}

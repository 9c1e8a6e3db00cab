"""common.stats_counters: the compiled twin against the pure one and against a reference written
here from the contract (bisect_left buckets, 5.x message types), over random puts and observations."""

from __future__ import annotations

import math
import random
import time

import pytest

from common import stats_counters

SCHEDULE, HALF, SHARDING = "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "__SHARDINGKEY"
BOUNDS = (1024.0, 4096.0, 512 * 1024.0, 1024 * 1024.0, 2 * 1024 * 1024.0, 4 * 1024 * 1024.0)
TWINS = [pytest.param(stats_counters.pure, id="pure"),
         pytest.param(stats_counters.compiled, id="compiled",
                      marks=pytest.mark.skipif(stats_counters.compiled is None, reason="the C twin was not built"))]


class _Msg:
    __slots__ = ("topic", "properties")

    def __init__(self, topic: str, props: dict[str, str]):
        self.topic, self.properties = topic, props


def _bucket(bounds: tuple[float, ...], v: float) -> int:
    """The reference: the first bound the value does not exceed, else +Inf."""
    for i, b in enumerate(bounds):
        if not v > b:
            return i
    return len(bounds)


class _Reference:
    def __init__(self) -> None:
        self.table: dict[str, dict] = {}

    def put(self, topic: str, nums: int, size: int, msg: _Msg | None) -> None:
        c = self.table.setdefault(topic, {"nums": 0, "size": 0, "calls": 0, "msgs": [0] * 4, "bytes": [0] * 4,
                                          "counts": [0] * (len(BOUNDS) + 1)})
        kind = 0
        if msg is not None:
            if msg.topic == SCHEDULE and topic != SCHEDULE:
                kind = 2
            elif msg.topic == HALF and topic != HALF:
                kind = 3
            elif msg.topic == topic and SHARDING in msg.properties:
                kind = 1
        c["nums"] += nums
        c["size"] += size
        c["calls"] += 1
        c["msgs"][kind] += nums
        c["bytes"][kind] += size
        if nums >= 1:
            c["counts"][_bucket(BOUNDS, size / nums)] += nums


def _random_puts(rng: random.Random, n: int) -> list[tuple[str, int, int, _Msg | None]]:
    topics = ["A", "B", "TopicC", "".join("A")]  # the last: equal to "A", another object
    out = []
    for _ in range(n):
        topic = rng.choice(topics)
        nums = rng.choice([1, 1, 1, 2, 16, 0])
        size = rng.choice([0, 1, 1023, 1024, 1025, 4096, 4097, 512 * 1024, 512 * 1024 + 1, 5 << 20,
                           rng.randrange(1, 8 << 20)]) * max(nums, 1)
        if nums == 1:
            stored_topic = rng.choice([topic, topic, "".join(topic), SCHEDULE, HALF, "Other"])
            props = {SHARDING: "k"} if rng.random() < 0.3 else {"UNIQ_KEY": "u"}
            msg = _Msg(stored_topic, props)
        else:
            msg = None
        out.append((topic, nums, size, msg))
    return out


def _snapshot(counters) -> dict:
    return {t: {"nums": c.nums, "size": c.size, "calls": c.calls, "msgs": list(c.msgs), "bytes": list(c.bytes),
                "counts": list(c.counts)} for t, c in counters.table.items()}


def test_the_twins_and_the_reference_count_the_same_puts():
    if stats_counters.compiled is None:
        pytest.skip("the C twin was not built")
    rng = random.Random(7)
    twins = [t.TopicPutCounters(BOUNDS, SCHEDULE, HALF, SHARDING, lambda: 42)
             for t in (stats_counters.pure, stats_counters.compiled)]
    ref = _Reference()
    for topic, nums, size, msg in _random_puts(rng, 5000):
        for t in twins:
            t.put(topic, nums, size, msg)
        ref.put(topic, nums, size, msg)
    want = ref.table
    assert _snapshot(twins[0]) == want
    assert _snapshot(twins[1]) == want
    assert all(c.first_ms == 42 for t in twins for c in t.table.values())


@pytest.mark.parametrize("twin", TWINS)
def test_take_zeroes_the_pending_counts_only_and_remove_starts_a_topic_again(twin):
    ticks = iter(range(100, 200))
    counters = twin.TopicPutCounters(BOUNDS, SCHEDULE, HALF, SHARDING, lambda: next(ticks))
    counters.put("T", 1, 10, _Msg("T", {}))
    counters.put("T", 4, 4000)
    assert counters.table["T"].take() == (5, 4010, 2, 100)
    assert counters.table["T"].take() == (0, 0, 0, 100)
    assert list(counters.table["T"].msgs) == [5, 0, 0, 0] and sum(counters.table["T"].counts) == 5
    counters.remove("T")
    counters.remove("never there")
    assert "T" not in counters.table
    counters.put("T", 1, 10)  # the last-topic shortcut must not reach the removed counter
    assert counters.table["T"].take() == (1, 10, 1, 101)
    assert counters.counter("U").first_ms == 102 and counters.counter("U") is counters.table["U"]


@pytest.mark.parametrize("twin", TWINS)
def test_bad_arguments_are_refused(twin):
    with pytest.raises(ValueError):
        twin.TopicPutCounters((2.0, 1.0), SCHEDULE, HALF, SHARDING, lambda: 0)
    with pytest.raises(ValueError):
        twin.Histogram(tuple(float(i) for i in range(stats_counters.MAX_BOUNDS + 1)))
    with pytest.raises(ValueError):
        twin.Histogram(())
    counters = twin.TopicPutCounters(BOUNDS, SCHEDULE, HALF, SHARDING, lambda: 0)
    with pytest.raises(AttributeError):
        counters.put("T", 1, 10, object())  # a msg without a topic


def test_the_histogram_twins_agree_with_the_reference():
    if stats_counters.compiled is None:
        pytest.skip("the C twin was not built")
    bounds = (1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0)
    rng = random.Random(3)
    values = [*bounds, 0.0, -1.0, math.inf, math.nan, 3000.5] + [rng.uniform(-5, 4000) for _ in range(2000)]
    hs = [t.Histogram(bounds) for t in (stats_counters.pure, stats_counters.compiled)]
    want = [0] * (len(bounds) + 1)
    for v in values:
        times = rng.randrange(1, 4)
        for h in hs:
            h.observe(v, times)
        want[_bucket(bounds, v)] += times
    for h in hs:
        assert list(h.counts) == want and tuple(h.bounds) == bounds
        assert math.isnan(h.total)  # a NaN observed poisons the sum in both, as prometheus-client's would
    finite = [t.Histogram(bounds) for t in (stats_counters.pure, stats_counters.compiled)]
    for h in finite:
        for v in values:
            if math.isfinite(v):
                h.observe(v, 2)
    assert list(finite[0].counts) == list(finite[1].counts)
    assert finite[0].total == pytest.approx(finite[1].total) == pytest.approx(
        sum(2 * v for v in values if math.isfinite(v)))


@pytest.mark.parametrize("twin", TWINS)
def test_since_observes_the_milliseconds_from_a_perf_counter_reading(twin):
    h = twin.Histogram((1.0, 3.0, 5.0))
    h.since(time.perf_counter(), 3)  # now: well under a millisecond
    h.since(time.perf_counter() - 0.004, 2)  # 4 ms ago: the (3, 5] bucket
    h.since(time.perf_counter() - 60.0)  # a minute: +Inf
    assert list(h.counts) == [3, 0, 2, 1]
    assert 60_008.0 <= h.total < 60_100.0

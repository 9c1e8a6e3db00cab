"""BrokerStatsManager: put counts recorded on the hot path show up in items, totals and samples."""

from __future__ import annotations

from broker.broker_stats_manager import BROKER_PUT_NUMS, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, BrokerStatsManager


def test_put_counts_reach_items_totals_and_samples():
    s = BrokerStatsManager("C")
    s.inc_put("A", 1, 100)
    s.inc_put("A", 16, 1600)  # a batch counts once
    s.inc_put("B", 1, 10)
    assert s.put_total == 18
    a = s.get_item(TOPIC_PUT_NUMS, "A")
    assert (a.value, a.times) == (17, 2)
    assert (s.get_item(TOPIC_PUT_SIZE, "A").value, s.get_item(TOPIC_PUT_SIZE, "B").value) == (1700, 10)
    broker = s.get_item(BROKER_PUT_NUMS, "C")
    assert (broker.value, broker.times) == (18, 3)
    # later puts are folded by the next sample and counted in the minute window
    s.inc_put("B", 2, 20)
    s.sample()
    b = s.sets[TOPIC_PUT_NUMS]["B"]
    assert (b.value, b.times) == (3, 2) and b.minute[-1][1:] == (3, 2)
    assert s.put_total == 20 and s.get_item(TOPIC_PUT_NUMS, "B").minute_stats().sum == 3
    assert s.put_tps() >= 0.0

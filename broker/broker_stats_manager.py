"""BrokerStatsManager (minimal): message put/get counters for runtime info and consume TPS.

Counting is a few dict increments per request; per-message work is avoided
(batches add their count once).
"""

from __future__ import annotations

import time
from collections import defaultdict

__all__ = ["BrokerStatsManager"]


class _Rate:
    """Events per second over the last completed ~10 s window."""

    __slots__ = ("count", "window_start", "last_tps")

    def __init__(self) -> None:
        self.count = 0
        self.window_start = time.monotonic()
        self.last_tps = 0.0

    def add(self, n: int) -> None:
        now = time.monotonic()
        if now - self.window_start >= 10.0:
            self.last_tps = self.count / (now - self.window_start)
            self.count = 0
            self.window_start = now
        self.count += n

    def tps(self) -> float:
        now = time.monotonic()
        elapsed = now - self.window_start
        if elapsed >= 10.0:
            return self.count / elapsed
        return self.last_tps if self.last_tps else (self.count / elapsed if elapsed > 1.0 else 0.0)


class BrokerStatsManager:
    """Totals since start plus rolling rates used by GET_BROKER_RUNTIME_INFO / GET_CONSUME_STATS."""

    def __init__(self) -> None:
        self.put_total = 0
        self.get_total = 0
        self.put_total_today_morning = 0
        self.get_total_today_morning = 0
        self.topic_put_nums: dict[str, int] = defaultdict(int)
        self.topic_put_size: dict[str, int] = defaultdict(int)
        self.group_get: dict[str, _Rate] = {}
        self.put_rate = _Rate()
        self.get_rate = _Rate()
        self.put_total_yesterday_morning = 0
        self.get_total_yesterday_morning = 0
        self._day = time.localtime().tm_yday

    def roll_day(self) -> None:
        """At the first look after local midnight, today's totals become the morning marks (RocketMQ's
        msgPutTotalTodayMorning / ...YesterdayMorning)."""
        day = time.localtime().tm_yday
        if day != self._day:
            self._day = day
            self.put_total_yesterday_morning = self.put_total_today_morning
            self.get_total_yesterday_morning = self.get_total_today_morning
            self.put_total_today_morning = self.put_total
            self.get_total_today_morning = self.get_total

    def inc_put(self, topic: str, nums: int, size: int) -> None:
        self.put_total += nums
        self.topic_put_nums[topic] += nums
        self.topic_put_size[topic] += size
        self.put_rate.add(nums)

    def inc_get(self, group: str, topic: str, nums: int) -> None:
        self.get_total += nums
        key = topic + "@" + group
        r = self.group_get.get(key)
        if r is None:
            r = self.group_get[key] = _Rate()
        r.add(nums)
        self.get_rate.add(nums)

    def group_get_tps(self, group: str, topic: str) -> float:
        r = self.group_get.get(topic + "@" + group)
        return r.tps() if r is not None else 0.0

"""BrokerStatsManager: put/get statistics per topic, group and broker (RocketMQ's StatsItemSet).

Each stats item keeps a running value and call count; a sampler (every 10 s)
snapshots them into three windows, as RocketMQ does: the last minute (samples
every 10 s), the last hour (every 10 min) and the last day (every hour). A
window's ``sum`` is the growth between its first and last sample, ``tps`` that
growth per second and ``avgpt`` the growth per call (a batch counts once).

The put hot path is one call per stored put, ``inc_put(topic, nums, size, msg)``, into
:class:`common.stats_counters.TopicPutCounters` (compiled where built): per topic it keeps
the pending nums, size and calls, and, in the same call, what the Prometheus put counters
read (messages and bytes by message type, the message size histogram), so metrics on or off
the send path does the same work. The pending counts reach the stats items only when someone
looks (a sample, a read of an item or of the totals); a fold takes and zeroes them.
"""

from __future__ import annotations

import time
from collections import deque

from broker.role_state import RoleState
from common import mixall
from common.message import MessageConst
from common.stats_counters import TopicPutCounters
from store.dispatch import DispatcherBase, DispatchRequest

__all__ = [
    "BrokerStatsManager",
    "StatsItem",
    "StatsSnapshot",
    "TOPIC_PUT_NUMS",
    "TOPIC_PUT_SIZE",
    "GROUP_GET_NUMS",
    "GROUP_GET_SIZE",
    "BROKER_PUT_NUMS",
    "BROKER_GET_NUMS",
    "MESSAGE_SIZE_BUCKETS",
    "SlavePutStatsDispatcher",
]

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"

#: the put counters' message size buckets, 5.x's view: 1 KiB, 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB
MESSAGE_SIZE_BUCKETS = (1024.0, 4096.0, 512 * 1024.0, 1024 * 1024.0, 2 * 1024 * 1024.0, 4 * 1024 * 1024.0)

_MINUTE_KEEP, _HOUR_KEEP, _DAY_KEEP = 7, 7, 25
_HOUR_STEP_MS, _DAY_STEP_MS = 10 * 60_000, 3_600_000


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class StatsSnapshot:
    """``sum``, ``tps`` and ``avgpt`` of one window (BrokerStatsItem in the wire body)."""

    __slots__ = ("sum", "tps", "avgpt")

    def __init__(self, sum_: int = 0, tps: float = 0.0, avgpt: float = 0.0):
        self.sum = sum_
        self.tps = tps
        self.avgpt = avgpt

    def to_obj(self) -> dict:
        return {"avgpt": self.avgpt, "sum": self.sum, "tps": self.tps}


class StatsItem:
    """A running value + call count with minute/hour/day samples of (time, value, times)."""

    __slots__ = ("value", "times", "minute", "hour", "day", "_last_hour", "_last_day")

    def __init__(self, created_ms: int | None = None) -> None:
        self.value = 0
        self.times = 0
        self.minute: deque = deque(maxlen=_MINUTE_KEEP)
        self.hour: deque = deque(maxlen=_HOUR_KEEP)
        self.day: deque = deque(maxlen=_DAY_KEEP)
        self._last_hour = 0
        self._last_day = 0
        self.sample(_now_ms() if created_ms is None else created_ms)

    def add(self, value: int, times: int = 1) -> None:
        self.value += value
        self.times += times

    def sample(self, now: int) -> None:
        snap = (now, self.value, self.times)
        self.minute.append(snap)
        if now - self._last_hour >= _HOUR_STEP_MS:
            self.hour.append(snap)
            self._last_hour = now
        if now - self._last_day >= _DAY_STEP_MS:
            self.day.append(snap)
            self._last_day = now

    @staticmethod
    def _compute(samples: deque, now: int, value: int, times: int) -> StatsSnapshot:
        if not samples:
            return StatsSnapshot()
        first = samples[0]
        # The running value counts as the newest sample so a fresh item reports at once.
        total = value - first[1]
        elapsed = now - first[0]
        calls = times - first[2]
        tps = total * 1000.0 / elapsed if elapsed > 0 else 0.0
        return StatsSnapshot(total, tps, total / calls if calls > 0 else 0.0)

    def minute_stats(self) -> StatsSnapshot:
        return self._compute(self.minute, _now_ms(), self.value, self.times)

    def hour_stats(self) -> StatsSnapshot:
        return self._compute(self.hour, _now_ms(), self.value, self.times)

    def day_stats(self) -> StatsSnapshot:
        return self._compute(self.day, _now_ms(), self.value, self.times)


class BrokerStatsManager:
    """Stats item sets by name; totals since start for GET_BROKER_RUNTIME_INFO."""

    def __init__(self, cluster_name: str = "DefaultCluster") -> None:
        self.cluster_name = cluster_name
        self.sets: dict[str, dict[str, StatsItem]] = {
            name: {}
            for name in (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, GROUP_GET_NUMS, GROUP_GET_SIZE, BROKER_PUT_NUMS, BROKER_GET_NUMS)
        }
        self._put_total = 0
        self.get_total = 0
        # per topic: the puts not yet folded into the TOPIC_PUT_* / BROKER_PUT_NUMS items, and the
        # metrics' cumulative counts by type and size
        self.puts = TopicPutCounters(MESSAGE_SIZE_BUCKETS, mixall.SCHEDULE_TOPIC, mixall.RMQ_SYS_TRANS_HALF_TOPIC,
                                     MessageConst.SHARDING_KEY, _now_ms)
        #: ``inc_put(topic, nums, size, msg=None)``: one stored put of ``nums`` messages of ``size`` body
        #: bytes (``msg``: the stored message of a single send, which tells its type; see TopicPutCounters)
        self.inc_put = self.puts.put
        self.put_total_today_morning = 0
        self.get_total_today_morning = 0
        self.put_total_yesterday_morning = 0
        self.get_total_yesterday_morning = 0
        self._day = time.localtime().tm_yday
        self._broker_put = self._item(BROKER_PUT_NUMS, cluster_name)
        self._broker_get = self._item(BROKER_GET_NUMS, cluster_name)

    def _item(self, name: str, key: str, created_ms: int | None = None) -> StatsItem:
        items = self.sets[name]
        it = items.get(key)
        if it is None:
            it = items[key] = StatsItem(created_ms)
        return it

    def get_item(self, name: str, key: str) -> StatsItem | None:
        self._fold_puts()
        s = self.sets.get(name)
        return None if s is None else s.get(key)

    @property
    def put_total(self) -> int:
        """Messages put since start (msgPutTotalTodayNow)."""
        self._fold_puts()
        return self._put_total

    def _fold_puts(self) -> None:
        """Add the pending puts to the stats items and zero them (event loop only: the hot path adds
        to the same counters)."""
        total = 0
        calls_all = 0
        for topic, c in list(self.puts.table.items()):
            if not c.calls:
                continue
            nums, size, calls, first_ms = c.take()
            # a new item starts at the first put, not at the fold (its rates count from there)
            self._item(TOPIC_PUT_NUMS, topic, first_ms).add(nums, calls)
            self._item(TOPIC_PUT_SIZE, topic, first_ms).add(size, calls)
            total += nums
            calls_all += calls
        if calls_all:
            self._put_total += total
            self._broker_put.add(total, calls_all)

    def forget_topics(self, live_topics: set[str]) -> None:
        """Drop the put counters of topics not in ``live_topics`` (deleted ones), after folding
        their pending puts into the stats items."""
        self._fold_puts()
        for t in [t for t in self.puts.table if t not in live_topics]:
            self.puts.remove(t)

    # -- hot path ----------------------------------------------------------------

    def inc_get(self, group: str, topic: str, nums: int, size: int = 0) -> None:
        self.get_total += nums
        key = topic + "@" + group
        self._item(GROUP_GET_NUMS, key).add(nums)
        if size:
            self._item(GROUP_GET_SIZE, key).add(size)
        self._broker_get.add(nums)

    # -- reading -------------------------------------------------------------------

    def group_get_tps(self, group: str, topic: str) -> float:
        it = self.get_item(GROUP_GET_NUMS, topic + "@" + group)
        return it.minute_stats().tps if it is not None else 0.0

    def put_tps(self) -> float:
        self._fold_puts()
        return self._broker_put.minute_stats().tps

    def get_tps(self) -> float:
        return self._broker_get.minute_stats().tps

    def sample(self) -> None:
        """Snapshot every item (call every 10 s)."""
        self._fold_puts()
        now = _now_ms()
        for items in self.sets.values():
            for it in items.values():
                it.sample(now)

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


class SlavePutStatsDispatcher(DispatcherBase):
    """A CommitLog dispatcher that counts what a SLAVE's reput dispatches as puts.

    A slave's messages arrive by replication, not by SEND_MESSAGE, so without this its
    msgPutTotalTodayNow and topic put stats stay 0; 4.9.7's reput counts them per topic on a
    SLAVE. The role is read per call, so a DLedger role change takes effect at once; a
    master's records come in batches (one call per batch), so it costs a master next to nothing.
    """

    __slots__ = ("_inc_put", "_role")

    def __init__(self, stats: BrokerStatsManager, role: RoleState) -> None:
        self._inc_put = stats.inc_put
        self._role = role

    def dispatch(self, request: DispatchRequest) -> None:
        if self._role.is_slave:
            self._inc_put(request.topic, 1, request.msg_size)

    def dispatch_many(self, requests: list[DispatchRequest]) -> None:
        if self._role.is_slave:
            inc = self._inc_put
            for r in requests:
                inc(r.topic, 1, r.msg_size)

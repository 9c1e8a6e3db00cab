"""Latency-based broker avoidance for sends (Java MQFaultStrategy + LatencyFaultToleranceImpl)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from client.topic_publish_info import TopicPublishInfo
from remoting.body.consumer import MessageQueue

__all__ = ["MQFaultStrategy", "LatencyFaultTolerance"]

LATENCY_MAX = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_DURATION = (0, 0, 30000, 60000, 120000, 180000, 600000)


@dataclass(slots=True)
class _FaultItem:
    name: str
    current_latency: int
    start_timestamp: float  # monotonic ms when the broker becomes usable again

    def is_available(self) -> bool:
        return _now_ms() >= self.start_timestamp


def _now_ms() -> float:
    return time.monotonic() * 1000


class LatencyFaultTolerance:
    """Brokers that recently failed or answered slowly, with the time they become usable again."""

    def __init__(self) -> None:
        self.table: dict[str, _FaultItem] = {}

    def update(self, name: str, latency_ms: int, not_available_ms: int) -> None:
        self.table[name] = _FaultItem(name, latency_ms, _now_ms() + not_available_ms)

    def is_available(self, name: str) -> bool:
        item = self.table.get(name)
        return item is None or item.is_available()

    def remove(self, name: str) -> None:
        self.table.pop(name, None)

    def pick_one_at_least(self) -> str | None:
        """A broker among the better half of the faulty ones (Java picks the same way)."""
        items = sorted(self.table.values(), key=lambda i: (not i.is_available(), i.current_latency, i.start_timestamp))
        if not items:
            return None
        half = max(len(items) // 2, 1)
        return items[random.randrange(half)].name


class MQFaultStrategy:
    """Queue selection that skips brokers in their penalty window when ``enabled``."""

    def __init__(self, enabled: bool = False):
        self.enabled = enabled
        self.fault = LatencyFaultTolerance()

    def select_one_message_queue(self, info: TopicPublishInfo, last_broker_name: str | None) -> MessageQueue:
        if not self.enabled:
            return info.select_one_message_queue(last_broker_name)
        mqs = info.message_queues
        for _ in range(len(mqs)):
            mq = mqs[info.send_which_queue.next() % len(mqs)]
            if self.fault.is_available(mq.brokerName):
                return mq
        not_best = self.fault.pick_one_at_least()
        if not_best is not None:
            for mq in mqs:
                if mq.brokerName == not_best:
                    return mq
            self.fault.remove(not_best)
        return info.select_one_message_queue()

    def update_fault_item(self, broker_name: str, latency_ms: int, isolation: bool) -> None:
        if not self.enabled:
            return
        duration = self._compute_not_available(30000 if isolation else latency_ms)
        self.fault.update(broker_name, latency_ms, duration)

    @staticmethod
    def _compute_not_available(latency_ms: int) -> int:
        for i in range(len(LATENCY_MAX) - 1, -1, -1):
            if latency_ms >= LATENCY_MAX[i]:
                return NOT_AVAILABLE_DURATION[i]
        return 0

"""RebalanceLockManager: per (group, MessageQueue) locks for orderly consumers (memory only)."""

from __future__ import annotations

import time

from remoting.body.consumer import MessageQueue

__all__ = ["RebalanceLockManager", "LOCK_MAX_LIVE_TIME_MS"]

#: A lock not refreshed for this long may be taken by another client (rocketmq.broker.rebalance.lockMaxLiveTime).
LOCK_MAX_LIVE_TIME_MS = 60_000


class RebalanceLockManager:
    """``{group: {MessageQueue: [clientId, lastUpdateMs]}}``."""

    def __init__(self, max_live_ms: int = LOCK_MAX_LIVE_TIME_MS):
        self.max_live_ms = max_live_ms
        self.table: dict[str, dict[MessageQueue, list]] = {}

    def try_lock_batch(self, group: str, mqs: list[MessageQueue], client_id: str) -> list[MessageQueue]:
        """Lock what is free, expired or already ours; returns the queues ``client_id`` now holds."""
        now = time.monotonic() * 1000
        locks = self.table.setdefault(group, {})
        granted = []
        for mq in mqs:
            entry = locks.get(mq)
            if entry is None or entry[0] == client_id or now - entry[1] > self.max_live_ms:
                locks[mq] = [client_id, now]
                granted.append(mq)
        return granted

    def unlock_batch(self, group: str, mqs: list[MessageQueue], client_id: str) -> None:
        locks = self.table.get(group)
        if not locks:
            return
        for mq in mqs:
            entry = locks.get(mq)
            if entry is not None and entry[0] == client_id:
                del locks[mq]
        if not locks:
            del self.table[group]

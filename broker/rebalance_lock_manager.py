"""RebalanceLockManager: which client holds each (group, MessageQueue) for orderly consumption.

Memory only, as in RocketMQ (locks are lost on restart). A lock not refreshed
for ``max_live_ms`` (60 s, ``rocketmq.broker.rebalance.lockMaxLiveTime``) may
be taken by another client. The broker does not check these locks on pull:
RocketMQ 4.9.7's PullMessageProcessor ignores them and orderly clients only
consume queues they locked (spec broker-behaviour.md §11).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: not needed to start a broker
    from remoting.body.consumer import MessageQueue

__all__ = ["RebalanceLockManager", "LockEntry", "LOCK_MAX_LIVE_TIME_MS"]

LOCK_MAX_LIVE_TIME_MS = 60_000


def _monotonic_ms() -> float:
    return time.monotonic() * 1000.0


class LockEntry:
    """Holder and last refresh of one queue lock."""

    __slots__ = ("client_id", "last_update")

    def __init__(self, client_id: str, last_update: float):
        self.client_id = client_id
        self.last_update = last_update


class RebalanceLockManager:
    """``{group: {MessageQueue: LockEntry}}`` with RocketMQ's grant rules."""

    def __init__(self, max_live_ms: int = LOCK_MAX_LIVE_TIME_MS, clock: Callable[[], float] = _monotonic_ms):
        self.max_live_ms = max_live_ms
        self.clock = clock
        self.table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def _expired(self, e: LockEntry, now: float) -> bool:
        return now - e.last_update > self.max_live_ms

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        """True when ``client_id`` holds a live lock on ``mq`` (refreshes it, as RocketMQ does)."""
        e = self.table.get(group, {}).get(mq)
        now = self.clock()
        if e is not None and e.client_id == client_id and not self._expired(e, now):
            e.last_update = now
            return True
        return False

    def try_lock(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        """Grant when free, already ours (refreshed) or the holder's lock expired."""
        if self.is_locked(group, mq, client_id):
            return True
        locks = self.table.setdefault(group, {})
        now = self.clock()
        e = locks.get(mq)
        if e is None:
            locks[mq] = LockEntry(client_id, now)
            return True
        if e.client_id == client_id or self._expired(e, now):
            e.client_id = client_id
            e.last_update = now
            return True
        return False

    def try_lock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> list[MessageQueue]:
        """Lock what can be locked; returns the queues ``client_id`` holds now (request order, no duplicates)."""
        granted: list[MessageQueue] = []
        seen: set[MessageQueue] = set()
        for mq in mqs:
            if mq in seen:
                continue
            seen.add(mq)
            if self.try_lock(group, mq, client_id):
                granted.append(mq)
        return granted

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        """Release the queues of ``mqs`` that ``client_id`` holds; others' locks are left alone."""
        locks = self.table.get(group)
        if not locks:
            return
        for mq in mqs:
            e = locks.get(mq)
            if e is not None and e.client_id == client_id:
                del locks[mq]

    def holder(self, group: str, mq: MessageQueue) -> str | None:
        """The client holding a live lock on ``mq``, if any (diagnostics)."""
        e = self.table.get(group, {}).get(mq)
        if e is None or self._expired(e, self.clock()):
            return None
        return e.client_id

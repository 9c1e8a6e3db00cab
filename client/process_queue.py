"""ProcessQueue: the messages of one queue pulled but not yet consumed (Java ProcessQueue).

The consume offset to commit is always the smallest offset still in flight
(or one past the largest pulled when nothing is in flight), so a crash never
skips an unconsumed message.
"""

from __future__ import annotations

import bisect
import time

from common.message import MessageExt

__all__ = ["ProcessQueue", "REBALANCE_LOCK_MAX_LIVE_TIME", "REBALANCE_LOCK_INTERVAL"]

REBALANCE_LOCK_MAX_LIVE_TIME = 30.0
REBALANCE_LOCK_INTERVAL = 20.0
PULL_MAX_IDLE_TIME = 120.0


class ProcessQueue:
    """Messages of one queue keyed by queue offset; tracks count, size, locks and drop state."""

    def __init__(self) -> None:
        self._offsets: list[int] = []  # sorted
        self._msgs: dict[int, MessageExt] = {}
        self.msg_size = 0
        self.queue_offset_max = 0
        self.dropped = False
        self.last_pull_timestamp = time.monotonic()
        self.last_consume_timestamp = time.monotonic()
        self.locked = False
        self.last_lock_timestamp = 0.0
        self.consuming = False
        self.try_unlock_times = 0
        # orderly: messages taken for consumption but not yet committed
        self._consuming: dict[int, MessageExt] = {}

    @property
    def msg_count(self) -> int:
        return len(self._msgs) + len(self._consuming)

    def put_messages(self, msgs: list[MessageExt]) -> bool:
        """Add pulled messages; True when the orderly consumer should be (re)started."""
        for m in msgs:
            off = m.queue_offset
            if off in self._msgs:
                continue
            bisect.insort(self._offsets, off)
            self._msgs[off] = m
            self.msg_size += len(m.body)
            self.queue_offset_max = max(self.queue_offset_max, off)
        dispatch = bool(self._msgs) and not self.consuming
        if dispatch:
            self.consuming = True
        return dispatch

    def remove_messages(self, msgs: list[MessageExt]) -> int:
        """Drop consumed messages; returns the offset to commit (-1 when the queue held nothing)."""
        if not self._msgs:
            return -1
        for m in msgs:
            old = self._msgs.pop(m.queue_offset, None)
            if old is not None:
                i = bisect.bisect_left(self._offsets, m.queue_offset)
                if i < len(self._offsets) and self._offsets[i] == m.queue_offset:
                    del self._offsets[i]
                self.msg_size -= len(old.body)
        self.last_consume_timestamp = time.monotonic()
        return self._offsets[0] if self._offsets else self.queue_offset_max + 1

    def info(self, commit_offset: int) -> dict:
        """The Java ProcessQueueInfo bean (ConsumerRunningInfo.mqTable value); times in epoch ms."""
        # Our timestamps are monotonic seconds; Java tools expect wall-clock milliseconds.
        mono, wall = time.monotonic(), time.time()

        def ms(ts: float) -> int:
            return int((wall - (mono - ts)) * 1000) if ts else 0

        pending = sorted(self._consuming)
        return {
            "cachedMsgCount": len(self._msgs),
            "cachedMsgMaxOffset": self._offsets[-1] if self._offsets else 0,
            "cachedMsgMinOffset": self._offsets[0] if self._offsets else 0,
            "cachedMsgSizeInMiB": self.msg_size // (1024 * 1024),
            "commitOffset": commit_offset,
            "droped": self.dropped,
            "lastConsumeTimestamp": ms(self.last_consume_timestamp),
            "lastLockTimestamp": ms(self.last_lock_timestamp),
            "lastPullTimestamp": ms(self.last_pull_timestamp),
            "locked": self.locked,
            "transactionMsgCount": len(pending),
            "transactionMsgMaxOffset": pending[-1] if pending else 0,
            "transactionMsgMinOffset": pending[0] if pending else 0,
            "tryUnlockTimes": self.try_unlock_times,
        }

    def max_span(self) -> int:
        return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    def is_lock_expired(self) -> bool:
        return time.monotonic() - self.last_lock_timestamp > REBALANCE_LOCK_MAX_LIVE_TIME

    def is_pull_expired(self) -> bool:
        return time.monotonic() - self.last_pull_timestamp > PULL_MAX_IDLE_TIME

    # -- orderly ----------------------------------------------------------------------------

    def take_messages(self, n: int) -> list[MessageExt]:
        """Move up to ``n`` lowest-offset messages into the consuming set."""
        out = []
        while self._offsets and len(out) < n:
            off = self._offsets.pop(0)
            m = self._msgs.pop(off)
            self._consuming[off] = m
            out.append(m)
        if not out:
            self.consuming = False
        return out

    def commit(self) -> int:
        """Forget the consuming set; returns the offset to commit (-1 if none)."""
        if not self._consuming:
            return -1
        off = max(self._consuming) + 1
        for m in self._consuming.values():
            self.msg_size -= len(m.body)
        self._consuming.clear()
        return off

    def make_message_to_consume_again(self, msgs: list[MessageExt]) -> None:
        for m in msgs:
            self._consuming.pop(m.queue_offset, None)
            self._msgs[m.queue_offset] = m
            bisect.insort(self._offsets, m.queue_offset)

    def clear(self) -> None:
        self._offsets.clear()
        self._msgs.clear()
        self._consuming.clear()
        self.msg_size = 0

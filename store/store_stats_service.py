"""StoreStatsService: how long puts took (RocketMQ's putMessageDistributeTime) and the longest one.

The store counts its puts itself (a plain int on the append path, no clock read); this service
buckets the elapsed times the put paths report and answers the runtime-info figures.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

__all__ = ["StoreStatsService", "PUT_TIME_BUCKETS"]

#: RocketMQ's putMessageDistributeTime bucket names, in order.
PUT_TIME_BUCKETS = ("[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]", "[500ms~1s]",
                    "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]")
_PUT_TIME_LIMITS = (0, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000)  # upper bounds, exclusive


class StoreStatsService:
    """Put-time buckets; ``put_calls()`` says how many puts there were in all (the first bucket is
    every put not counted elsewhere, so a put of 0 ms needs no call)."""

    def __init__(self, put_calls: Callable[[], int]) -> None:
        self._put_calls = put_calls
        self._counts = [0] * len(PUT_TIME_BUCKETS)
        self.put_message_entire_time_max = 0

    def record_put_time(self, elapsed_ms: int, puts: int = 1) -> None:
        """Count ``puts`` puts that took ``elapsed_ms``."""
        if elapsed_ms > self.put_message_entire_time_max:
            self.put_message_entire_time_max = elapsed_ms
        if elapsed_ms > 0:
            self._counts[bisect.bisect_right(_PUT_TIME_LIMITS, elapsed_ms)] += puts

    def put_message_distribute_time(self) -> list[int]:
        """Puts per PUT_TIME_BUCKETS bucket since start."""
        counts = list(self._counts)
        counts[0] = max(0, self._put_calls() - sum(counts))
        return counts

    def distribute_time_text(self) -> str:
        """The runtime-info value: ``[<=0ms]:N [0~10ms]:N ...``."""
        return "".join(f"{desc}:{n} " for desc, n in zip(PUT_TIME_BUCKETS, self.put_message_distribute_time(),
                                                         strict=True))

    def runtime_info(self) -> dict[str, str]:
        """The put-time keys of the broker's runtime info."""
        # RocketMQ's format: "[<=0ms]:N [0~10ms]:N ... [10s~]:N " (trailing space included)
        return {"putMessageDistributeTime": self.distribute_time_text(),
                "putMessageEntireTimeMax": str(self.put_message_entire_time_max)}

"""RateLimitedLog: one log line per key and interval, with how many were held back.

For events that can repeat thousands of times a second (every send refused while the disk
is full): the first occurrence is logged at once, later ones at most once per interval with
the count of those not logged. RocketMQ logs such refusals once per 50,000.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["RateLimitedLog"]

_MAX_KEYS = 1024


class RateLimitedLog:
    """``log(key, msg, *args)`` logs through ``logger`` at ``level`` at most once per ``interval_s`` per key."""

    __slots__ = ("_logger", "_level", "_interval", "_clock", "_state")

    def __init__(self, logger: logging.Logger, level: int = logging.WARNING, interval_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._level = level
        self._interval = interval_s
        self._clock = clock
        self._state: dict[object, list] = {}  # key -> [next time allowed, held back since]

    def log(self, key: object, msg: str, *args: object) -> bool:
        """Log now or count it; True when a line was written."""
        now = self._clock()
        st = self._state.get(key)
        if st is not None and now < st[0]:
            st[1] += 1
            return False
        held = st[1] if st is not None else 0
        if st is None and len(self._state) >= _MAX_KEYS:
            self._state.clear()
        self._state[key] = [now + self._interval, 0]
        if held:
            self._logger.log(self._level, msg + " (%d more like it not logged)", *args, held)
        else:
            self._logger.log(self._level, msg, *args)
        return True

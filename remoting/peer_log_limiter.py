"""Rate-limited logging per peer host, for what a peer can make us log at will (malformed frames).

One line per host per interval; what is skipped in between is counted and reported in one line
when the interval ends, so a flood of bad frames costs a few lines, not one per frame, and the
operator still sees how many came.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

__all__ = ["PeerLogLimiter"]


class PeerLogLimiter:
    """``log(level, peer, msg, *args)``: the first event of a host per ``interval`` is logged."""

    def __init__(self, logger: logging.Logger, interval: float = 10.0, *, max_peers: int = 4096,
                 clock: Callable[[], float] = time.monotonic):
        self._log = logger
        self.interval = interval
        self._max_peers = max_peers
        self._clock = clock
        # host -> [window start, events skipped in the window, level of the first skipped, summary armed]
        self._peers: dict[str, list] = {}

    def log(self, level: int, peer: str, msg: str, *args: object) -> None:
        host = peer.rpartition(":")[0] or peer  # every connection of a host shares one budget
        now = self._clock()
        entry = self._peers.get(host)
        if entry is not None and now - entry[0] < self.interval:
            if not entry[1]:
                entry[2] = level
            entry[1] += 1
            if not entry[3]:
                entry[3] = self._arm(host, entry[0] + self.interval - now)
            return
        if entry is not None and entry[1]:
            self._report(host)
        if entry is None and len(self._peers) >= self._max_peers:
            self._prune(now)
        self._peers[host] = [now, 0, level, False]
        self._log.log(level, msg, *args)

    def _arm(self, host: str, delay: float) -> bool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False  # reported when the host's next event comes
        loop.call_later(max(delay, 0.0), self._report, host)
        return True

    def _report(self, host: str) -> None:
        entry = self._peers.get(host)
        if entry is None:
            return
        skipped, entry[1], entry[3] = entry[1], 0, False
        if skipped:
            self._log.log(entry[2], "%d more like it from %s in the last %.0f s (not logged one by one)",
                          skipped, host, self.interval)

    def _prune(self, now: float) -> None:
        for host in [h for h, e in self._peers.items() if now - e[0] >= self.interval and not e[1]]:
            del self._peers[host]
        while len(self._peers) >= self._max_peers:  # still full: forget the oldest
            host = next(iter(self._peers))
            self._report(host)
            del self._peers[host]

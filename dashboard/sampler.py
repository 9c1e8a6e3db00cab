"""A small in-process sampler: broker in/out TPS and group lag over the last minutes, for the sparklines.

Its latest group tables also serve the group list while fresh (one sample every few seconds instead of
one GET_BROKER_CONSUME_STATS per broker per page view); writes drop them. It samples only while someone
looks (an API call in the last two minutes), so an idle dashboard costs the brokers nothing.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time

from client.admin_ext import MQAdminExt
from client.admin_ops import FAILURES, GroupTables, cluster_overview, fetch_group_tables, group_rows
from common.util import cancel_and_wait

__all__ = ["Sampler"]

log = logging.getLogger(__name__)


class Sampler:
    def __init__(self, admin: MQAdminExt, interval: float, points: int):
        self.admin = admin
        self.interval = interval
        self.points = points
        self.times: collections.deque[int] = collections.deque(maxlen=points)
        self.brokers: dict[str, dict[str, collections.deque[float]]] = {}
        self.groups: dict[str, collections.deque[int]] = {}
        self._task: asyncio.Task | None = None
        self.tables: GroupTables | None = None
        self.last_view = time.monotonic()
        self.idle_after = 120.0

    def touch(self) -> None:
        self.last_view = time.monotonic()

    def fresh_tables(self) -> GroupTables | None:
        """The last sample's group tables when younger than two intervals."""
        t = self.tables
        if t is None or time.time() * 1000 - t.at > 2000 * self.interval:
            return None
        return t

    def invalidate(self) -> None:
        self.tables = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="dashboard-sampler")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    def _series(self, table: dict, key: str, fields: tuple[str, ...]) -> dict:
        s = table.get(key)
        if s is None:
            s = table[key] = {f: collections.deque([0] * len(self.times), maxlen=self.points) for f in fields}
        return s

    async def sample_once(self) -> None:
        overview = await cluster_overview(self.admin)
        tables = await fetch_group_tables(self.admin)
        self.tables = tables
        self.times.append(int(time.time() * 1000))
        seen = set()
        for b in overview["brokers"]:
            key = f"{b['brokerName']}/{b['brokerId']}"
            seen.add(key)
            s = self._series(self.brokers, key, ("inTps", "outTps"))
            s["inTps"].append(b.get("inTps", 0.0))
            s["outTps"].append(b.get("outTps", 0.0))
        for key, s in self.brokers.items():
            if key not in seen:
                for d in s.values():
                    d.append(0)
        for name, g in group_rows(tables).items():
            d = self.groups.get(name)
            if d is None:
                d = self.groups[name] = collections.deque([0] * (len(self.times) - 1), maxlen=self.points)
            d.append(g["diff"])

    async def _run(self) -> None:
        while True:
            try:
                if time.monotonic() - self.last_view < self.idle_after or not self.times:
                    await self.sample_once()
            except FAILURES as e:
                log.info("sample failed: %s", e)
            await asyncio.sleep(self.interval)

    def snapshot(self) -> dict:
        return {"interval": self.interval, "times": list(self.times),
                "brokers": {k: {f: list(d) for f, d in s.items()} for k, s in sorted(self.brokers.items())},
                "groups": {k: list(d) for k, d in sorted(self.groups.items())}}

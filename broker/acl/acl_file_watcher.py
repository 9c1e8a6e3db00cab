"""Polls the ACL files and reloads changed ones (RocketMQ's AclFileWatchService, 5 s there).

Polling (a stat per file) rather than inotify keeps it portable; the period is short enough that
a change is in force well within 5 s.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

__all__ = ["AclFileWatcher", "Reloadable"]

log = logging.getLogger("broker.acl")


class Reloadable(Protocol):
    def reload_changed(self) -> bool: ...


class AclFileWatcher:
    def __init__(self, manager: Reloadable, period_s: float = 1.0):
        self.manager = manager
        self.period_s = period_s
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="acl-file-watcher")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.period_s)
            try:
                self.manager.reload_changed()
            except Exception:  # never let the watcher die: the last good ACL stays in force
                log.exception("ACL reload failed")

"""TransactionalMessageCheckService: runs a check round every ``transactionCheckInterval`` (master only)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from broker.transaction.transactional_message_service import (
    TransactionalMessageService,
    TransactionCheckListener,
)
from common.util import cancel_all

__all__ = ["TransactionalMessageCheckService"]

log = logging.getLogger(__name__)


class TransactionalMessageCheckService:
    """One asyncio task: wait ``interval_ms``, run :meth:`TransactionalMessageService.check`, repeat.

    ``settings()`` returns ``(interval_ms, timeout_ms, check_max)`` and is read
    each round, so UPDATE_BROKER_CONFIG changes apply without a restart.
    """

    def __init__(self, service: TransactionalMessageService, listener: TransactionCheckListener,
                 settings: Callable[[], tuple[int, int, int]]):
        self.service = service
        self.listener = listener
        self.settings = settings
        self.rounds = 0
        self._task: asyncio.Task | None = None
        self._wakeup = asyncio.Event()

    @property
    def started(self) -> bool:
        return self._task is not None

    def start(self) -> None:
        if self._task is None:
            self._wakeup = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="transaction-check")
            log.info("transaction check service started")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_all((task,))

    def wakeup(self) -> None:
        """Run a round now (tests, admin)."""
        self._wakeup.set()

    async def run_once_async(self) -> None:
        """One check pass (it lets other work run every few messages and while its puts are stored)."""
        _, timeout_ms, check_max = self.settings()
        await self.service.check(timeout_ms, check_max, self.listener)
        self.rounds += 1

    async def _run(self) -> None:
        while True:
            interval_ms = max(self.settings()[0], 10)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), interval_ms / 1000.0)
            self._wakeup.clear()
            try:
                await self.run_once_async()
            except Exception:  # noqa: BLE001 - the service must keep running
                log.exception("transaction check round failed")

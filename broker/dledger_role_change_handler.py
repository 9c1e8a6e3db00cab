"""DLedgerRoleChangeHandler: turns DLedger role changes into broker role changes (dledger.md §10).

Role changes are handled one at a time, in the order DLedger reports them (one
task draining a queue, RocketMQ's single-threaded executor):

* CANDIDATE: become slave unless already one;
* FOLLOWER: become slave (brokerId = the number in ``selfId`` + 1, n0 -> 1);
* LEADER: wait until this node is still the leader of that term and its store
  has dispatched everything (log empty, or ledger end == committed index and the
  reput is not behind), rebuild the queue-offset table from the consume queues,
  then become master (brokerId 0). Leadership lost while waiting: nothing.

The broker's ``change_role`` does the rest (store role, read-only processors,
schedule and transaction services via its role-change listeners, SlaveSynchronize,
immediate re-registration with the NameServers).
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from dledger.protocol import Role
from store.config import BrokerRole

__all__ = ["DLedgerRoleChangeHandler", "slave_broker_id"]

log = logging.getLogger("broker")

_WAIT_STEP_S = 0.01


def slave_broker_id(self_id: str, peers: list[str] | None = None) -> int:
    """RocketMQ's slave id for a DLedger member: ``int(selfId[1:]) + 1``; for ids not shaped
    ``<letter><number>``, the 1-based place of ``self_id`` among the sorted peer ids."""
    m = re.fullmatch(r".(\d+)", self_id)
    if m:
        return int(m.group(1)) + 1
    ids = sorted(peers or [self_id])
    return (ids.index(self_id) if self_id in ids else len(ids)) + 1


class DLedgerRoleChangeHandler:
    """Follows the DLedger member of ``broker.store.commit_log`` (a DLedgerCommitLog)."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.store = broker.store
        self.commit_log = broker.store.commit_log
        cfg = self.commit_log.dledger_config
        self.self_id = cfg.selfId
        self.slave_id = slave_broker_id(cfg.selfId, list(cfg.peer_map()))
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self.handled: list[tuple[Role, int]] = []  # what was acted on, in order (diagnostics)

    def install(self) -> DLedgerRoleChangeHandler:
        """Subscribe to the commit log's role changes and stop with the broker."""
        self.commit_log.role_listener = self.on_role_change
        self.broker.add_service(None, self.stop)
        self.broker.dledger_role_change_handler = self
        return self

    def on_role_change(self, role: Role, term: int, leader_id: str | None) -> None:
        """DLedger's callback (on the loop): queue the change."""
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="dledger-role-change")
        self._queue.put_nowait((role, term))

    async def _run(self) -> None:
        while True:
            role, term = await self._queue.get()
            try:
                await self._handle(role, term)
            except Exception:  # noqa: BLE001 - keep following the roles
                log.exception("handling DLedger role %s (term %d) failed", role.value, term)

    async def _handle(self, role: Role, term: int) -> None:
        if role is Role.LEADER:
            if await self._wait_caught_up(term):
                self.store.commit_log.topic_queue_table = self.store.consume_queues.max_offsets()
                self.handled.append((role, term))
                await self.broker.change_role(master=True)
            return
        if role is Role.CANDIDATE and self.store.config.brokerRole is BrokerRole.SLAVE:
            return
        self.handled.append((role, term))
        await self.broker.change_role(master=False, broker_id=self.slave_id)

    def _still_leader(self, term: int) -> bool:
        server = self.commit_log.server
        return server.core is not None and server.is_leader and server.term == term

    def _caught_up(self) -> bool:
        cl = self.commit_log
        end = cl.ledger_end_index()
        if end < 0:
            return True
        return end == cl.committed_index() and self.store.dispatch_behind_bytes() <= 0

    async def _wait_caught_up(self, term: int) -> bool:
        while self._still_leader(term):
            if self._caught_up():
                return True
            self.store.reput.wakeup()
            await asyncio.sleep(_WAIT_STEP_S)
        log.info("lost DLedger leadership of term %d before taking over as master", term)
        return False

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

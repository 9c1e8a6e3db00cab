"""DLedgerRoleChangeHandler: turns DLedger role changes into broker role changes (dledger.md §10).

Role changes are handled one at a time, in the order DLedger reports them (one
task draining a queue, RocketMQ's single-threaded executor):

* CANDIDATE: become slave unless already one;
* FOLLOWER: become slave (brokerId = the number in ``selfId`` + 1, n0 -> 1); when the
  leader changed, follow the new master at once: forget the old master's address (no
  more syncing from a dead or paused node), take the new one from what this node learnt
  of that leader before or from the NameServer (re-registering until it names a master
  that is not a replaced one: it keeps naming a paused old master until the new one
  registers), then sync the metadata from it right away instead of at the next 10 s run;
* LEADER: wait until this node is still the leader of that term and its store
  has dispatched everything (log empty, or ledger end == committed index and the
  reput is not behind); refuse for good when a peer's dividedCommitlogOffset is
  larger (dledger_divided_offset_check.py); rebuild the queue-offset table from the
  consume queues, then become master (brokerId 0). Leadership lost while waiting: nothing.

The controller's ``change_role`` does the rest (the RoleState every role-aware part reads,
schedule and transaction services via its role-change listeners, SlaveSynchronize,
immediate re-registration with the NameServers).
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any, Protocol

from broker.broker_outer_api import BrokerIdentity
from broker.dledger_divided_offset_check import DividedOffsetCheck
from broker.role_state import RoleState
from broker.slave_synchronize import SlaveSynchronize
from common.util import cancel_and_wait
from dledger.protocol import Role
from remoting.client import RemotingClient

__all__ = ["DLedgerRoleChangeHandler", "slave_broker_id"]

log = logging.getLogger("broker")

_WAIT_STEP_S = 0.01
_FIND_MASTER_STEP_S = 0.1  # first pause between registrations, doubled up to _FIND_MASTER_MAX_STEP_S
_FIND_MASTER_MAX_STEP_S = 2.0
_FIND_MASTER_FOR_S = 30.0


def slave_broker_id(self_id: str, peers: list[str] | None = None) -> int:
    """RocketMQ's slave id for a DLedger member: ``int(selfId[1:]) + 1``; for ids not shaped
    ``<letter><number>``, the 1-based place of ``self_id`` among the sorted peer ids."""
    m = re.fullmatch(r".(\d+)", self_id)
    if m:
        return int(m.group(1)) + 1
    ids = sorted(peers or [self_id])
    return (ids.index(self_id) if self_id in ids else len(ids)) + 1


class RoleChanger(Protocol):
    """What the handler needs of the broker (its controller): switch roles, register, sync metadata."""

    identity: BrokerIdentity
    slave_synchronize: SlaveSynchronize | None
    client: RemotingClient | None

    async def change_role(self, *, master: bool, broker_id: int | None = None) -> None: ...

    async def register_broker_all(self, oneway: bool = False, force: bool = True) -> None: ...


class DLedgerRoleChangeHandler:
    """Follows the DLedger member of ``store.commit_log`` (a DLedgerCommitLog).

    :meth:`install` subscribes it; the broker runs :meth:`start` and :meth:`stop` with its services.
    """

    def __init__(self, broker: RoleChanger, store: Any, role: RoleState) -> None:
        self.broker = broker
        self.store = store
        self.role = role
        self.commit_log = store.commit_log
        cfg = self.commit_log.dledger_config
        self.self_id = cfg.selfId
        self.slave_id = slave_broker_id(cfg.selfId, list(cfg.peer_map()))
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None
        self._follow_task: asyncio.Task | None = None
        self._following: tuple[int, str | None] | None = None  # (term, DLedger leader id) followed
        self._master_of: dict[str, str] = {}  # DLedger leader id -> its broker address, as learnt
        self.handled: list[tuple[Role, int]] = []  # what was acted on, in order (diagnostics)
        self.divided_check = DividedOffsetCheck(self.commit_log, lambda: broker.client,
                                                self.store.config.storePathRootDir)

    def install(self) -> DLedgerRoleChangeHandler:
        """Subscribe to the commit log's role changes (before the store starts)."""
        self.commit_log.role_listener = self.on_role_change
        self.divided_check.install()
        return self

    async def start(self) -> None:
        await self.divided_check.start()

    def on_role_change(self, role: Role, term: int, leader_id: str | None) -> None:
        """DLedger's callback (on the loop): queue the change."""
        self.role.set_dledger(role.name, term)
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._task = asyncio.get_running_loop().create_task(self._run(), name="dledger-role-change")
        self._queue.put_nowait((role, term, leader_id))

    async def _run(self) -> None:
        while True:
            role, term, leader_id = await self._queue.get()
            try:
                await self._handle(role, term, leader_id)
            except Exception:  # noqa: BLE001 - keep following the roles
                log.exception("handling DLedger role %s (term %d) failed", role.value, term)

    async def _handle(self, role: Role, term: int, leader_id: str | None = None) -> None:
        if role is Role.LEADER:
            if await self._wait_caught_up(term) and await self.divided_check.may_lead() and self._still_leader(term):
                self.store.commit_log.topic_queue_table = self.store.consume_queues.max_offsets()
                self.handled.append((role, term))
                self._master_of[self.self_id] = self.broker.identity.broker_addr
                await self.broker.change_role(master=True)
            return
        if role is Role.CANDIDATE and self.role.is_slave:
            self._leader_lost()
            return
        self.handled.append((role, term))
        await self.broker.change_role(master=False, broker_id=self.slave_id)
        if role is Role.FOLLOWER:
            self._follow(term, leader_id)

    # -- following the new master -------------------------------------------------------

    def _leader_lost(self) -> None:
        """Candidate: the leader is presumed gone; stop syncing from it until a leader is known."""
        ss = self.broker.slave_synchronize
        if ss is None:
            return
        if self._following is not None and self._following[1] is not None and ss.master_addr:
            self._master_of[self._following[1]] = ss.master_addr
        ss.forget_master(frozenset())

    def _follow(self, term: int, leader_id: str | None) -> None:
        ss = self.broker.slave_synchronize
        if ss is None or leader_id is None:
            return
        prev = self._following
        self._following = (term, leader_id)
        if prev is not None and prev[1] is not None and ss.master_addr:
            self._master_of[prev[1]] = ss.master_addr  # what the NameServer named while we followed it
        if prev is not None and prev[1] == leader_id and ss.master_addr:
            return  # same leader (a new term of it): same master
        gone = {a for lid, a in self._master_of.items() if lid != leader_id}
        gone.add(self.broker.identity.broker_addr)
        ss.forget_master(gone)
        known = self._master_of.get(leader_id)
        if known is not None:
            ss.offer_master(known)
        if self._follow_task is not None:
            self._follow_task.cancel()
        self._follow_task = asyncio.get_running_loop().create_task(
            self._find_master_and_sync(term, leader_id), name="dledger-follow-master")

    async def _find_master_and_sync(self, term: int, leader_id: str) -> None:
        """Re-register until a NameServer names the new master (bounded), then sync from it now."""
        ss = self.broker.slave_synchronize
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _FIND_MASTER_FOR_S
        step = _FIND_MASTER_STEP_S
        while ss.master_addr is None and self._following == (term, leader_id) and loop.time() < deadline:
            try:
                await self.broker.register_broker_all(oneway=False)
            except Exception as e:  # noqa: BLE001 - a NameServer may be down: try again
                log.debug("registering to find the new master failed: %s", e)
            if ss.master_addr is None:
                await asyncio.sleep(step)  # pacing of the retries (a registration carries the topic table)
                step = min(step * 2, _FIND_MASTER_MAX_STEP_S)
        if ss.master_addr is None or self._following != (term, leader_id):
            return
        self._master_of[leader_id] = ss.master_addr
        log.info("following DLedger leader %s (term %d): master %s", leader_id, term, ss.master_addr)
        await ss.sync_all()

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
        """Stop following roles, then the divided-offset check."""
        if self._follow_task is not None:
            self._follow_task.cancel()
            try:
                await self._follow_task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
            self._follow_task = None
        await cancel_and_wait(self._task)
        self._task = None
        await self.divided_check.stop()

"""DividedOffsetCheck: the members of a DLedger group must agree on ``dividedCommitlogOffset``.

A store upgraded from classic mode keeps its CommitLog files; DLedger's log starts where
they end (the divided offset, spec message-and-store-format.md §12). Every member must
hold the same classic files (RocketMQ's upgrade guide: copy the old master's store to
every node first). When they do not, RocketMQ 4.9.7 fails silently: an upgraded leader's
followers refuse its entries (every send waits 2.5 s and answers "broker busy"), or an
empty member leads and the classic messages vanish behind queue offsets restarting at 0.

Here each member with nothing committed in its DLedger log yet publishes its divided offset
in DLedger METADATA answers (once the group commits, the logs are alike by Raft's rules, and
legacy files expire at different times on different members). A member about to become master compares
with its peers: when one of them holds classic messages past this member's end (a larger
divided offset), this member refuses to lead (DLedger never lets it stand again until
restarted) and says what to copy. A member whose own log is offered a first entry
elsewhere than its divided offset (it cannot follow) says the same.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from common.util import cancel_and_wait
from remoting import fastjson
from remoting.command import RemotingCommand

if TYPE_CHECKING:
    from store.dledger_commit_log import DLedgerCommitLog  # loaded in DLedger mode only

__all__ = ["DividedOffsetCheck", "METADATA_KEY", "copy_advice"]

log = logging.getLogger("broker")

METADATA_KEY = "dividedCommitlogOffset"
_METADATA_CODE = 50000  # DLedger METADATA
_QUERY_TIMEOUT_S = 0.5
_MISPLACED_LOG_EVERY_S = 30.0
_LEARN_EVERY_S = 1.0
_FRESH_WAIT_S = 5.0  # nothing committed yet (a first start, an upgrade): wait this long for every peer
_FRESH_RETRY_S = 0.2


class Invoker(Protocol):
    async def invoke(self, addr: str, request: RemotingCommand, timeout_s: float) -> RemotingCommand: ...


def copy_advice(root: str, self_id: str, source: str) -> str:
    """What the operator must do to make this member's store match ``source``'s."""
    return (f"stop this broker, copy the store of {source} (its commitlog/, consumequeue/, index/ and "
            f"config/) into {root}, delete {os.path.join(root, f'dledger-{self_id}')}, and start it again")


class DividedOffsetCheck:
    """``commit_log``: the DLedgerCommitLog (``divided_commitlog_offset``, ``dledger_config``, ``server``,
    ``storage``); ``client()``: the broker's RemotingClient (or anything with its ``invoke``) once
    it exists. The DLedger server publishes the divided offset itself (DLedgerCommitLog)."""

    def __init__(self, commit_log: DLedgerCommitLog, client: Callable[[], Invoker | None], root: str) -> None:
        self.commit_log = commit_log
        self.client = client
        self.root = root
        cfg = commit_log.dledger_config
        self.self_id = cfg.selfId
        self.peers = {p: a for p, a in cfg.peer_map().items() if p != cfg.selfId}
        # peer id -> its divided offset (fixed while it runs), None: it publishes none (it has committed entries)
        self.known: dict[str, int | None] = {}
        self.refused = False
        self._last_misplaced_log = -_MISPLACED_LOG_EVERY_S
        self._task: asyncio.Task | None = None
        self._warned: set[str] = set()  # peers already named as unable to replicate this node

    def install(self) -> DividedOffsetCheck:
        cl = self.commit_log
        if cl.storage is not None:
            cl.storage.on_misplaced_first_entry = self.on_misplaced_first_entry
        return self

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._learn(), name="dledger-divided-offset")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    async def _learn(self) -> None:
        """Ask the peers not known yet, every second until all answered: a peer that was down when
        this member became leader is checked once it is up (a leader that learns it must not lead
        steps down)."""
        while len(self.known) < len(self.peers) and not self.refused:
            await asyncio.sleep(_LEARN_EVERY_S)
            if self.client() is None:
                continue
            await asyncio.gather(*(self._query(p) for p in self.peers if p not in self.known))
            server = self.commit_log.server
            if server.core is not None and server.is_leader:
                await self.may_lead()

    async def _query(self, peer: str) -> None:
        try:
            # bounded as a whole: the invoke's own timeout starts after the connect, and a connect to
            # a dead peer behind a proxy or a lost SYN can take seconds (the first failover waited 5 s)
            r = await asyncio.wait_for(
                self.client().invoke(self.peers[peer], RemotingCommand.request(_METADATA_CODE), _QUERY_TIMEOUT_S),
                _QUERY_TIMEOUT_S)
            d = fastjson.loads(r.body) if r.body else {}
        except Exception:  # noqa: BLE001 - down, paused or not a member of ours: unknown for now
            return
        if isinstance(d, dict) and r.code == 200 and "term" in d:  # a DLedger member answered
            v = d.get(METADATA_KEY)
            self.known[peer] = v if isinstance(v, int) else None

    async def may_lead(self) -> bool:
        """Before becoming master: False (and DLedger leadership given up for good) when a peer's
        divided offset is larger than ours. Peers not known yet are asked once (briefly); while
        nothing is committed yet (the group's first start, an upgrade) every peer is waited for,
        up to ``_FRESH_WAIT_S``: a peer that starts late may be the one holding the classic data."""
        if self.refused:
            return False
        loop = asyncio.get_running_loop()
        # a member whose DLedger log holds entries is past the group's first start: no peer to wait for
        # (its committed index can still read -1 on a member that never led, so the log is asked)
        fresh = self.commit_log.storage.ledger_end_index < 0
        deadline = loop.time() + (_FRESH_WAIT_S if fresh else 0.0)
        while self.client() is not None:
            unknown = [p for p in self.peers if p not in self.known]
            if not unknown:
                break
            await asyncio.gather(*(self._query(p) for p in unknown))
            if len(self.known) == len(self.peers) or loop.time() >= deadline:
                break
            await asyncio.sleep(_FRESH_RETRY_S)  # pacing of the retries
        mine = self.commit_log.divided_commitlog_offset
        ahead = {p: d for p, d in self.known.items() if d is not None and d > mine}
        behind = {p: d for p, d in self.known.items() if d is not None and d < mine}
        behind = {p: d for p, d in behind.items() if p not in self._warned}
        if behind:
            self._warned.update(behind)
            for p, d in sorted(behind.items()):
                log.error("DLedger %s: peer %s has dividedCommitlogOffset %d, this node %d: it cannot replicate "
                          "this node's log; on %s: %s", self.self_id, p, d, mine, p,
                          copy_advice("its storePathRootDir", p, f"{self.self_id}"))
        if not ahead:
            return True
        source, d = max(ahead.items(), key=lambda kv: kv[1])
        self.refused = True
        log.error("DLedger %s: refusing to lead: dividedCommitlogOffset is %d here but %d on %s (its classic "
                  "CommitLog holds messages this node lacks; leading would hide them): %s",
                  self.self_id, mine, d, source, copy_advice(self.root, self.self_id, source))
        self.commit_log.server.forbid_leadership()
        return False

    def on_misplaced_first_entry(self, pos: int, start: int) -> None:
        """The group's log starts at ``pos`` but ours at ``start``: this member cannot follow."""
        now = asyncio.get_running_loop().time()
        if now - self._last_misplaced_log < _MISPLACED_LOG_EVERY_S:
            return
        self._last_misplaced_log = now
        source = ("a node without classic commitlog/ files" if pos == 0 else
                  f"a node whose dividedCommitlogOffset is {pos}")
        log.error("DLedger %s: dividedCommitlogOffset mismatch: the group's log starts at commit-log offset %d, "
                  "this node's at %d (where its classic CommitLog ends): it refuses the group's entries; %s",
                  self.self_id, pos, start, copy_advice(self.root, self.self_id, source))

"""A simulated network of DLedgerCore members for deterministic tests.

Time is the shared tick counter; every message gets a delivery tick (delay),
may be dropped or duplicated, and never crosses a cut link. Crashing a node
keeps its "disk" (storage + persisted hard state); restarting rebuilds the core
from it. Safety is checked on every Ready and on demand via :meth:`check`.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from dledger.config import DLedgerConfig
from dledger.core import DLedgerCore
from dledger.protocol import DLedgerError, DLedgerResponseCode, Message, Role
from dledger.storage import MemoryStorage


class SafetyViolation(AssertionError):
    pass


def fast_config(self_id: str, ids: list[str], **kw) -> DLedgerConfig:
    """A DLedgerConfig scaled down for simulation: 10 ms ticks, 100 ms heartbeats."""
    c = DLedgerConfig(
        group="g",
        selfId=self_id,
        peers=";".join(f"{i}-127.0.0.1:{40000 + k}" for k, i in enumerate(ids)),
        heartBeatTimeIntervalMs=100,
        maxHeartBeatLeak=3,
        minVoteIntervalMs=100,
        maxVoteIntervalMs=300,
        maxPushTimeOutMs=200,
        maxWaitAckTimeMs=1000,
        leadershipTransferWaitTimeout=500,
        tickIntervalMs=10,
    )
    for k, v in kw.items():
        setattr(c, k, v)
    return c


@dataclass
class Disk:
    storage: object
    hard_state: tuple = (0, None)


@dataclass
class Net:
    drop: float = 0.0
    dup: float = 0.0
    max_delay: int = 0  # ticks
    cut: set = field(default_factory=set)  # frozenset({a, b})


class Cluster:
    def __init__(
        self,
        n: int = 3,
        seed: int = 1,
        storage_factory=None,
        noop: bool = True,
        prefill: dict | None = None,
        hard_states: dict | None = None,
        down: tuple = (),
        **cfg,
    ):
        """``storage_factory(node_id)`` makes a node's storage (MemoryStorage by default);
        ``prefill`` {id: [(term, body), ...]} writes entries before start; ``down`` ids
        start crashed."""
        self.ids = [f"n{i}" for i in range(n)]
        self.rng = random.Random(seed)
        self.cfg_kw = cfg
        self.noop = noop
        self.storage_factory = storage_factory
        self.disks = {i: Disk(storage_factory(i) if storage_factory else MemoryStorage()) for i in self.ids}
        for nid, entries in (prefill or {}).items():
            st = self.disks[nid].storage
            for term, body in entries:
                st.append(st.ledger_end_index + 1, term, body)
        for nid, hs in (hard_states or {}).items():
            self.disks[nid].hard_state = hs
        self.nodes: dict[str, DLedgerCore | None] = {}
        self.net = Net()
        self.now = 0
        self._queue: list = []  # (deliver_at, seq, msg)
        self._seq = 0
        self.committed: dict[int, tuple[int, bytes]] = {}  # index -> (term, body): the global truth
        self.leader_of_term: dict[int, str] = {}
        self.results: dict[str, dict[int, int]] = {i: {} for i in self.ids}  # append results by node
        self.transfer_results: dict[str, list] = {i: [] for i in self.ids}
        self.role_log: list[tuple[int, str, Role, int]] = []
        self.delivered = 0
        for i in self.ids:
            if i in down:
                self.nodes[i] = None
            else:
                self.start(i)

    # ------------------------------------------------------------- membership
    def start(self, nid: str) -> DLedgerCore:
        d = self.disks[nid]
        if self.storage_factory is not None and nid in self.nodes:
            # A restart reopens the files: everything the core knows comes back from disk.
            d.storage.abandon()
            d.storage = self.storage_factory(nid)
        core = DLedgerCore(
            fast_config(nid, self.ids, **self.cfg_kw),
            d.storage,
            hard_state=d.hard_state,
            rng=random.Random(self.rng.random()),
            noop_on_election=self.noop,
        )
        self.nodes[nid] = core
        self._check_node(nid)
        return core

    def crash(self, nid: str) -> None:
        self.nodes[nid] = None

    def restart(self, nid: str) -> DLedgerCore:
        self.crash(nid)
        return self.start(nid)

    def alive(self) -> list[str]:
        return [i for i in self.ids if self.nodes[i] is not None]

    # ------------------------------------------------------------- partitions
    def isolate(self, nid: str) -> None:
        for o in self.ids:
            if o != nid:
                self.net.cut.add(frozenset((nid, o)))

    def partition(self, *groups: list[str]) -> None:
        self.net.cut.clear()
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                for x in groups[a]:
                    for y in groups[b]:
                        self.net.cut.add(frozenset((x, y)))

    def heal(self) -> None:
        self.net = Net()

    # ------------------------------------------------------------- running
    def _send(self, msg: Message) -> None:
        net = self.net
        if frozenset((msg.frm, msg.to)) in net.cut or self.rng.random() < net.drop:
            return
        copies = 2 if self.rng.random() < net.dup else 1
        for _ in range(copies):
            delay = self.rng.randint(0, net.max_delay) if net.max_delay else 0
            self._seq += 1
            heapq.heappush(self._queue, (self.now + delay, self.rng.random(), self._seq, msg))

    def _drain_ready(self, nid: str) -> None:
        core = self.nodes[nid]
        disk = self.disks[nid]
        while core.has_ready():
            rd = core.ready()
            if rd.hard_state is not None:
                disk.hard_state = rd.hard_state
            if rd.must_sync:
                disk.storage.flush()
            disk.storage.set_committed_index(rd.committed_index)
            if hasattr(disk.storage, "persist_checkpoint") and self.rng.random() < 0.05:
                disk.storage.persist_checkpoint()  # now and then, as the flush service does
            for rc in rd.role_changes:
                self.role_log.append((self.now, nid, rc.role, rc.term))
                if rc.role is Role.LEADER:
                    prev = self.leader_of_term.setdefault(rc.term, nid)
                    if prev != nid:
                        raise SafetyViolation(f"two leaders in term {rc.term}: {prev} and {nid}")
            for e in rd.committed_entries:
                self._record_committed(nid, e.index, e.term, e.body)
            for r in rd.append_results:
                self.results[nid][r.index] = r.code
            self.transfer_results[nid].extend(rd.transfer_results)
            for m in rd.messages:
                self._send(m)
            core.advance(rd)

    def _record_committed(self, nid: str, index: int, term: int, body: bytes) -> None:
        prev = self.committed.setdefault(index, (term, body))
        if prev != (term, body):
            raise SafetyViolation(f"{nid} committed {index}={(term, body)} but {prev} was committed before")

    def tick(self) -> None:
        """One tick: every live node ticks, then every message due is delivered."""
        self.now += 1
        for nid in self.alive():
            self.nodes[nid].tick()
            self._drain_ready(nid)
        self.deliver_due()

    def deliver_due(self) -> None:
        while self._queue and self._queue[0][0] <= self.now:
            _t, _r, _s, msg = heapq.heappop(self._queue)
            core = self.nodes.get(msg.to)
            if core is None or frozenset((msg.frm, msg.to)) in self.net.cut:
                continue
            core.step(msg)
            self.delivered += 1
            self._drain_ready(msg.to)

    def run(self, ticks: int, check_every: int = 1) -> None:
        for k in range(ticks):
            self.tick()
            if check_every and k % check_every == 0:
                self.check()

    def run_until(self, pred, max_ticks: int, what: str = "") -> int:
        for k in range(max_ticks):
            if pred():
                return k
            self.tick()
            self.check()
        if pred():
            return max_ticks
        raise AssertionError(f"not reached within {max_ticks} ticks: {what} (roles {self.roles()})")

    # ------------------------------------------------------------- client side
    def leader(self) -> DLedgerCore | None:
        """The live leader of the highest term, if any."""
        best = None
        for nid in self.alive():
            c = self.nodes[nid]
            if c.role is Role.LEADER and (best is None or c.term > best.term):
                best = c
        return best

    def propose(self, body: bytes) -> tuple[str, int] | None:
        ld = self.leader()
        if ld is None:
            return None
        try:
            e = ld.propose(body)
        except DLedgerError as err:
            assert err.code in (
                DLedgerResponseCode.LEADER_TRANSFERRING,
                DLedgerResponseCode.LEADER_PENDING_FULL,
            )
            return None
        self._drain_ready(ld.self_id)
        return ld.self_id, e.index

    def roles(self) -> dict:
        return {i: (c.role.value, c.term, c.committed_index) if c else None for i, c in self.nodes.items()}

    # ------------------------------------------------------------- safety
    def _check_node(self, nid: str) -> None:
        c = self.nodes[nid]
        st = self.disks[nid].storage
        if c.committed_index > st.ledger_end_index:
            raise SafetyViolation(
                f"{nid} committed {c.committed_index} beyond its log end {st.ledger_end_index}"
            )
        # Log matching: everything a node holds up to the highest globally committed
        # index it can have must equal what was committed.
        upto = min(st.ledger_end_index, max(self.committed, default=-1))
        for i in range(st.ledger_begin_index, upto + 1):
            truth = self.committed.get(i)
            if truth is None:
                continue
            e = st.get(i)
            if i <= c.committed_index and (e is None or (e.term, e.body) != truth):
                raise SafetyViolation(f"{nid} holds {i}={e} below its committed index, truth {truth}")

    def check(self) -> None:
        """At most one leader per term; committed prefixes agree; no committed entry lost."""
        leaders: dict[int, str] = {}
        for nid in self.alive():
            c = self.nodes[nid]
            if c.role is Role.LEADER:
                if leaders.setdefault(c.term, nid) != nid:
                    raise SafetyViolation(f"two leaders in term {c.term}")
            st = self.disks[nid].storage
            ci = c.committed_index
            if ci > st.ledger_end_index:
                raise SafetyViolation(f"{nid} committed {ci} beyond end {st.ledger_end_index}")
            if ci >= st.ledger_begin_index:  # below it: cleaned after commit
                e = st.get(ci)
                truth = self.committed.get(ci)
                if truth is not None and (e.term, e.body) != truth:
                    raise SafetyViolation(f"{nid} entry {ci} changed after commit")
        # Every globally committed entry must survive on a quorum of disks (never lost).
        if self.committed:
            top = max(self.committed)
            holders = 0
            for nid in self.ids:
                st = self.disks[nid].storage
                e = st.get(top)
                if (e is not None and (e.term, e.body) == self.committed[top]) or st.ledger_begin_index > top:
                    holders += 1
            if holders < len(self.ids) // 2 + 1:
                raise SafetyViolation(f"committed entry {top} is held by only {holders} nodes")

    def full_check(self) -> None:
        self.check()
        for nid in self.alive():
            self._check_node(nid)

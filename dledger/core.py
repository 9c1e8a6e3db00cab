"""DLedgerCore: one DLedger member as a deterministic state machine (etcd raft's RawNode shape).

Inputs: :meth:`tick` (one unit of logical time), :meth:`step` (a message from a
peer), :meth:`propose` (leader append), :meth:`transfer_leadership`. Output:
:meth:`ready` returns a :class:`Ready`; the driver must, in this order,

1. persist ``hard_state`` (if not None) and flush the storage when
   ``must_sync`` (entries were written or truncated),
2. send ``messages``,
3. apply ``committed_entries`` / report ``role_changes``, ``append_results``,
   ``transfer_results``,
4. call :meth:`advance`.

There is no clock, socket, thread or file in here; randomness comes from the
injected ``random.Random``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from dledger.config import DLedgerConfig
from dledger.context import AppendResult, CoreContext, RoleChange, TransferResult
from dledger.entry import DLedgerEntry
from dledger.entry_pusher import EntryPusher
from dledger.leader_elector import LeaderElector
from dledger.member_state import HardState, MemberState
from dledger.protocol import (
    DLedgerError,
    HeartBeatRequest,
    HeartBeatResponse,
    LeadershipTransferRequest,
    LeadershipTransferResponse,
    Message,
    PushEntryRequest,
    PushEntryResponse,
    Role,
    VoteRequest,
    VoteResponse,
    VoteResult,
)
from dledger.protocol import (
    DLedgerResponseCode as C,
)
from dledger.storage import AppendHook, Storage

__all__ = ["DLedgerCore", "Ready"]


@dataclass
class Ready:
    """Work the driver must do, in field order (see the module docstring)."""

    hard_state: HardState | None = None
    must_sync: bool = False
    entries: list[DLedgerEntry] = field(default_factory=list)  # written since the last Ready
    messages: list[Message] = field(default_factory=list)
    committed_index: int = -1
    committed_pos: int = -1  # end position of the committed entry (DLedger committedPos)
    committed_entries: list[DLedgerEntry] = field(default_factory=list)
    role_changes: list[RoleChange] = field(default_factory=list)
    append_results: list[AppendResult] = field(default_factory=list)
    transfer_results: list[TransferResult] = field(default_factory=list)


class DLedgerCore:
    """One member: MemberState + LeaderElector + EntryPusher over a Storage.

    ``hard_state`` is the persisted (currTerm, votedFor); ``applied_index`` the
    last entry the caller has already applied (default: the storage's
    checkpointed committed index). ``noop_on_election``: a new leader whose log
    ends past the committed index appends an empty entry of its term, so the
    older tail can commit (Raft's rule; RocketMQ's commit log must skip empty
    bodies). DLedger 0.3.1.2 does not do this.
    """

    def __init__(
        self,
        config: DLedgerConfig,
        storage: Storage,
        *,
        hard_state: HardState = (0, None),
        rng: random.Random | None = None,
        applied_index: int | None = None,
        noop_on_election: bool = True,
    ):
        self.config = config
        self.storage = storage
        ms = MemberState(config.group, config.selfId, config.peer_map(), storage, hard_state)
        ms.committed_index = min(storage.committed_index, storage.ledger_end_index)
        self.member_state = ms
        self.ctx = CoreContext(config, ms, storage, rng or random.Random())
        self.pusher = EntryPusher(self.ctx)
        self.elector = LeaderElector(self.ctx, self._on_role_change, self.pusher.lag_of)
        self.noop_on_election = noop_on_election
        self._applied = ms.committed_index if applied_index is None else applied_index
        self._persisted_hard_state: HardState = hard_state
        self._committed_pos_cache: tuple[int, int] = (-2, -1)
        #: False: Ready.committed_entries stays empty (a driver that reads what it applies itself)
        self.collect_committed = True
        #: set by the driver from its disk check: new appends then fail with DISK_FULL
        self.disk_full = False

    # ------------------------------------------------------------------ inputs
    def tick(self) -> None:
        """Advance logical time by one tick (``config.tickIntervalMs``)."""
        self.ctx.now += 1
        self.elector.tick()
        self.pusher.tick()

    def step(self, msg: Message) -> None:
        """Feed a message from a peer (a request, or a response carrying the request's rid)."""
        ms = self.member_state
        if msg.IS_RESPONSE:
            if isinstance(msg, VoteResponse):
                self.elector.on_vote_response(msg)
            elif isinstance(msg, HeartBeatResponse):
                self.elector.on_heartbeat_response(msg)
            elif isinstance(msg, PushEntryResponse):
                self.pusher.on_push_response(msg)
            elif isinstance(msg, LeadershipTransferResponse):
                self.elector.on_transfer_response(msg)
            return
        if msg.remote_id != ms.self_id or msg.group != ms.group:
            code = C.UNKNOWN_MEMBER if msg.remote_id != ms.self_id else C.UNKNOWN_GROUP
            self.ctx.respond(self._error_reply(msg, code))
            return
        if isinstance(msg, VoteRequest):
            self.ctx.respond(self.elector.handle_pre_vote(msg) if msg.pre_vote else self.elector.handle_vote(msg))
        elif isinstance(msg, HeartBeatRequest):
            self.ctx.respond(self.elector.handle_heartbeat(msg))
        elif isinstance(msg, PushEntryRequest):
            self.pusher.handler.handle_push(msg)
        elif isinstance(msg, LeadershipTransferRequest):
            resp = self.elector.handle_transfer(msg)
            if resp is not None:
                self.ctx.respond(resp)
        else:
            self.ctx.respond(self._error_reply(msg, C.UNSUPPORTED))
        self.elector.check_transfers()

    def _error_reply(self, msg: Message, code: C) -> Message:
        cls = {
            VoteRequest: VoteResponse,
            HeartBeatRequest: HeartBeatResponse,
            PushEntryRequest: PushEntryResponse,
            LeadershipTransferRequest: LeadershipTransferResponse,
        }.get(type(msg), HeartBeatResponse)
        ms = self.member_state
        extra = {"vote_result": VoteResult.UNKNOWN} if cls is VoteResponse else {}
        return msg.reply(cls, code=int(code), term=ms.curr_term, leader_id=ms.leader_id, **extra)

    def propose(self, body: bytes, hook: AppendHook | None = None, *, track: bool = True) -> DLedgerEntry:
        """Leader: append ``body`` as the next entry and start replicating it.

        Returns the stored entry (its ``index`` and ``pos`` are final); an
        AppendResult for that index appears in a later Ready (SUCCESS once
        committed) unless ``track`` is False (a caller that waits for a later
        entry of the same term: committing that one commits this one). Raises DLedgerError(NOT_LEADER / LEADER_TRANSFERRING /
        LEADER_PENDING_FULL / ...) when the append cannot start. ``hook(pos, body)``
        patches the body once its position is known (DLedger's AppendHook).
        """
        ms = self.member_state
        if not ms.is_leader():
            raise DLedgerError(C.NOT_LEADER, f"{ms.self_id} is {ms.role.value}, leader is {ms.leader_id}")
        if ms.transferee is not None:
            raise DLedgerError(C.LEADER_TRANSFERRING, f"transferring to {ms.transferee}")
        if self.disk_full:
            raise DLedgerError(C.DISK_FULL, "the store's disk is full")
        if self.pusher.pending_count() >= self.config.maxPendingRequestsNum:
            raise DLedgerError(C.LEADER_PENDING_FULL, "too many appends waiting for quorum")
        # the storage keeps its own copy of the body (taken once there)
        return self._append_as_leader(body, hook, track)

    def track(self, entry: DLedgerEntry) -> None:
        """Report an AppendResult for ``entry`` after all (the leader proposed it with ``track=False``
        in this term): a caller that proposed several entries waits for the last one only."""
        self.pusher.track(entry)

    def _append_as_leader(self, body: bytes, hook: AppendHook | None = None, track: bool = True) -> DLedgerEntry:
        ms = self.member_state
        entry = self.storage.append(ms.ledger_end_index + 1, ms.curr_term, body, hook=hook)
        self.ctx.written.append(entry)
        self.pusher.on_appended(entry, track)
        return entry

    def forbid_leadership(self) -> None:
        """Never lead from now on (step down if leading); voting and following go on."""
        self.elector.forbid_leadership()

    def transfer_leadership(self, transferee: str) -> int:
        """Leader: hand leadership to ``transferee``. Returns an id matched by a later
        TransferResult; DLedgerError when a precondition fails (spec §5)."""
        return self.elector.transfer_leadership(transferee)

    # ------------------------------------------------------------------ outputs
    def _on_role_change(self, role: Role, term: int) -> None:
        self.pusher.on_role_change(role, term)
        ms = self.member_state
        if role is Role.LEADER and self.noop_on_election and ms.ledger_end_index > ms.committed_index:
            self._append_as_leader(b"")

    def has_ready(self) -> bool:
        ctx = self.ctx
        ms = self.member_state
        return bool(
            ctx.outbox
            or self.pusher.work_due
            or ctx.written
            or ctx.must_sync
            or ctx.role_changes
            or ctx.append_results
            or ctx.transfer_results
            or ms.hard_state != self._persisted_hard_state
            or ms.committed_index > self._applied
        )

    def ready(self) -> Ready:
        """Take the pending work (messages and results move out of the core)."""
        ctx = self.ctx
        ms = self.member_state
        self.pusher.flush_pushes()
        hs = ms.hard_state if ms.hard_state != self._persisted_hard_state else None
        committed = [
            self.storage.get(i)
            for i in range(max(self._applied + 1, ms.ledger_begin_index), ms.committed_index + 1)
        ] if self.collect_committed else []
        rd = Ready(
            hard_state=hs,
            must_sync=bool(ctx.written) or ctx.must_sync,
            entries=ctx.written,
            messages=ctx.outbox,
            committed_index=ms.committed_index,
            committed_pos=self.committed_pos,
            committed_entries=committed,
            role_changes=ctx.role_changes,
            append_results=ctx.append_results,
            transfer_results=ctx.transfer_results,
        )
        ctx.written, ctx.outbox, ctx.role_changes = [], [], []
        ctx.append_results, ctx.transfer_results = [], []
        ctx.must_sync = False
        return rd

    def advance(self, rd: Ready) -> None:
        """The driver did everything ``rd`` asked."""
        if rd.hard_state is not None:
            self._persisted_hard_state = rd.hard_state
        if rd.committed_entries:
            self._applied = max(self._applied, rd.committed_entries[-1].index)
        elif not self.collect_committed:
            self._applied = max(self._applied, rd.committed_index)

    # ------------------------------------------------------------------ queries
    @property
    def role(self) -> Role:
        return self.member_state.role

    @property
    def term(self) -> int:
        return self.member_state.curr_term

    @property
    def leader_id(self) -> str | None:
        return self.member_state.leader_id

    @property
    def self_id(self) -> str:
        return self.member_state.self_id

    @property
    def committed_index(self) -> int:
        return self.member_state.committed_index

    @property
    def committed_pos(self) -> int:
        """End position of the committed entry (DLedger's committedPos), -1 if none."""
        ci = self.member_state.committed_index
        if self._committed_pos_cache[0] != ci:
            e = self.storage.get(ci)
            self._committed_pos_cache = (ci, e.pos + e.size if e is not None else -1)
        return self._committed_pos_cache[1]

    @property
    def applied_index(self) -> int:
        """The last committed index the driver was handed (advanced by :meth:`advance`)."""
        return self._applied

    @property
    def now(self) -> int:
        return self.ctx.now

"""CoreContext: the collaborators the elector and the pusher share inside one core.

It is deliberately dumb: a logical clock (``now`` in ticks), the seeded random
source, the outbox the core hands out in its next Ready, and id allocation for
requests. No wall clock, no I/O.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from dledger.config import DLedgerConfig
from dledger.entry import DLedgerEntry
from dledger.member_state import MemberState
from dledger.protocol import Message, Role
from dledger.storage import Storage

__all__ = ["CoreContext", "RoleChange", "AppendResult", "TransferResult"]


@dataclass(frozen=True, slots=True)
class RoleChange:
    """A role change to report (what DLedger's RoleChangeHandler receives)."""

    role: Role
    term: int
    leader_id: str | None


@dataclass(frozen=True, slots=True)
class AppendResult:
    """The outcome of a proposal: SUCCESS once committed, or the failure code."""

    index: int
    code: int
    term: int
    pos: int


@dataclass(frozen=True, slots=True)
class TransferResult:
    """The outcome of a leadership transfer started on this node (``rid`` from transfer_leadership)."""

    rid: int
    code: int


@dataclass
class CoreContext:
    cfg: DLedgerConfig
    ms: MemberState
    storage: Storage
    rng: random.Random
    now: int = 0
    outbox: list[Message] = field(default_factory=list)
    written: list[DLedgerEntry] = field(default_factory=list)
    must_sync: bool = False
    role_changes: list[RoleChange] = field(default_factory=list)
    append_results: list[AppendResult] = field(default_factory=list)
    transfer_results: list[TransferResult] = field(default_factory=list)
    _rid: int = 0

    def __post_init__(self) -> None:
        # Distinct per incarnation so a response to a request of a previous life never matches.
        self._rid = self.rng.randrange(1 << 30) << 32

    def new_rid(self) -> int:
        self._rid += 1
        return self._rid

    def send(self, msg: Message) -> Message:
        """Queue a request to ``msg.to`` (fills the common fields)."""
        ms = self.ms
        msg.group = ms.group
        msg.frm = ms.self_id
        msg.local_id = ms.self_id
        msg.remote_id = msg.to
        if not msg.rid:
            msg.rid = self.new_rid()
        self.outbox.append(msg)
        return msg

    def respond(self, msg: Message) -> None:
        self.outbox.append(msg)

"""MemberState: role, term, vote and leader of one DLedger member (spec dledger.md §2).

``currTerm`` and ``currVoteFor`` are the hard state: every change marks it
dirty so the core hands it out in the next Ready, and the driver persists it
(``currterm`` file, see :func:`save_term_file`) before sending anything.
"""

from __future__ import annotations

import os

from common.config import parse_properties
from common.util import read_file_with_bak, write_file_atomic
from dledger.protocol import DLedgerError, DLedgerResponseCode, Role
from dledger.storage import Storage

__all__ = ["MemberState", "HardState", "load_term_file", "save_term_file", "TERM_FILE"]

TERM_FILE = "currterm"

HardState = tuple[int, str | None]  # (currTerm, currVoteFor)


def load_term_file(directory: str) -> HardState:
    """Read ``<dir>/currterm`` (falls back to the .bak); (0, None) when absent."""
    text = read_file_with_bak(os.path.join(directory, TERM_FILE))
    if text is None:
        return 0, None
    props = parse_properties(text)
    term = int(props.get("currTerm", "0") or 0)
    vote = props.get("voteLeader") or None
    return term, vote


def save_term_file(directory: str, hard_state: HardState) -> None:
    """Write ``currTerm``/``voteLeader`` as DLedger's MemberState.persistTerm does."""
    term, vote = hard_state
    write_file_atomic(os.path.join(directory, TERM_FILE), f"currTerm={term}\nvoteLeader={vote or ''}\n")


class MemberState:
    """Role and term bookkeeping; the ledger bounds come from the Storage."""

    def __init__(
        self, group: str, self_id: str, peers: dict[str, str], storage: Storage, hard_state: HardState
    ):
        if self_id not in peers:
            raise DLedgerError(DLedgerResponseCode.UNKNOWN_MEMBER, f"selfId {self_id} is not in peers")
        self.group = group
        self.self_id = self_id
        self.peer_map = dict(peers)
        self.storage = storage
        self.role = Role.CANDIDATE
        self.curr_term, self.curr_vote_for = hard_state
        self.leader_id: str | None = None
        self.known_max_term_in_group = -1
        self.peers_live_table: dict[str, bool] = {}
        self.transferee: str | None = None
        self.term_to_take_leadership = -1
        self.committed_index = -1
        self.hard_state_dirty = False

    # -- ledger -------------------------------------------------------------
    @property
    def ledger_end_index(self) -> int:
        return self.storage.ledger_end_index

    @property
    def ledger_end_term(self) -> int:
        return self.storage.ledger_end_term

    @property
    def ledger_begin_index(self) -> int:
        return self.storage.ledger_begin_index

    # -- membership ---------------------------------------------------------
    @property
    def peer_size(self) -> int:
        return len(self.peer_map)

    def is_peer(self, pid: str | None) -> bool:
        return pid is not None and pid in self.peer_map

    def other_peers(self) -> list[str]:
        return [p for p in self.peer_map if p != self.self_id]

    def is_quorum(self, n: int) -> bool:
        return n >= self.peer_size // 2 + 1

    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    def is_follower(self) -> bool:
        return self.role is Role.FOLLOWER

    def is_candidate(self) -> bool:
        return self.role is Role.CANDIDATE

    def is_taking_leadership(self) -> bool:
        return self.role is Role.CANDIDATE and self.term_to_take_leadership == self.curr_term

    # -- hard state ---------------------------------------------------------
    @property
    def hard_state(self) -> HardState:
        return self.curr_term, self.curr_vote_for

    def set_vote_for(self, pid: str | None) -> None:
        self.curr_vote_for = pid
        self.hard_state_dirty = True

    # -- transitions --------------------------------------------------------
    def next_term(self) -> int:
        """Candidate only: move to the next term (or the largest seen), clear the vote."""
        if self.role is not Role.CANDIDATE:
            raise DLedgerError(DLedgerResponseCode.ILLEGAL_MEMBER_STATE, f"{self.role} != CANDIDATE")
        if self.known_max_term_in_group > self.curr_term:
            self.curr_term = self.known_max_term_in_group
        else:
            self.curr_term += 1
        self.curr_vote_for = None
        self.hard_state_dirty = True
        return self.curr_term

    def change_to_leader(self, term: int) -> None:
        assert term == self.curr_term
        self.role = Role.LEADER
        self.leader_id = self.self_id
        self.peers_live_table.clear()

    def change_to_follower(self, term: int, leader_id: str) -> None:
        assert term == self.curr_term
        self.role = Role.FOLLOWER
        self.leader_id = leader_id
        self.transferee = None

    def change_to_candidate(self, term: int) -> None:
        assert term >= self.curr_term
        if term > self.known_max_term_in_group:
            self.known_max_term_in_group = term
        self.role = Role.CANDIDATE
        self.leader_id = None
        self.transferee = None

"""Pre-vote (Raft thesis 9.6, etcd raft's PreVote): the voter's side, and the tally.

Not part of DLedger 0.3.1.2. Before a candidate invents a new term it asks every
peer "would you vote for me in ``currTerm + 1``?" in a VOTE request carrying
``preVote=true``. Answering changes nothing on the voter (no term, no vote, no
role), so a member that cannot win (cut off from a quorum, stale log, or facing
a group whose leader is alive) asks forever without moving anybody's term; when
it comes back, the leader's heartbeats make it a follower and the group's term is
unchanged. Only a quorum of grants lets it enter the new term and ask for real.

A voter grants when the candidate's log is at least as up to date as its own
(the real vote's rules) and it has no live leader: it is not the leader itself,
and as a follower it heard its leader within the election timeout
(``maxHeartBeatLeak`` heartbeats). The results reuse DLedger's VoteResult names.
"""

from __future__ import annotations

from dledger.member_state import MemberState
from dledger.protocol import VoteRequest
from dledger.protocol import VoteResult as V

__all__ = ["pre_vote_result"]


def pre_vote_result(ms: MemberState, req: VoteRequest, leader_alive: bool) -> tuple[V, int]:
    """(result, term to answer with) for a pre-vote; ``leader_alive``: this member has a live leader."""
    if not ms.is_peer(req.leader_id):
        return V.REJECT_UNKNOWN_LEADER, ms.curr_term
    if req.leader_id == ms.self_id:
        return V.REJECT_UNEXPECTED_LEADER, ms.curr_term
    if req.ledger_end_term < ms.ledger_end_term:
        return V.REJECT_EXPIRED_LEDGER_TERM, ms.curr_term
    if req.ledger_end_term == ms.ledger_end_term and req.ledger_end_index < ms.ledger_end_index:
        return V.REJECT_SMALL_LEDGER_END_INDEX, ms.curr_term
    if req.term < ms.curr_term:
        return V.REJECT_EXPIRED_VOTE_TERM, ms.curr_term
    if req.term == ms.curr_term:
        # the candidate asks for a term this member is already in: the real vote's rule
        if ms.leader_id is not None:
            return V.REJECT_ALREADY_HAS_LEADER, ms.curr_term
        if ms.curr_vote_for is not None and ms.curr_vote_for != req.leader_id:
            return V.REJECT_ALREADY_VOTED, ms.curr_term
    elif leader_alive:
        return V.REJECT_ALREADY_HAS_LEADER, ms.curr_term
    if req.term < ms.ledger_end_term:
        return V.REJECT_TERM_SMALL_THAN_LEDGER, ms.ledger_end_term
    return V.ACCEPT, ms.curr_term

"""LeaderElector: DLedger's election rules as a tick/step state machine (spec dledger.md §3, §5).

DLedgerLeaderElector runs a thread that sleeps and blocks on vote futures; here
the same rules are driven by ``tick()`` (time passes) and ``on_*`` (a message
arrived). A vote round and a heartbeat round are objects that collect replies
until their deadline or an early-exit condition, then are counted exactly as
DLedger counts them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from dledger.context import CoreContext, RoleChange, TransferResult
from dledger.pre_vote import pre_vote_result
from dledger.protocol import (
    DLedgerError,
    HeartBeatRequest,
    HeartBeatResponse,
    LeadershipTransferRequest,
    LeadershipTransferResponse,
    ParseResult,
    Role,
    VoteRequest,
    VoteResponse,
)
from dledger.protocol import (
    DLedgerResponseCode as C,
)
from dledger.protocol import (
    VoteResult as V,
)

__all__ = ["LeaderElector"]

_TRANSFER_REPLY_GRACE_MS = 3000
_PREFERRED_CHECK_MS = 1000


@dataclass
class _VoteRound:
    term: int
    deadline: int
    rids: dict[int, str]
    replies: dict[str, VoteResponse] = field(default_factory=dict)
    pre: bool = False  # a pre-vote round (see dledger.pre_vote)


@dataclass
class _HeartBeatRound:
    term: int
    deadline: int
    rids: dict[int, str]
    success: int = 1  # self
    not_ready: int = 0
    max_term: int = -1
    inconsistent_leader: bool = False
    replied: int = 0
    decided: bool = False


@dataclass
class _OutgoingTransfer:
    """A transfer this leader started: the transferee's answer completes it."""

    rid: int
    term: int
    transferee: str
    deadline: int
    origin: LeadershipTransferRequest | None


@dataclass
class _IncomingTransfer:
    """A transfer this node was asked to take: wait to catch up, then run for leader."""

    request: LeadershipTransferRequest
    deadline: int
    started: bool = False


class LeaderElector:
    """Election, heartbeats, leadership transfer and the preferred-leader check."""

    def __init__(
        self, ctx: CoreContext, on_role_change: Callable[[Role, int], None], lag_of: Callable[[str], int]
    ):
        self.ctx = ctx
        self.ms = ctx.ms
        self.cfg = ctx.cfg
        self._on_role_change = on_role_change
        self._lag_of = lag_of  # leader: ledgerEndIndex - peer watermark
        t = self.cfg.ticks
        self.hb_interval = t(self.cfg.heartBeatTimeIntervalMs)
        self.hb_leak = self.cfg.maxHeartBeatLeak
        self.election_timeout = self.hb_leak * self.hb_interval
        self.may_lead = True  # False: this member never stands for election (see forbid_leadership)
        self.last_leader_heartbeat = 0
        self.last_send_heartbeat = -(1 << 62)
        self.last_succ_heartbeat = 0
        self.next_time_to_request_vote = self._random_vote_interval()
        self.need_increase_term_immediately = False
        self.last_parse_result = ParseResult.WAIT_TO_REVOTE
        self.vote_round: _VoteRound | None = None
        self.hb_round: _HeartBeatRound | None = None
        self.resend_heartbeat = False
        self.outgoing_transfer: _OutgoingTransfer | None = None
        self.incoming_transfer: _IncomingTransfer | None = None
        self.next_preferred_check = 0

    # ------------------------------------------------------------------ helpers
    def _random_vote_interval(self) -> int:
        t = self.cfg.ticks
        if self.ms.is_taking_leadership():
            lo, hi = self.cfg.minTakeLeadershipVoteIntervalMs, self.cfg.maxTakeLeadershipVoteIntervalMs
        else:
            lo, hi = self.cfg.minVoteIntervalMs, self.cfg.maxVoteIntervalMs
        return self.ctx.now + self.ctx.rng.randint(t(lo), max(t(lo), t(hi)))

    def _set_role(self, role: Role) -> None:
        ms = self.ms
        self.ctx.role_changes.append(RoleChange(role, ms.curr_term, ms.leader_id))
        if role is not Role.CANDIDATE:
            self.vote_round = None
        if role is not Role.LEADER:
            self.hb_round = None
            self.resend_heartbeat = False
        self._on_role_change(role, ms.curr_term)
        self._complete_incoming_transfer(role)

    def change_role_to_candidate(self, term: int) -> None:
        ms = self.ms
        if term < ms.curr_term:
            return
        was = ms.role
        ms.change_to_candidate(term)
        if was is not Role.CANDIDATE:
            # Spread the first votes of nodes that lost their leader at the same moment.
            self.next_time_to_request_vote = self._random_vote_interval()
            if self.cfg.enablePreVote and term == ms.curr_term:
                # This term had a leader, so a vote in it cannot win (its voters are taken): ask for
                # the next term at once (after a pre-vote). DLedger keeps whatever its last count said,
                # and a stale WAIT_TO_VOTE_NEXT made a cut-off follower bump its term blindly.
                self.last_parse_result = ParseResult.WAIT_TO_VOTE_NEXT
        self._set_role(Role.CANDIDATE)

    def change_role_to_leader(self, term: int) -> None:
        ms = self.ms
        if ms.curr_term != term or not ms.is_candidate():
            return
        ms.change_to_leader(term)
        self.last_succ_heartbeat = self.ctx.now
        self.next_preferred_check = self.ctx.now + self.cfg.ticks(_PREFERRED_CHECK_MS)
        # Heartbeats go out before the first pushes, so the voters are followers (not
        # candidates answering NOT_FOLLOWER) when the dispatchers' COMPAREs arrive.
        self._send_heartbeats()
        self._set_role(Role.LEADER)

    def change_role_to_follower(self, term: int, leader_id: str) -> None:
        self.ms.change_to_follower(term, leader_id)
        self.last_leader_heartbeat = self.ctx.now
        self._set_role(Role.FOLLOWER)

    # ------------------------------------------------------------------ tick
    def tick(self) -> None:
        ms = self.ms
        if ms.is_leader():
            self._maintain_as_leader()
        elif ms.is_follower():
            if self.ctx.now - self.last_leader_heartbeat > self.hb_leak * self.hb_interval:
                self.change_role_to_candidate(ms.curr_term)
        else:
            self._maintain_as_candidate()
        self.check_transfers()

    # ------------------------------------------------------------------ leader
    def _maintain_as_leader(self) -> None:
        now = self.ctx.now
        if self.cfg.enableCheckQuorum and now - self.last_succ_heartbeat > self.election_timeout:
            # Check-quorum: no quorum answered a heartbeat for a whole election timeout, so the
            # others may have elected someone else already; stop taking writes now rather than at
            # the end of the current heartbeat round.
            self.hb_round = None
            self.change_role_to_candidate(self.ms.curr_term)
            return
        r = self.hb_round
        if r is not None:
            if now >= r.deadline:
                for peer in r.rids.values():
                    self.ms.peers_live_table[peer] = False
                self._finish_heartbeat_round(r)
            else:
                return
        if self.resend_heartbeat or now - self.last_send_heartbeat >= self.hb_interval:
            self.resend_heartbeat = False
            self._send_heartbeats()
        self._check_preferred_leader()

    def _send_heartbeats(self) -> None:
        ms = self.ms
        self.last_send_heartbeat = self.ctx.now
        rids = {}
        for peer in ms.other_peers():
            m = self.ctx.send(HeartBeatRequest(to=peer, term=ms.curr_term, leader_id=ms.self_id))
            rids[m.rid] = peer
        self.hb_round = _HeartBeatRound(ms.curr_term, self.ctx.now + self.hb_interval, rids)
        if not rids:
            self._finish_heartbeat_round(self.hb_round)

    def on_heartbeat_response(self, resp: HeartBeatResponse) -> None:
        r = self.hb_round
        if r is None or resp.rid not in r.rids:
            return
        peer = r.rids.pop(resp.rid)
        r.replied += 1
        self.ms.peers_live_table[peer] = resp.code != C.NETWORK_ERROR
        code = resp.code
        if code == C.SUCCESS:
            r.success += 1
        elif code == C.EXPIRED_TERM:
            r.max_term = max(r.max_term, resp.term)
            if resp.term > self.ms.curr_term:
                # Deviation from DLedger: step down even when a quorum answered. A member
                # that moved to a higher term while cut off (a candidate with a stale log)
                # otherwise never rejoins: it rejects every heartbeat of the lower term.
                self.hb_round = None
                self.change_role_to_candidate(resp.term)
                self.need_increase_term_immediately = True
                return
        elif code == C.INCONSISTENT_LEADER:
            r.inconsistent_leader = True
        elif code == C.TERM_NOT_READY:
            r.not_ready += 1
        if not r.decided and self.ms.is_quorum(r.success):
            r.decided = True
            self.last_succ_heartbeat = self.ctx.now
        if not r.rids:
            self._finish_heartbeat_round(r)

    def _finish_heartbeat_round(self, r: _HeartBeatRound) -> None:
        self.hb_round = None
        ms = self.ms
        if r.decided or not ms.is_leader() or r.term != ms.curr_term:
            return
        if ms.is_quorum(r.success):
            self.last_succ_heartbeat = self.ctx.now
        elif ms.is_quorum(r.success + r.not_ready):
            self.resend_heartbeat = True
        elif r.max_term > r.term:
            self.change_role_to_candidate(r.max_term)
        elif r.inconsistent_leader:
            self.change_role_to_candidate(r.term)
        elif self.ctx.now - self.last_succ_heartbeat > self.hb_leak * self.hb_interval:
            self.change_role_to_candidate(r.term)

    def handle_heartbeat(self, req: HeartBeatRequest) -> HeartBeatResponse:
        ms = self.ms

        def reply(code: C) -> HeartBeatResponse:
            return req.reply(HeartBeatResponse, code=code, term=ms.curr_term, leader_id=ms.leader_id)

        if not ms.is_peer(req.leader_id):
            return reply(C.UNKNOWN_MEMBER)
        if req.leader_id == ms.self_id:
            return reply(C.UNEXPECTED_MEMBER)
        if req.term < ms.curr_term:
            return reply(C.EXPIRED_TERM)
        if req.term == ms.curr_term:
            if ms.leader_id is None:
                self.change_role_to_follower(req.term, req.leader_id)
                return reply(C.SUCCESS)
            if ms.leader_id == req.leader_id:
                self.last_leader_heartbeat = self.ctx.now
                return reply(C.SUCCESS)
            return reply(C.INCONSISTENT_LEADER)
        self.change_role_to_candidate(req.term)
        self.need_increase_term_immediately = True
        return reply(C.TERM_NOT_READY)

    # ------------------------------------------------------------------ candidate
    def forbid_leadership(self) -> None:
        """This member must not lead (its driver found its data unfit, e.g. a commit log that does not
        match the group's): step down if leading, and never stand for election again. It still votes
        and follows."""
        self.may_lead = False
        if self.ms.is_leader():
            self.hb_round = None
            self.change_role_to_candidate(self.ms.curr_term)

    def _maintain_as_candidate(self) -> None:
        ms = self.ms
        now = self.ctx.now
        if not self.may_lead:
            # never stands, but still enters a larger term it saw (or its votes stay "not ready")
            self.vote_round = None
            if self.need_increase_term_immediately:
                self.need_increase_term_immediately = False
                ms.next_term()
            return
        r = self.vote_round
        if r is not None:
            if now >= r.deadline:
                if r.pre:
                    self._finish_pre_vote_round(r)
                else:
                    self._finish_vote_round(r)
            return
        if now < self.next_time_to_request_vote and not self.need_increase_term_immediately:
            return
        if self.last_parse_result is ParseResult.WAIT_TO_VOTE_NEXT or self.need_increase_term_immediately:
            if not self.need_increase_term_immediately and self._pre_vote_needed():
                self._send_pre_votes()
                return
            term = ms.next_term()
            self.last_parse_result = ParseResult.WAIT_TO_REVOTE
        else:
            term = ms.curr_term
        if self.need_increase_term_immediately:
            self.need_increase_term_immediately = False
            self.next_time_to_request_vote = self._random_vote_interval()
            return
        self._send_votes(term)

    def _vote_round(self, term: int, pre: bool) -> _VoteRound:
        ms = self.ms
        t = self.cfg.ticks
        # DLedger waits 2000 ms + random(maxVoteIntervalMs); 2000 is its heartbeat interval.
        wait = self.hb_interval + self.ctx.rng.randint(0, t(self.cfg.maxVoteIntervalMs))
        r = _VoteRound(term, self.ctx.now + wait, {}, pre=pre)
        self.vote_round = r
        for peer in ms.other_peers():
            m = self.ctx.send(
                VoteRequest(
                    to=peer,
                    term=term,
                    leader_id=ms.self_id,
                    ledger_end_index=ms.ledger_end_index,
                    ledger_end_term=ms.ledger_end_term,
                    pre_vote=True if pre else None,
                )
            )
            r.rids[m.rid] = peer
        return r

    # ------------------------------------------------------------------ pre-vote
    def _pre_vote_needed(self) -> bool:
        """The next round would invent a term (not adopt a larger one seen, not a transfer)."""
        ms = self.ms
        return (
            self.cfg.enablePreVote
            and ms.known_max_term_in_group <= ms.curr_term
            and not ms.is_taking_leadership()
        )

    def _send_pre_votes(self) -> None:
        ms = self.ms
        r = self._vote_round(ms.curr_term + 1, pre=True)
        r.replies[ms.self_id] = VoteResponse(vote_result=V.ACCEPT, term=ms.curr_term)
        self._maybe_finish_pre_vote_round(r)

    def _maybe_finish_pre_vote_round(self, r: _VoteRound) -> None:
        accepted = sum(1 for x in r.replies.values() if x.vote_result is V.ACCEPT)
        outstanding = self.ms.peer_size - len(r.replies)
        if self.ms.is_quorum(accepted) or not self.ms.is_quorum(accepted + outstanding):
            self._finish_pre_vote_round(r)

    def _finish_pre_vote_round(self, r: _VoteRound) -> None:
        self.vote_round = None
        ms = self.ms
        if not ms.is_candidate() or r.term != ms.curr_term + 1:
            return
        accepted = sum(1 for x in r.replies.values() if x.vote_result is V.ACCEPT)
        if ms.is_quorum(accepted):
            # a quorum would vote for us: enter the new term and ask for real, now
            term = ms.next_term()
            self.last_parse_result = ParseResult.WAIT_TO_REVOTE
            self._send_votes(term)
            return
        # A larger term seen is adopted (adopting never disrupts: that term exists already).
        seen = max((x.term for x in r.replies.values()), default=-1)
        if seen > ms.curr_term:
            self.change_role_to_candidate(seen)
        self.next_time_to_request_vote = self._random_vote_interval()

    def handle_pre_vote(self, req: VoteRequest) -> VoteResponse:
        """Answer a pre-vote without changing anything here."""
        ms = self.ms
        alive = ms.is_leader() or (
            ms.is_follower() and self.ctx.now - self.last_leader_heartbeat <= self.election_timeout
        )
        res, term = pre_vote_result(ms, req, alive)
        return req.reply(VoteResponse, vote_result=res, term=term, leader_id=ms.leader_id)

    # ------------------------------------------------------------------ vote
    def _send_votes(self, term: int) -> None:
        ms = self.ms
        r = self._vote_round(term, pre=False)
        own = VoteRequest(
            group=ms.group,
            frm=ms.self_id,
            to=ms.self_id,
            local_id=ms.self_id,
            remote_id=ms.self_id,
            term=term,
            leader_id=ms.self_id,
            ledger_end_index=ms.ledger_end_index,
            ledger_end_term=ms.ledger_end_term,
        )
        r.replies[ms.self_id] = self.handle_vote(own, self_vote=True)
        self._maybe_finish_vote_round(r)

    def on_vote_response(self, resp: VoteResponse) -> None:
        r = self.vote_round
        if r is None or resp.rid not in r.rids:
            return
        r.replies[r.rids.pop(resp.rid)] = resp
        if r.pre:
            self._maybe_finish_pre_vote_round(r)
        else:
            self._maybe_finish_vote_round(r)

    def _maybe_finish_vote_round(self, r: _VoteRound) -> None:
        results = [x.vote_result for x in r.replies.values()]
        accepted = results.count(V.ACCEPT)
        not_ready = results.count(V.REJECT_TERM_NOT_READY)
        q = self.ms.is_quorum
        if (
            V.REJECT_ALREADY_HAS_LEADER in results
            or q(accepted)
            or q(accepted + not_ready)
            or len(r.replies) == self.ms.peer_size
        ):
            self._finish_vote_round(r)

    def _finish_vote_round(self, r: _VoteRound) -> None:
        self.vote_round = None
        ms = self.ms
        if not ms.is_candidate():
            return
        valid = accepted = not_ready = bigger_ledger = 0
        known_max_term = -1
        has_leader = False
        for resp in r.replies.values():
            res = resp.vote_result
            if res is not V.UNKNOWN:
                valid += 1
            if res is V.ACCEPT:
                accepted += 1
            elif res is V.REJECT_ALREADY_HAS_LEADER:
                has_leader = True
            elif res in (V.REJECT_TERM_SMALL_THAN_LEDGER, V.REJECT_EXPIRED_VOTE_TERM):
                known_max_term = max(known_max_term, resp.term)
            elif res in (V.REJECT_EXPIRED_LEDGER_TERM, V.REJECT_SMALL_LEDGER_END_INDEX):
                bigger_ledger += 1
            elif res is V.REJECT_TERM_NOT_READY:
                not_ready += 1
        q = ms.is_quorum
        t = self.cfg.ticks
        if known_max_term > r.term:
            result = ParseResult.WAIT_TO_VOTE_NEXT
            self.next_time_to_request_vote = self._random_vote_interval()
            self.change_role_to_candidate(known_max_term)
        elif has_leader:
            result = ParseResult.WAIT_TO_REVOTE
            self.next_time_to_request_vote = self._random_vote_interval() + self.hb_interval * self.hb_leak
        elif not q(valid):
            result = ParseResult.WAIT_TO_REVOTE
            self.next_time_to_request_vote = self._random_vote_interval()
        elif not q(valid - bigger_ledger):
            result = ParseResult.WAIT_TO_REVOTE
            self.next_time_to_request_vote = self._random_vote_interval() + t(self.cfg.maxVoteIntervalMs)
        elif q(accepted):
            result = ParseResult.PASSED
        elif q(accepted + not_ready):
            result = ParseResult.REVOTE_IMMEDIATELY
        else:
            result = ParseResult.WAIT_TO_VOTE_NEXT
            self.next_time_to_request_vote = self._random_vote_interval()
        self.last_parse_result = result
        if result is ParseResult.PASSED:
            self.change_role_to_leader(r.term)
        elif result is ParseResult.REVOTE_IMMEDIATELY:
            self.next_time_to_request_vote = self.ctx.now

    def handle_vote(self, req: VoteRequest, self_vote: bool = False) -> VoteResponse:
        ms = self.ms

        def reply(res: V, term: int | None = None) -> VoteResponse:
            return req.reply(
                VoteResponse,
                vote_result=res,
                term=ms.curr_term if term is None else term,
                leader_id=ms.leader_id,
            )

        if not ms.is_peer(req.leader_id):
            return reply(V.REJECT_UNKNOWN_LEADER)
        if not self_vote and req.leader_id == ms.self_id:
            return reply(V.REJECT_UNEXPECTED_LEADER)
        if req.ledger_end_term < ms.ledger_end_term:
            return reply(V.REJECT_EXPIRED_LEDGER_TERM)
        if req.ledger_end_term == ms.ledger_end_term and req.ledger_end_index < ms.ledger_end_index:
            return reply(V.REJECT_SMALL_LEDGER_END_INDEX)
        if req.term < ms.curr_term:
            return reply(V.REJECT_EXPIRED_VOTE_TERM)
        if req.term == ms.curr_term:
            if ms.curr_vote_for is not None and ms.curr_vote_for != req.leader_id:
                if ms.leader_id is not None:
                    return reply(V.REJECT_ALREADY_HAS_LEADER)
                return reply(V.REJECT_ALREADY_VOTED)
        else:
            self.change_role_to_candidate(req.term)
            self.need_increase_term_immediately = True
            return reply(V.REJECT_TERM_NOT_READY)
        if req.term < ms.ledger_end_term:
            return reply(V.REJECT_TERM_SMALL_THAN_LEDGER, term=ms.ledger_end_term)
        if (
            not self_vote
            and ms.is_taking_leadership()
            and (req.ledger_end_term, req.ledger_end_index) <= (ms.ledger_end_term, ms.ledger_end_index)
        ):
            return reply(V.REJECT_TAKING_LEADERSHIP)
        if ms.curr_vote_for != req.leader_id:
            ms.set_vote_for(req.leader_id)
        return reply(V.ACCEPT)

    # ------------------------------------------------------------------ leadership transfer
    def transfer_leadership(self, transferee: str, origin: LeadershipTransferRequest | None = None) -> int:
        """Leader side: start handing leadership to ``transferee``; returns the request id
        whose TransferResult will appear in a later Ready. DLedgerError on a failed check."""
        ms = self.ms
        if not ms.is_peer(transferee) or transferee == ms.self_id:
            raise DLedgerError(C.UNKNOWN_MEMBER, f"transferee {transferee} is not a peer")
        if not ms.is_leader():
            raise DLedgerError(C.NOT_LEADER, f"{ms.self_id} is not leader")
        if origin is not None and origin.term != ms.curr_term:
            raise DLedgerError(C.INCONSISTENT_TERM, f"term {origin.term} != {ms.curr_term}")
        if self._lag_of(transferee) >= self.cfg.maxLeadershipTransferWaitIndex:
            raise DLedgerError(C.FALL_BEHIND_TOO_MUCH, f"{transferee} is too far behind")
        if ms.transferee is not None or self.outgoing_transfer is not None:
            raise DLedgerError(C.LEADER_TRANSFERRING, f"already transferring to {ms.transferee}")
        ms.transferee = transferee
        m = self.ctx.send(
            LeadershipTransferRequest(
                to=transferee,
                term=ms.curr_term,
                leader_id=ms.self_id,
                transfer_id=ms.self_id,
                transferee_id=transferee,
                take_leadership_ledger_index=ms.ledger_end_index,
            )
        )
        t = self.cfg.ticks
        deadline = self.ctx.now + t(self.cfg.leadershipTransferWaitTimeout) + t(_TRANSFER_REPLY_GRACE_MS)
        self.outgoing_transfer = _OutgoingTransfer(m.rid, ms.curr_term, transferee, deadline, origin)
        return m.rid

    def _finish_outgoing_transfer(self, code: int) -> None:
        tr = self.outgoing_transfer
        if tr is None:
            return
        self.outgoing_transfer = None
        ms = self.ms
        if code != C.SUCCESS or (ms.is_leader() and ms.curr_term == tr.term):
            ms.transferee = None
        self.ctx.transfer_results.append(TransferResult(tr.rid, int(code)))
        if tr.origin is not None:
            self.ctx.respond(
                tr.origin.reply(
                    LeadershipTransferResponse, code=int(code), term=ms.curr_term, leader_id=ms.leader_id
                )
            )

    def on_transfer_response(self, resp: LeadershipTransferResponse) -> None:
        tr = self.outgoing_transfer
        if tr is not None and resp.rid == tr.rid:
            self._finish_outgoing_transfer(resp.code)

    def handle_transfer(self, req: LeadershipTransferRequest) -> LeadershipTransferResponse | None:
        """A LEADERSHIP_TRANSFER request; None when the answer comes later."""
        ms = self.ms

        def reply(code: C) -> LeadershipTransferResponse:
            return req.reply(
                LeadershipTransferResponse, code=int(code), term=ms.curr_term, leader_id=ms.leader_id
            )

        if req.transfer_id == ms.self_id:
            try:
                self.transfer_leadership(req.transferee_id or "", origin=req)
            except DLedgerError as e:
                return reply(e.code)
            return None
        if req.transferee_id == ms.self_id:
            if req.transfer_id != ms.leader_id:
                return reply(C.INCONSISTENT_LEADER)
            if self.incoming_transfer is not None:
                return reply(C.LEADER_TRANSFERRING)
            deadline = self.ctx.now + self.cfg.ticks(self.cfg.leadershipTransferWaitTimeout)
            self.incoming_transfer = _IncomingTransfer(req, deadline)
            self.check_transfers()
            return None
        return reply(C.UNEXPECTED_ARGUMENT)

    def check_transfers(self) -> None:
        """Time out a transfer this leader started; start or fail one this member was asked to take."""
        now = self.ctx.now
        tr = self.outgoing_transfer
        if tr is not None and now >= tr.deadline:
            self._finish_outgoing_transfer(C.TIMEOUT)
        inc = self.incoming_transfer
        if inc is None or inc.started:
            return
        ms = self.ms
        req = inc.request
        if ms.ledger_end_index >= req.take_leadership_ledger_index:
            if req.term != ms.curr_term:
                self._answer_incoming(C.INCONSISTENT_TERM)
                return
            self.change_role_to_candidate(ms.curr_term)
            # Enter term + 1 now rather than on the next maintainer pass (DLedger's
            # needIncreaseTermImmediately): otherwise a heartbeat of the old leader that
            # arrives first makes this member its follower again and the transfer fails.
            ms.term_to_take_leadership = ms.next_term()
            self.last_parse_result = ParseResult.WAIT_TO_REVOTE
            self.next_time_to_request_vote = self._random_vote_interval()
            inc.started = True  # after the role change above, which must not answer it
        elif now >= inc.deadline:
            self._answer_incoming(C.TAKE_LEADERSHIP_FAILED)

    def _answer_incoming(self, code: C) -> None:
        inc = self.incoming_transfer
        self.incoming_transfer = None
        ms = self.ms
        self.ctx.respond(
            inc.request.reply(
                LeadershipTransferResponse, code=int(code), term=ms.curr_term, leader_id=ms.leader_id
            )
        )

    def _complete_incoming_transfer(self, role: Role) -> None:
        inc = self.incoming_transfer
        if inc is None or not inc.started or role is Role.CANDIDATE and self.ms.is_taking_leadership():
            return
        ms = self.ms
        if role is Role.LEADER and ms.curr_term == ms.term_to_take_leadership:
            self._answer_incoming(C.SUCCESS)
        elif role is Role.FOLLOWER:
            self._answer_incoming(C.TAKE_LEADERSHIP_FAILED)
        elif ms.curr_term > ms.term_to_take_leadership:
            self._answer_incoming(C.EXPIRED_TERM)
        else:
            self._answer_incoming(C.INTERNAL_ERROR)

    def _check_preferred_leader(self) -> None:
        now = self.ctx.now
        if now < self.next_preferred_check:
            return
        self.next_preferred_check = now + self.cfg.ticks(_PREFERRED_CHECK_MS)
        ms = self.ms
        preferred = self.cfg.preferred_leaders()
        if not preferred or ms.self_id in preferred or ms.transferee is not None or self.outgoing_transfer:
            return
        best, best_lag = None, None
        for p in preferred:
            if not ms.is_peer(p) or not ms.peers_live_table.get(p):
                continue
            lag = self._lag_of(p)
            if best_lag is None or lag < best_lag:
                best, best_lag = p, lag
        if best is not None and best_lag < self.cfg.maxLeadershipTransferWaitIndex:
            try:
                self.transfer_leadership(best)
            except DLedgerError:
                pass

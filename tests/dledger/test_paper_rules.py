"""Raft paper rules, each checked on real cores (direct messages or the simulated network)."""

from __future__ import annotations

import random

import pytest

from dledger.core import DLedgerCore
from dledger.protocol import (
    DLedgerError,
    HeartBeatRequest,
    HeartBeatResponse,
    Role,
    VoteRequest,
    VoteResponse,
    VoteResult,
)
from dledger.protocol import (
    DLedgerResponseCode as C,
)
from dledger.storage import MemoryStorage
from tests.dledger.simnet import Cluster, fast_config

IDS = ["n0", "n1", "n2"]


def core_with(self_id: str, entries: list[tuple[int, bytes]], hard_state=(0, None), **kw) -> DLedgerCore:
    st = MemoryStorage()
    for term, body in entries:
        st.append(st.ledger_end_index + 1, term, body)
    return DLedgerCore(fast_config(self_id, IDS), st, hard_state=hard_state, rng=random.Random(7), **kw)


def vote(frm: str, to: str, term: int, end_index: int, end_term: int) -> VoteRequest:
    return VoteRequest(
        group="g", frm=frm, to=to, local_id=frm, remote_id=to, leader_id=frm, term=term,
        ledger_end_index=end_index, ledger_end_term=end_term, rid=99,
    )  # fmt: skip


def only_reply(core: DLedgerCore, cls):
    rd = core.ready()
    replies = [m for m in rd.messages if isinstance(m, cls)]
    assert len(replies) == 1, rd.messages
    core.advance(rd)
    return rd, replies[0]


def test_vote_denied_to_candidate_with_stale_log_and_term_kept():
    b = core_with("n1", [(1, b"a"), (1, b"b"), (2, b"c")], hard_state=(2, None))
    b.step(vote("n0", "n1", term=5, end_index=5, end_term=1))
    _, r = only_reply(b, VoteResponse)
    assert r.vote_result is VoteResult.REJECT_EXPIRED_LEDGER_TERM
    b.step(vote("n0", "n1", term=5, end_index=1, end_term=2))
    _, r = only_reply(b, VoteResponse)
    assert r.vote_result is VoteResult.REJECT_SMALL_LEDGER_END_INDEX
    # DLedger checks the ledger before the term: a stale candidate does not bump our term.
    assert b.term == 2 and b.member_state.curr_vote_for is None


def test_vote_granted_once_per_term_and_persisted_before_the_reply():
    b = core_with("n1", [(1, b"a")], hard_state=(3, None))
    b.step(vote("n0", "n1", term=3, end_index=0, end_term=1))
    rd, r = only_reply(b, VoteResponse)
    assert r.vote_result is VoteResult.ACCEPT and r.rid == 99 and r.to == "n0"
    # The Ready that carries the reply also carries the vote to persist first.
    assert rd.hard_state == (3, "n0")
    b.step(vote("n2", "n1", term=3, end_index=0, end_term=1))
    rd, r = only_reply(b, VoteResponse)
    assert r.vote_result is VoteResult.REJECT_ALREADY_VOTED and rd.hard_state is None
    b.step(vote("n0", "n1", term=3, end_index=0, end_term=1))  # the same candidate again
    _, r = only_reply(b, VoteResponse)
    assert r.vote_result is VoteResult.ACCEPT


def test_higher_term_vote_makes_member_adopt_the_term_then_vote():
    b = core_with("n1", [], hard_state=(3, "n1"))
    b.step(vote("n0", "n1", term=7, end_index=-1, end_term=-1))
    _, r = only_reply(b, VoteResponse)
    assert r.vote_result is VoteResult.REJECT_TERM_NOT_READY and b.role is Role.CANDIDATE
    b.tick()  # the maintainer moves to the known max term at once
    rd = b.ready()
    assert rd.hard_state == (7, None) and b.term == 7
    b.advance(rd)
    b.step(vote("n0", "n1", term=7, end_index=-1, end_term=-1))
    rd, r = only_reply(b, VoteResponse)
    assert r.vote_result is VoteResult.ACCEPT and rd.hard_state == (7, "n0")


def test_heartbeat_with_higher_term_steps_member_down_and_then_follows():
    b = core_with("n1", [], hard_state=(2, None))
    hb = HeartBeatRequest(group="g", frm="n0", to="n1", local_id="n0", remote_id="n1", leader_id="n0", term=4)
    b.step(hb)
    _, r = only_reply(b, HeartBeatResponse)
    assert r.code == C.TERM_NOT_READY
    b.tick()
    b.advance(b.ready())
    assert b.term == 4
    b.step(hb)
    rd, r = only_reply(b, HeartBeatResponse)
    assert r.code == C.SUCCESS and b.role is Role.FOLLOWER and b.leader_id == "n0"
    assert [(x.role, x.term) for x in rd.role_changes] == [(Role.FOLLOWER, 4)]
    old = HeartBeatRequest(
        group="g", frm="n2", to="n1", local_id="n2", remote_id="n1", leader_id="n2", term=3
    )
    b.step(old)
    _, r = only_reply(b, HeartBeatResponse)
    assert r.code == C.EXPIRED_TERM and r.term == 4


def test_member_ahead_in_term_with_stale_log_rejoins():
    # n2 ran ahead in term but missed entries: it can never win, and it rejects the lower
    # term's heartbeats. The leader steps down on its EXPIRED_TERM reply and is re-elected
    # in a higher term, which n2 then follows (DLedger 0.3.1.2 would leave n2 out forever).
    c = Cluster(
        3,
        seed=4,
        prefill={"n0": [(1, b"a"), (1, b"b")], "n1": [(1, b"a"), (1, b"b")], "n2": [(1, b"a")]},
        hard_states={"n0": (1, None), "n1": (1, None), "n2": (9, "n2")},
    )
    c.run_until(
        lambda: c.leader() is not None and all(n.role is not Role.CANDIDATE for n in c.nodes.values()),
        5000,
        "everyone settled",
    )
    ld = c.leader()
    assert ld.self_id in ("n0", "n1") and ld.term >= 9
    assert c.nodes["n2"].leader_id == ld.self_id and c.nodes["n2"].term == ld.term


def test_isolated_candidate_does_not_run_ahead_in_term():
    c = Cluster(3, seed=3)
    c.run_until(lambda: c.leader() is not None, 1000)
    other = next(i for i in c.ids if c.nodes[i].role is not Role.LEADER)
    term = c.nodes[other].term
    c.isolate(other)
    c.run(2000, check_every=50)
    # Without any valid reply a DLedger candidate revotes in the same term.
    assert c.nodes[other].role is Role.CANDIDATE and c.nodes[other].term <= term + 1
    c.heal()
    c.run_until(lambda: c.nodes[other].role is Role.FOLLOWER, 1000)


def test_request_for_other_member_or_group_is_refused():
    b = core_with("n1", [])
    b.step(vote("n0", "n2", term=1, end_index=-1, end_term=-1))  # addressed to n2
    _, r = only_reply(b, VoteResponse)
    assert r.code == C.UNKNOWN_MEMBER
    req = vote("n0", "n1", term=1, end_index=-1, end_term=-1)
    req.group = "other"
    b.step(req)
    _, r = only_reply(b, VoteResponse)
    assert r.code == C.UNKNOWN_GROUP and b.member_state.curr_vote_for is None


def test_only_current_term_entries_are_committed_by_counting():
    # n0 holds an uncommitted entry of term 2; n1 and n0 form the only quorum (n2 is down).
    c = Cluster(
        3,
        seed=5,
        noop=False,
        prefill={"n0": [(1, b"a"), (2, b"b")], "n1": [(1, b"a")], "n2": [(1, b"a")]},
        hard_states={i: (3, None) for i in IDS},
        down=("n2",),
    )
    c.run_until(lambda: c.leader() is not None, 2000)
    ld = c.leader()
    assert ld.self_id == "n0" and ld.term > 2
    n1 = c.disks["n1"].storage
    c.run_until(lambda: n1.ledger_end_index == 1, 2000, "old entry replicated to n1")
    c.run(300)
    # Stored on a quorum, but of an older term: not committed by counting.
    assert ld.committed_index == -1
    idx = ld.propose(b"c").index
    c.run_until(lambda: ld.committed_index == idx, 1000, "current-term entry commits")
    assert [c.committed[i] for i in range(3)] == [(1, b"a"), (2, b"b"), (ld.term, b"c")]


def test_new_leader_commits_older_tail_through_a_noop_entry():
    c = Cluster(
        3,
        seed=5,
        prefill={"n0": [(1, b"a"), (2, b"b")], "n1": [(1, b"a")], "n2": [(1, b"a")]},
        hard_states={i: (3, None) for i in IDS},
        down=("n2",),
    )
    c.run_until(lambda: c.leader() is not None and c.leader().committed_index == 2, 3000)
    ld = c.leader()
    e = ld.storage.get(2)
    assert e.term == ld.term and e.body == b""


def test_divergent_follower_tail_is_truncated():
    # n2 was leader in term 2 and wrote two entries nobody else got; n0/n1 moved on in term 3.
    c = Cluster(
        3,
        seed=11,
        prefill={
            "n0": [(1, b"a"), (3, b"x"), (3, b"y")],
            "n1": [(1, b"a"), (3, b"x"), (3, b"y")],
            "n2": [(1, b"a"), (2, b"stale1"), (2, b"stale2"), (2, b"stale3")],
        },
        hard_states={i: (3, None) for i in IDS},
    )
    c.run_until(lambda: c.leader() is not None, 3000)
    assert c.leader().self_id in ("n0", "n1")  # n2's log is older: it cannot win
    index = c.leader().propose(b"z").index
    c.run_until(lambda: all(c.nodes[i].committed_index >= index for i in IDS), 3000)
    logs = {i: [(e.term, e.body) for e in map(c.disks[i].storage.get, range(index + 1))] for i in IDS}
    assert logs["n2"] == logs["n0"] == logs["n1"]
    assert all(b"stale" not in body for _t, body in logs["n2"])


def test_propose_on_follower_is_refused():
    c = Cluster(3, seed=2)
    c.run_until(lambda: c.leader() is not None, 2000)
    follower = next(c.nodes[i] for i in c.ids if c.nodes[i].role is not Role.LEADER)
    with pytest.raises(DLedgerError) as ei:
        follower.propose(b"x")
    assert ei.value.code == C.NOT_LEADER


def test_disk_full_refuses_new_appends():
    c = Cluster(3, seed=2)
    c.run_until(lambda: c.leader() is not None, 2000)
    ld = c.leader()
    ld.disk_full = True
    with pytest.raises(DLedgerError) as ei:
        ld.propose(b"x")
    assert ei.value.code == C.DISK_FULL and ld.storage.ledger_end_index == -1
    ld.disk_full = False
    assert ld.propose(b"x").index == 0

"""Proposals that want no AppendResult (``propose(track=False)``): a caller that proposes several
entries waits for the last one (``core.track``); the others still commit and still count as pending."""

from __future__ import annotations

import pytest

from dledger.protocol import DLedgerError
from dledger.protocol import DLedgerResponseCode as C
from tests.dledger.simnet import Cluster


def _elected(**cfg) -> tuple[Cluster, object]:
    c = Cluster(3, seed=7, **cfg)
    c.run_until(lambda: c.leader() is not None, 500, "a leader")
    ld = c.leader()
    c.run_until(lambda: ld.committed_index >= ld.member_state.ledger_end_index, 200, "the no-op committed")
    return c, ld


def test_untracked_entries_commit_without_results_and_the_tracked_last_reports():
    c, ld = _elected()
    nid = ld.self_id
    entries = [ld.propose(b"u%d" % k, track=False) for k in range(5)]
    ld.track(entries[-1])
    c.run_until(lambda: entries[-1].index in c.results[nid], 200, "the last entry's result")
    assert c.results[nid][entries[-1].index] == C.SUCCESS
    assert not any(e.index in c.results[nid] for e in entries[:-1])  # no result per entry
    assert all(c.committed[e.index] == (e.term, e.body) for e in entries)


def test_track_after_commit_reports_at_once():
    c, ld = _elected()
    e = ld.propose(b"early", track=False)
    c.run_until(lambda: ld.committed_index >= e.index, 200, "committed")
    ld.track(e)
    c._drain_ready(ld.self_id)
    assert c.results[ld.self_id][e.index] == C.SUCCESS


def test_untracked_entries_count_as_pending_and_time_out_through_the_tracked_one():
    c, ld = _elected(maxPendingRequestsNum=4)
    c.isolate(ld.self_id)  # nothing commits
    es = [ld.propose(b"p%d" % k, track=False) for k in range(3)]
    ld.track(es[-1])
    ld.propose(b"fourth", track=False)
    with pytest.raises(DLedgerError) as ei:  # four uncommitted entries: full, though one waits
        ld.propose(b"fifth")
    assert ei.value.code == C.LEADER_PENDING_FULL
    c.run_until(lambda: es[-1].index in c.results[ld.self_id], 300, "the tracked entry's timeout")
    assert c.results[ld.self_id][es[-1].index] in (C.WAIT_QUORUM_ACK_TIMEOUT, C.TERM_CHANGED)

"""3- and 5-member clusters over the simulated network: elections, replication, faults,
crash/restart, leadership transfer, and seeded chaos with safety checked after every tick."""

from __future__ import annotations

import pytest

from dledger.protocol import DLedgerError, PushEntryRequest, PushType, Role
from dledger.protocol import DLedgerResponseCode as C
from tests.dledger.chaos import chaos_run, commit_one
from tests.dledger.simnet import Cluster


def elect(c: Cluster, max_ticks: int = 3000):
    c.run_until(lambda: c.leader() is not None, max_ticks, "a leader")
    return c.leader()


@pytest.mark.parametrize("n", [3, 5])
def test_election_and_replication(n):
    c = Cluster(n, seed=n)
    ld = elect(c)
    c.run_until(lambda: all(x.role is Role.FOLLOWER for x in c.nodes.values() if x is not ld), 1000)
    idx = [ld.propose(b"m%d" % i).index for i in range(50)]
    c.run_until(lambda: all(x.committed_index == idx[-1] for x in c.nodes.values()), 1000, "all commit")
    assert all(c.results[ld.self_id][i] == C.SUCCESS for i in idx)
    for nid in c.ids:
        st = c.disks[nid].storage
        assert [st.get(i).body for i in idx] == [b"m%d" % i for i in range(50)]
    c.full_check()


def test_minority_partition_cannot_commit_and_majority_elects_new_leader():
    c = Cluster(5, seed=9)
    old = elect(c)
    others = [i for i in c.ids if i != old.self_id]
    c.partition([old.self_id, others[0]], others[1:])
    stranded = old.propose(b"lost?").index
    new = None

    def majority_leader():
        nonlocal new
        for i in others[1:]:
            if c.nodes[i].role is Role.LEADER:
                new = c.nodes[i]
        return new

    c.run_until(majority_leader, 3000, "leader in the majority")
    assert old.committed_index < stranded
    nid, index = commit_one(c, b"majority", 2000)
    assert nid == new.self_id
    c.heal()
    c.run_until(lambda: all(x.committed_index >= index for x in c.nodes.values()), 3000)
    # The stranded entry was never committed and is gone from the old leader's log.
    assert c.disks[old.self_id].storage.get(stranded).body != b"lost?"
    assert c.results[old.self_id][stranded] != C.SUCCESS
    c.full_check()


def test_crash_and_restart_rebuilds_from_storage():
    c = Cluster(3, seed=21)
    ld = elect(c)
    first = [ld.propose(b"a%d" % i).index for i in range(20)]
    c.run_until(lambda: all(x.committed_index == first[-1] for x in c.nodes.values()), 1000)
    follower = next(i for i in c.ids if i != ld.self_id)
    c.crash(follower)
    more = [ld.propose(b"b%d" % i).index for i in range(20)]
    c.run_until(lambda: ld.committed_index == more[-1], 1000, "commit with one member down")
    c.crash(ld.self_id)  # now only one member is up: no quorum
    c.start(follower)
    c.start(ld.self_id)
    c.run_until(lambda: all(x.committed_index >= more[-1] for x in c.nodes.values()), 5000, "catch up")
    c.full_check()
    assert c.disks[follower].hard_state[0] >= 0


def test_lossy_duplicating_reordering_network_keeps_committing():
    c = Cluster(5, seed=33)
    elect(c)
    c.net.drop, c.net.dup, c.net.max_delay = 0.1, 0.1, 6
    for i in range(30):
        commit_one(c, b"x%d" % i, 3000)
    c.full_check()


def test_transfer_leadership_to_named_member():
    c = Cluster(3, seed=8)
    ld = elect(c)
    for i in range(10):
        ld.propose(b"t%d" % i)
    target = next(i for i in c.ids if i != ld.self_id)
    c.run(50)
    rid = ld.transfer_leadership(target)
    with pytest.raises(DLedgerError) as ei:
        ld.propose(b"during transfer")
    assert ei.value.code == C.LEADER_TRANSFERRING
    c.run_until(lambda: c.transfer_results[ld.self_id], 1000, "transfer answered")
    assert [(r.rid, r.code) for r in c.transfer_results[ld.self_id]] == [(rid, C.SUCCESS)]
    assert c.leader().self_id == target and c.leader().term > ld.term - 1
    assert ld.role is not Role.LEADER
    commit_one(c, b"after transfer", 1000)
    c.full_check()


def test_transfer_refused_when_not_leader_or_unknown_member():
    c = Cluster(3, seed=8)
    ld = elect(c)
    follower = next(x for x in c.nodes.values() if x is not ld)
    with pytest.raises(DLedgerError) as ei:
        follower.transfer_leadership(ld.self_id)
    assert ei.value.code == C.NOT_LEADER
    with pytest.raises(DLedgerError) as ei:
        ld.transfer_leadership("n9")
    assert ei.value.code == C.UNKNOWN_MEMBER


def test_preferred_leader_takes_over():
    c = Cluster(3, seed=12, preferredLeaderIds="n2")
    c.run_until(
        lambda: c.leader() is not None and c.leader().self_id == "n2",
        5000,
        "preferred member n2 leads",
    )
    commit_one(c, b"on preferred", 1000)
    # It stays the leader: nobody hands leadership away from a preferred member.
    c.run(1000, check_every=10)
    assert c.leader().self_id == "n2"


@pytest.mark.parametrize("n,seed", [(3, s) for s in range(1, 7)] + [(5, s) for s in range(1, 7)])
def test_chaos_safety_and_liveness(n, seed):
    c = chaos_run(n, seed, 4000)
    assert len(c.committed) > 50


def file_factory(tmp_path):
    from dledger.mmap_file_store import DLedgerMmapFileStore

    def factory(nid):
        return DLedgerMmapFileStore(
            str(tmp_path / f"dledger-{nid}"), data_file_size=16 * 1024, index_file_size=8 * 1024
        )

    return factory


def file_cluster(tmp_path, n=3, seed=1, **kw) -> Cluster:
    return Cluster(n, seed=seed, storage_factory=file_factory(tmp_path), **kw)


def test_file_store_cluster_restarts_from_disk(tmp_path):
    c = file_cluster(tmp_path, seed=4)
    ld = elect(c)
    for i in range(30):
        commit_one(c, b"f%d" % i * 40, 2000)
    for nid in list(c.ids):  # restart every member in turn, the leader too
        c.crash(nid)
        commit_one(c, b"while %s is down" % nid.encode(), 3000)
        c.start(nid)
        c.full_check()
    nid, index = commit_one(c, b"last", 3000)
    c.run_until(lambda: all(x.committed_index >= index for x in c.nodes.values()), 3000)
    c.full_check()
    for nid in c.ids:
        st = c.disks[nid].storage
        assert [st.get(i).body for i in range(index + 1)] == [c.committed[i][1] for i in range(index + 1)]
    assert ld.term <= c.leader().term


@pytest.mark.parametrize("seed", [1, 2])
def test_chaos_with_file_stores(tmp_path, seed):
    c = chaos_run(3, seed, 2000, storage_factory=file_factory(tmp_path))
    assert len(c.committed) > 20


def test_batch_push_replicates_in_batches():
    c = Cluster(3, seed=5, enableBatchPush=True, maxBatchPushSize=1024)
    ld = elect(c)
    c.run(30)
    sent = []
    orig = c._send
    c._send = lambda m: (sent.append(m), orig(m))
    idx = [ld.propose(b"b" * 200).index for _ in range(40)]  # 248-byte entries: 5 per batch
    c.run_until(lambda: all(x.committed_index >= idx[-1] for x in c.nodes.values()), 1000)
    batches = [m for m in sent if getattr(m, "batch_entry", None)]
    assert batches and max(len(m.batch_entry) for m in batches) == 5
    c.full_check()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_chaos_with_batch_push(seed):
    chaos_run(3, seed, 3000, enableBatchPush=True, maxBatchPushSize=200)


def test_append_hook_body_is_what_followers_store():
    c = Cluster(3, seed=6)
    ld = elect(c)
    e = ld.propose(
        bytes(8), hook=lambda pos, body: body.__setitem__(slice(0, 8), (pos + 48).to_bytes(8, "big"))
    )
    c.run_until(lambda: all(x.committed_index >= e.index for x in c.nodes.values()), 1000)
    for nid in c.ids:
        assert int.from_bytes(c.disks[nid].storage.get(e.index).body, "big") == e.pos + 48


def test_same_seed_same_history():
    # The core is deterministic: the same seed gives the same elections and commits.
    a = chaos_run(3, 77, 1500)
    b = chaos_run(3, 77, 1500)
    assert a.role_log == b.role_log and a.committed == b.committed and a.delivered == b.delivered
    c = chaos_run(3, 78, 1500)
    assert c.role_log != a.role_log


def test_follower_behind_cleaned_leader_restarts_its_log_from_the_leader():
    c = Cluster(3, seed=14)
    ld = elect(c)
    lag = next(i for i in c.ids if i != ld.self_id)
    c.crash(lag)
    for i in range(40):
        ld.propose(b"c%d" % i)
    c.run_until(lambda: ld.committed_index >= 39, 1000)
    for nid in c.ids:
        if c.nodes[nid] is not None:
            c.disks[nid].storage.delete_before(30)  # both live members clean up to 30
    assert c.disks[ld.self_id].storage.ledger_begin_index == 30
    c.start(lag)
    c.run_until(lambda: c.nodes[lag].committed_index >= ld.committed_index, 2000, "lagging member catches up")
    st = c.disks[lag].storage
    assert st.ledger_begin_index == 30 and [st.get(i).body for i in range(30, 40)] == [
        b"c%d" % i for i in range(30, 40)
    ]
    c.full_check()


@pytest.mark.parametrize("seed,files", [(401, False), (402, True), (403, False)])
def test_chaos_with_cleaning(tmp_path, seed, files):
    kw = {"storage_factory": file_factory(tmp_path)} if files else {}
    chaos_run(3, seed, 3000, compaction=True, **kw)


@pytest.mark.parametrize("batch", [True, False])
def test_proposals_of_one_turn_share_push_rounds(batch):
    """Pushes leave when the Ready is taken: 40 proposals made together go out as full
    batches (enableBatchPush, 5 entries of 248 bytes per 1 KiB) or one push per entry."""
    c = Cluster(3, seed=5, enableBatchPush=batch, maxBatchPushSize=1024)
    ld = elect(c)
    first = ld.propose(b"first").index  # the dispatchers compare, then append
    c.run_until(lambda: all(x.committed_index >= first for x in c.nodes.values()), 1000)
    sent = []
    orig = c._send
    c._send = lambda m: (sent.append(m), orig(m))
    idx = [ld.propose(b"b" * 200).index for _ in range(40)]
    c._drain_ready(ld.self_id)
    appends = [m for m in sent if isinstance(m, PushEntryRequest) and m.type is PushType.APPEND]
    for peer in c.ids:
        if peer == ld.self_id:
            continue
        mine = [m for m in appends if m.to == peer]
        if batch:
            assert [len(m.batch_entry) for m in mine] == [5] * 8
            assert [e.index for m in mine for e in m.batch_entry] == idx
        else:
            assert [m.entry.index for m in mine] == idx and not any(m.batch_entry for m in mine)
    c.run_until(lambda: all(x.committed_index >= idx[-1] for x in c.nodes.values()), 1000)
    c.full_check()

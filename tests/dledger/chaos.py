"""The randomized fault schedule shared by the fast chaos tests and the soak."""

from __future__ import annotations

from tests.dledger.simnet import Cluster


def compact(c: Cluster, nid: str) -> None:
    """Clean committed entries on ``nid`` as the cleaning service would (files or entries)."""
    st = c.disks[nid].storage
    if hasattr(st, "delete_expired_files"):
        st.delete_expired_files()
    else:
        st.delete_before(
            c.rng.randint(st.ledger_begin_index, max(st.ledger_begin_index, st.committed_index + 1))
        )


def chaos_run(n: int, seed: int, steps: int, compaction: bool = False, **cluster_kw) -> Cluster:
    """``steps`` ticks of crashes, restarts, partitions, loss, duplication and delay with
    proposals (and, with ``compaction``, cleaning of committed entries), checking safety
    after every tick; then heal and require liveness."""
    c = Cluster(n, seed=seed, **cluster_kw)
    rng = c.rng
    proposed = 0
    for _ in range(steps):
        r = rng.random()
        if compaction and rng.random() < 0.01:
            up = c.alive()
            if up:
                compact(c, rng.choice(up))
        if r < 0.004:
            # crash a node, but keep a majority of disks intact in spirit: at most a minority down
            up = c.alive()
            if len(up) > n // 2 + 1:
                c.crash(rng.choice(up))
        elif r < 0.012:
            down = [i for i in c.ids if c.nodes[i] is None]
            if down:
                c.start(rng.choice(down))
        elif r < 0.016:
            ids = list(c.ids)
            rng.shuffle(ids)
            k = rng.randint(1, n // 2)
            c.partition(ids[:k], ids[k:])
        elif r < 0.018:
            c.isolate(rng.choice(c.ids))
        elif r < 0.024:
            c.heal()
            c.net.drop = rng.choice([0.0, 0.05, 0.2])
            c.net.dup = rng.choice([0.0, 0.05, 0.2])
            c.net.max_delay = rng.choice([0, 2, 8])
        if rng.random() < 0.3 and c.propose(b"p%d-%d" % (seed, proposed)):
            proposed += 1
        c.tick()
        c.check()
    c.full_check()
    # Heal everything: a leader must emerge and a new proposal must commit everywhere.
    c.heal()
    for nid in c.ids:
        if c.nodes[nid] is None:
            c.start(nid)
    c.run_until(lambda: c.leader() is not None, 3000, "a leader after healing")
    leader_id, index = commit_one(c, b"final-%d" % seed, 3000)
    c.run_until(
        lambda: all(c.nodes[i].committed_index >= index for i in c.ids),
        3000,
        "final proposal committed on every node",
    )
    c.full_check()
    assert c.committed[index][1] == b"final-%d" % seed
    return c


def commit_one(c: Cluster, body: bytes, max_ticks: int) -> tuple[str, int]:
    """Propose ``body`` until a leader reports it committed (a deposed leader's proposal
    may be lost; then it is proposed again). Returns (leader id, index)."""
    deadline = c.now + max_ticks
    while c.now < deadline:
        res = c.propose(body)
        if not res:
            c.tick()
            continue
        nid, index = res
        c.results[nid].pop(index, None)
        while c.now < deadline and index not in c.results[nid]:
            c.tick()
            c.check()
        if c.results[nid].get(index) == 200:
            return nid, index
    raise AssertionError(f"{body!r} not committed within {max_ticks} ticks: {c.roles()}")

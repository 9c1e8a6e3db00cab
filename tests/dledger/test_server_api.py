"""DLedgerServer integration API: flush modes, storage ownership and ``leader_lost``.

Real servers on loopback ports with real file stores in tmp_path.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from dledger.config import DLedgerConfig
from dledger.mmap_file_store import DLedgerMmapFileStore
from dledger.protocol import Role
from dledger.server import DLedgerServer
from tests.support import async_wait_until, free_port

pytestmark = pytest.mark.timeout(60)


def configs(tmp_path, n=3, **kw):
    ids = [f"n{i}" for i in range(n)]
    peers = ";".join(f"{i}-127.0.0.1:{free_port()}" for i in ids)
    base = dict(
        group="g",
        peers=peers,
        storeBaseDir=str(tmp_path),
        mappedFileSizeForEntryData=256 * 1024,
        mappedFileSizeForEntryIndex=32 * 1024,
        heartBeatTimeIntervalMs=100,
        minVoteIntervalMs=100,
        maxVoteIntervalMs=300,
        maxPushTimeOutMs=300,
        tickIntervalMs=10,
    )
    base.update(kw)
    return [DLedgerConfig(selfId=i, **base) for i in ids]


class FlushRecordingStore(DLedgerMmapFileStore):
    """The real file store, recording on which thread each flush ran."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.flush_threads: list[int] = []

    def flush(self) -> None:
        self.flush_threads.append(threading.get_ident())
        super().flush()


def file_store(cfg: DLedgerConfig, cls=DLedgerMmapFileStore):
    return cls(
        cfg.default_path(),
        data_file_size=cfg.mappedFileSizeForEntryData,
        index_file_size=cfg.mappedFileSizeForEntryIndex,
    )


def leader_of(servers):
    ls = [s for s in servers if s.core is not None and s.is_leader]
    if len(ls) != 1:
        return None
    if all(o.leader_id == ls[0].config.selfId for o in servers if o is not ls[0]):
        return ls[0]
    return None


async def _run_appends(tmp_path, async_flush: bool):
    cfgs = configs(tmp_path)
    stores = [file_store(c, FlushRecordingStore) for c in cfgs]
    servers = [
        DLedgerServer(c, storage=st, rng=random.Random(k), async_flush=async_flush)
        for k, (c, st) in enumerate(zip(cfgs, stores, strict=True))
    ]
    for s in servers:
        await s.start()
    try:
        ld = await async_wait_until(lambda: leader_of(servers), timeout=15, what="one leader")
        loop_thread = threading.get_ident()
        for st in stores:
            st.flush_threads.clear()
        last = -1
        for i in range(30):
            last, _ = await ld.append(b"m%d" % i)
        await async_wait_until(lambda: all(s.committed_index >= last for s in servers), timeout=10)
        def synced():  # fdatasync rounds of the background syncers (dledger.flush_data_service)
            return [sum(x.rounds for x in s.syncers) for s in servers]

        await async_wait_until(
            lambda: all(st.flush_threads or n for st, n in zip(stores, synced(), strict=True)), timeout=5,
            what="every member flushed",
        )
        on_loop = [sum(t == loop_thread for t in st.flush_threads) for st in stores]
        # off the loop: executor flushes and the syncers' rounds
        off_loop = [sum(t != loop_thread for t in st.flush_threads) + n
                    for st, n in zip(stores, synced(), strict=True)]
        return on_loop, off_loop, stores, cfgs, last
    finally:
        for s in servers:
            await s.stop()
        for st in stores:
            st.close()


async def test_sync_flush_flushes_on_the_loop_before_acknowledging(tmp_path):
    on_loop, off_loop, *_ = await _run_appends(tmp_path, async_flush=False)
    assert all(n > 0 for n in on_loop)
    assert off_loop == [0, 0, 0]


async def test_async_flush_runs_in_the_background_only(tmp_path):
    on_loop, off_loop, _stores, cfgs, last = await _run_appends(tmp_path, async_flush=True)
    # DLedger's FlushDataService: no flush on the acknowledgement path, a background one instead
    assert on_loop == [0, 0, 0]
    assert all(n > 0 for n in off_loop)
    # what was acknowledged is in the files after stop (flushed and checkpointed)
    for c in cfgs:
        st = file_store(c)
        try:
            assert st.ledger_end_index >= last
            assert st.get(last).body == b"m29"
        finally:
            st.close()


async def test_stop_leaves_a_callers_storage_open_and_flushed(tmp_path):
    (cfg,) = configs(tmp_path, n=1)
    st = file_store(cfg)
    s = DLedgerServer(cfg, storage=st, async_flush=True)
    await s.start()
    await async_wait_until(lambda: s.is_leader, timeout=10, what="single leader")
    idx, _ = await s.append(b"kept")
    await s.stop()
    try:
        # still readable by the caller (a store dispatching after the server stopped)
        assert st.get(idx).body == b"kept"
        with open(st.checkpoint_path) as f:
            ckpt = f.read()
        assert f"endIndex={idx}" in ckpt
    finally:
        st.close()
    # a storage the server made itself is closed by stop()
    own = DLedgerServer(cfg)
    await own.start()
    await async_wait_until(lambda: own.is_leader, timeout=10, what="single leader again")
    data = own.storage.data
    await own.stop()
    assert data.mapped_files and all(not f._available for f in data.mapped_files)


async def test_leader_lost_starts_an_election_at_once(tmp_path):
    # heartbeats every 2 s: without leader_lost a follower waits 3 leaked beats (6 s)
    cfgs = configs(tmp_path, heartBeatTimeIntervalMs=2000)
    servers = [DLedgerServer(c, rng=random.Random(k)) for k, c in enumerate(cfgs)]
    for s in servers:
        await s.start()
    try:
        ld = await async_wait_until(lambda: leader_of(servers), timeout=15, what="one leader")
        idx, _ = await ld.append(b"before")
        term = ld.term
        assert ld.leader_lost() is False  # only a follower stands for election
        rest = [s for s in servers if s is not ld]
        assert rest[0].leader_lost(term - 1) is False  # a stale report changes nothing
        assert rest[0].role is Role.FOLLOWER
        await ld.stop()
        t0 = time.monotonic()
        assert all(s.leader_lost(term) for s in rest)
        new = await async_wait_until(lambda: leader_of(rest), timeout=3, what="new leader within 3 s")
        assert time.monotonic() - t0 < 3
        assert new.term > term
        idx2, _ = await new.append(b"after")
        assert idx2 > idx and new.get_entry(idx).body == b"before"
    finally:
        for s in servers:
            await s.stop()

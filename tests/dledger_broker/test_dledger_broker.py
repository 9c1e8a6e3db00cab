"""DLedger mode over real processes: a NameServer and three bin/mqbroker nodes on loopback."""

from __future__ import annotations

import asyncio
import time

import pytest

from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from remoting.errors import RemotingError
from tests.dledger_broker.cluster import TOPIC, DLedgerCluster, max_offset, msg_offset, pull_all, send, view
from tests.support import async_wait_until


async def test_leader_registers_as_master_and_followers_as_slaves(procs, tmp_path):
    cl = DLedgerCluster(procs, tmp_path).start()
    async with RemotingClient() as c:
        master = await cl.wait_master(c)
        leader = cl.index_of(master)
        # the followers register as slaves with brokerId = selfId number + 1
        want = {0: master} | {i + 1: cl.addr(i) for i in range(3) if i != leader}
        await async_wait_until(lambda: _addrs_are(cl, c, want), 10, 0.05, "slaves registered")
        offsets = []
        for k in range(20):
            r = await send(c, master, b"m%d" % k)
            assert r.code == ResponseCode.SUCCESS, r.remark
            assert int(r.ext_fields["queueOffset"]) == k
            offsets.append(msg_offset(r.ext_fields["msgId"]))
        # a follower refuses writes; it replicates and dispatches what the quorum committed
        follower = next(i for i in range(3) if i != leader)
        r = await send(c, cl.addr(follower), b"no")
        assert r.code == ResponseCode.SERVICE_NOT_AVAILABLE, (r.code, r.remark)  # RocketMQ's answer of a slave
        for i in range(3):
            await async_wait_until(lambda i=i: _max_is(c, cl.addr(i), 20), 10, 0.02, f"n{i} dispatched 20")
        assert [m.body for m in await pull_all(c, master)] == [b"m%d" % k for k in range(20)]
        # the master runs delayed delivery: level 1 (1 s) reaches the real topic through DLedger
        r = await send(c, master, b"later", topic="DLedgerDelayT", props={"DELAY": "1"})
        assert r.code == ResponseCode.SUCCESS, r.remark
        await async_wait_until(lambda: _max_is(c, master, 1, "DLedgerDelayT"), 10, 0.05, "delayed message delivered")
        assert [m.body for m in await pull_all(c, master, "DLedgerDelayT")] == [b"later"]
        # every node holds the same records at the same commit-log offsets (PHYSICALOFFSET = entry pos + 48)
        for i in range(3):
            for k in (0, 7, 19):
                m = await view(c, cl.addr(i), offsets[k])
                assert m is not None and m.body == b"m%d" % k and m.commit_log_offset == offsets[k]


async def _addrs_are(cl, c, want):
    return await cl.broker_addrs(c) == want


async def _max_is(c, addr, n, topic=TOPIC):
    return await max_offset(c, addr, topic) == n


class Sender:
    """One synchronous sender: each body is sent once (never retried), to the master the NameServer
    names; ``acked`` keeps the acknowledged bodies in acknowledgement order with the answering address."""

    def __init__(self, cl: DLedgerCluster, c: RemotingClient, addr: str):
        self.cl, self.c, self.addr = cl, c, addr
        self.acked: list[tuple[bytes, str, float]] = []
        self.failed = 0
        self._stop = False
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        k = 0
        while not self._stop and k < 200_000:
            body = b"s%07d" % k
            k += 1
            try:
                r = await send(self.c, self.addr, body, timeout=3)
                ok = r.code == ResponseCode.SUCCESS
            except (OSError, RemotingError):
                ok = False
            if ok:
                self.acked.append((body, self.addr, time.monotonic()))
                continue
            self.failed += 1
            try:  # a failed send: ask the NameServer for the master (what a client's route refresh does)
                m = (await self.cl.broker_addrs(self.c)).get(0)
            except (OSError, RemotingError):
                m = None
            if m:
                self.addr = m
            await asyncio.sleep(0.02)  # retry pacing (not synchronisation)

    async def stop(self) -> None:
        self._stop = True
        await self.task


def assert_acked_in_order_once(acked: list[bytes], stored: list[bytes]) -> None:
    assert len(stored) == len(set(stored)), "a message is stored twice"
    where = {b: i for i, b in enumerate(stored)}
    missing = [b for b in acked if b not in where]
    assert not missing, f"{len(missing)} acknowledged sends lost, first {missing[:3]}"
    idx = [where[b] for b in acked]
    assert idx == sorted(idx), "acknowledged sends stored out of order"


# enableBatchPush=true is what conf/dledger ships; false is DLedger's default
BATCH_PUSH = pytest.mark.parametrize("batch_push", ["false", "true"], ids=["push1", "batchpush"])


@BATCH_PUSH
async def test_kill_leader_under_sync_sends(procs, tmp_path, batch_push):
    cl = DLedgerCluster(procs, tmp_path, enableBatchPush=batch_push).start()
    async with RemotingClient() as c:
        master = await cl.wait_master(c)
        old = cl.index_of(master)
        snd = Sender(cl, c, master)
        await async_wait_until(lambda: len(snd.acked) >= 100, 20, 0.01, "100 acknowledged sends")
        killed_at = time.monotonic()
        cl.kill(old)
        new_master = await cl.wait_master(c, 15, not_addr=master)
        registered_s = time.monotonic() - killed_at
        await async_wait_until(lambda: any(a != master for _b, a, _t in snd.acked), 15, 0.01, "a write on the new master")
        first = next(t for _b, a, t in snd.acked if a != master)
        assert first - killed_at < 10, f"new master served its first write {first - killed_at:.1f}s after the kill"
        n = len(snd.acked)
        await async_wait_until(lambda: len(snd.acked) >= n + 100, 20, 0.01, "100 more sends on the new master")
        await snd.stop()
        acked = [b for b, _a, _t in snd.acked]
        stored = [m.body for m in await pull_all(c, new_master)]
        assert_acked_in_order_once(acked, stored)
        print(f"new master registered {registered_s:.2f}s, first write {first - killed_at:.2f}s after kill -9")
        # the old leader comes back as a follower (slave id n+1) and catches up
        cl.start_node(old)
        await async_wait_until(lambda: _slave_is(cl, c, old), 15, 0.05, "old leader registered as slave")
        await async_wait_until(lambda: _max_is(c, cl.addr(old), len(stored)), 15, 0.02, "old leader caught up")
        assert (await cl.broker_addrs(c))[0] == new_master


async def _slave_is(cl, c, i):
    return (await cl.broker_addrs(c)).get(i + 1) == cl.addr(i)


def _data_contains(cl: DLedgerCluster, i: int, needle: bytes) -> bool:
    return any(needle in f.read_bytes() for f in cl.data_dir(i).iterdir() if f.is_file())


@BATCH_PUSH
async def test_old_leader_cuts_its_uncommitted_tail(procs, tmp_path, batch_push):
    cl = DLedgerCluster(procs, tmp_path, enableBatchPush=batch_push).start()
    async with RemotingClient() as c:
        master = await cl.wait_master(c)
        old = cl.index_of(master)
        others = [i for i in range(3) if i != old]
        for k in range(5):
            assert (await send(c, master, b"before%d" % k)).code == ResponseCode.SUCCESS
        # killed, not stopped: a stopped process would still find the push in its socket buffer later
        for i in others:
            cl.kill(i)
        # the leader writes the entry but no follower gets it: no quorum, no acknowledgement
        needle = b"uncommitted-tail-entry"
        try:
            r = await send(c, master, needle, timeout=1.0)
            assert r.code != ResponseCode.SUCCESS
        except RemotingError:
            pass
        await async_wait_until(lambda: _data_contains(cl, old, needle), 5, 0.02, "entry written on the leader")
        cl.kill(old)
        for i in others:
            cl.start_node(i, wait=False)
        new_master = await cl.wait_master(c, 20, not_addr=master)
        for k in range(5):
            assert (await send(c, new_master, b"after%d" % k)).code == ResponseCode.SUCCESS
        cl.start_node(old)
        await async_wait_until(lambda: _slave_is(cl, c, old), 15, 0.05, "old leader registered as slave")
        await async_wait_until(lambda: _max_is(c, cl.addr(old), 10), 15, 0.02, "old leader caught up")
        # its own copy of the uncommitted entry was truncated (and zeroed) by the new leader's log
        assert not _data_contains(cl, old, needle)
        stored = [m.body for m in await pull_all(c, new_master)]
        assert stored == [b"before%d" % k for k in range(5)] + [b"after%d" % k for k in range(5)]


async def test_minority_refuses_writes_and_recovers(procs, tmp_path):
    cl = DLedgerCluster(procs, tmp_path).start()
    async with RemotingClient() as c:
        master = await cl.wait_master(c)
        leader = cl.index_of(master)
        assert (await send(c, master, b"ok0")).code == ResponseCode.SUCCESS
        others = [i for i in range(3) if i != leader]
        for i in others:
            cl.pause(i)
        # no quorum: the put is not acknowledged (WAIT_QUORUM_ACK_TIMEOUT -> SYSTEM_ERROR, or NOT_LEADER)
        try:
            r = await send(c, master, b"lonely", timeout=5)
            assert r.code != ResponseCode.SUCCESS
        except RemotingError:
            pass
        for i in others:
            cl.resume(i)

        async def writable():
            m = (await cl.broker_addrs(c)).get(0)
            if m is None:
                return False
            try:
                return (await send(c, m, b"ok1", timeout=3)).code == ResponseCode.SUCCESS
            except RemotingError:
                return False

        await async_wait_until(writable, 20, 0.05, "writes accepted again")
        m = await cl.wait_master(c)
        stored = [x.body for x in await pull_all(c, m)]
        assert stored[0] == b"ok0" and stored.count(b"ok1") == 1


async def test_leadership_moves_to_the_preferred_node(procs, tmp_path):
    cl = DLedgerCluster(procs, tmp_path, preferredLeaderId="n2").start()
    async with RemotingClient() as c:
        await cl.wait_master(c)
        await async_wait_until(lambda: _master_is(cl, c, cl.addr(2)), 20, 0.05, "n2 master")
        r = await send(c, cl.addr(2), b"on-preferred")
        assert r.code == ResponseCode.SUCCESS
        await async_wait_until(lambda: _slave_is(cl, c, 0), 10, 0.05, "n0 slave")
        await async_wait_until(lambda: _slave_is(cl, c, 1), 10, 0.05, "n1 slave")


async def _master_is(cl, c, addr):
    return (await cl.broker_addrs(c)).get(0) == addr


@pytest.mark.soak
@pytest.mark.timeout(600)
async def test_repeated_failover_soak(procs, tmp_path):
    """Kill -9 whichever node is master, ten times, under continuous sends; restart it each time."""
    cl = DLedgerCluster(procs, tmp_path).start()
    async with RemotingClient() as c:
        master = await cl.wait_master(c)
        snd = Sender(cl, c, master)
        for _round in range(10):
            n = len(snd.acked)
            await async_wait_until(lambda n=n: len(snd.acked) >= n + 200, 30, 0.01, "200 more sends")
            old = cl.index_of(master)
            killed_at = time.monotonic()
            cl.kill(old)
            master = await cl.wait_master(c, 20, not_addr=master)
            assert time.monotonic() - killed_at < 10
            cl.start_node(old)
            await async_wait_until(lambda old=old: _slave_is(cl, c, old), 20, 0.05, "restarted node is a slave")
        await snd.stop()
        stored = [m.body for m in await pull_all(c, master)]
        assert_acked_in_order_once([b for b, _a, _t in snd.acked], stored)

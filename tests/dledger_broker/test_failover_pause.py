"""A paused DLedger leader (SIGSTOP: its ports stay open) is replaced on heartbeats alone (#17 defect 10).

Three bin/mqbroker processes with the broker's default election timing. The leader is
paused under continuous sends: a new master takes writes without the old port ever
closing; the remaining follower syncs its metadata from the new master at once (not from
the paused one); resumed, the old leader rejoins as a follower and the group's term does
not move. Failover times are printed; bench/bench_dledger_broker.py measures them over rounds.
"""

from __future__ import annotations

import time

from dledger.protocol import RequestCode as DLedgerCode
from remoting import fastjson
from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from tests.dledger_broker.cluster import DLedgerCluster, pull_all, send
from tests.dledger_broker.test_dledger_broker import Sender, _slave_is, assert_acked_in_order_once
from tests.support import async_wait_until


async def dledger_metadata(c: RemotingClient, cl: DLedgerCluster, i: int) -> dict:
    """The DLedger member's own view: leaderId and term (DLedger METADATA on its DLedger port)."""
    r = await c.invoke(f"127.0.0.1:{cl.dledger_ports[i]}", RemotingCommand.request(int(DLedgerCode.METADATA)), 3)
    return fastjson.loads(r.body) if r.body else {}


async def probe_send(c: RemotingClient, addr: str) -> bool:
    try:
        return (await send(c, addr, b"probe", timeout=0.5)).code == ResponseCode.SUCCESS
    except (OSError, RemotingError):
        return False


async def test_paused_leader_is_replaced_and_rejoins_without_moving_the_term(procs, tmp_path):
    cl = DLedgerCluster(procs, tmp_path).start()
    async with RemotingClient() as c:
        master = await cl.wait_master(c)
        old = cl.index_of(master)
        snd = Sender(cl, c, master)
        await async_wait_until(lambda: len(snd.acked) >= 50, 20, 0.01, "50 acknowledged sends")
        term0 = (await dledger_metadata(c, cl, (old + 1) % 3))["term"]
        paused_at = time.monotonic()
        cl.pause(old)
        new_master = await cl.wait_master(c, 15, not_addr=master)
        registered_s = time.monotonic() - paused_at
        new = cl.index_of(new_master)
        # the Sender's own request to the paused master waits out its 3 s timeout (as any client's
        # would): a probe sends to the master the NameServer names, with a short timeout
        await async_wait_until(lambda: probe_send(c, new_master), 15, 0.02, "a write on the new master")
        first = time.monotonic() - paused_at
        print(f"SIGSTOP: new master registered {registered_s:.2f}s, first write {first:.2f}s after the pause")
        # heartbeats alone (the paused leader's port stays open); DLedger's 2 s x 3 took >= 4.3 s
        assert first < 5, f"first write on the new master {first:.2f}s after the pause"

        # the other follower follows the new master at once: it syncs its metadata from it (the new
        # master's topic-config version moved when it took over) without waiting for the 10 s round
        other = 3 - old - new
        await async_wait_until(
            lambda: f"synced topic config from master {new_master}" in cl.nodes[other].output(),
            5, 0.05, "the follower synced from the new master")

        meta = await dledger_metadata(c, cl, new)
        term1 = meta["term"]
        assert meta["leaderId"] == f"n{new}" and term1 > term0
        n = len(snd.acked)
        await async_wait_until(lambda: len(snd.acked) >= n + 50, 20, 0.01, "50 more sends on the new master")

        # back: a follower of the new leader, and nobody's term moved
        cl.resume(old)
        await async_wait_until(lambda: _slave_is(cl, c, old), 15, 0.05, "resumed old leader registered as slave")

        async def follows() -> bool:
            try:
                m = await dledger_metadata(c, cl, old)
            except (OSError, RemotingError):
                return False
            return m.get("leaderId") == f"n{new}"

        await async_wait_until(follows, 15, 0.05, "resumed old leader follows the new one")
        n = len(snd.acked)
        await async_wait_until(lambda: len(snd.acked) >= n + 50, 20, 0.01, "50 sends after the return")
        await snd.stop()
        for i in range(3):
            meta = await dledger_metadata(c, cl, i)
            assert meta["term"] == term1, f"n{i} is in term {meta['term']}, the new leader's was {term1}"
        assert (await cl.broker_addrs(c))[0] == new_master
        stored = [m.body for m in await pull_all(c, new_master)]
        assert_acked_in_order_once([b for b, _a, _t in snd.acked], [b for b in stored if b != b"probe"])

"""DLedger mode over real processes: a NameServer and three bin/mqbroker nodes on loopback."""

from __future__ import annotations

import asyncio
import time

from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.dledger_broker.cluster import DLedgerCluster, max_offset, msg_offset, pull_all, send, view
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
        assert r.code != ResponseCode.SUCCESS
        for i in range(3):
            await async_wait_until(lambda i=i: _max_is(c, cl.addr(i), 20), 10, 0.02, f"n{i} dispatched 20")
        assert [m.body for m in await pull_all(c, master)] == [b"m%d" % k for k in range(20)]
        # every node holds the same records at the same commit-log offsets (PHYSICALOFFSET = entry pos + 48)
        for i in range(3):
            for k in (0, 7, 19):
                m = await view(c, cl.addr(i), offsets[k])
                assert m is not None and m.body == b"m%d" % k and m.commit_log_offset == offsets[k]


async def _addrs_are(cl, c, want):
    return await cl.broker_addrs(c) == want


async def _max_is(c, addr, n):
    return await max_offset(c, addr) == n

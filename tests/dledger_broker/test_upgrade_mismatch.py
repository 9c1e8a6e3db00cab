"""Classic -> DLedger upgrade with empty followers (#17 defect 7), three real bin/mqbroker processes.

n0 holds a classic CommitLog (40 messages, its divided offset is where it ends); n1 and n2
are empty. RocketMQ 4.9.7 failed silently here (an empty leader hid the classic messages
and restarted queue offsets at 0; an upgraded leader answered every send "broker busy"
after 2.5 s). Now: an empty node never becomes master (it refuses to lead, naming n0's
store as what to copy), the empty followers refuse n0's entries saying the same, and the
classic messages stay in view on n0, the only master.
"""

from __future__ import annotations

import asyncio

from common.message import MessageExtBrokerInner
from remoting.client import RemotingClient
from store.config import MessageStoreConfig
from store.default_message_store import DefaultMessageStore
from tests.dledger_broker.cluster import TOPIC, DLedgerCluster, pull_all, send
from tests.support import async_wait_until


async def _classic_store(root) -> None:
    sc = MessageStoreConfig(storePathRootDir=str(root), mappedFileSizeCommitLog=4 * 1024 * 1024,
                            mappedFileSizeConsumeQueue=6000)
    s = DefaultMessageStore(sc, store_host=("127.0.0.1", 10911))
    assert s.load()
    s.start()
    for i in range(40):
        m = MessageExtBrokerInner(topic=TOPIC, queue_id=0, body=b"classic-%02d" % i,
                                  born_host=("127.0.0.1", 5000), store_host=("127.0.0.1", 10911))
        assert (await s.put_message_async(m)).is_ok()
    await s.shutdown()


async def test_empty_members_refuse_to_lead_and_say_what_to_copy(procs, tmp_path):
    cl = DLedgerCluster(procs, tmp_path)
    await _classic_store(cl.root / "node0")
    cl.start()
    async with RemotingClient() as c:
        # only n0 may become master, however the first DLedger elections go
        master = await cl.wait_master(c, 30)
        assert master == cl.addr(0)
        # a send cannot be replicated (the followers refuse the entries): no acknowledgement
        r = await send(c, master, b"after-upgrade", timeout=8)
        assert r.code != 0
        # each empty member says why and what to copy (refusing n0's entries, or refusing to lead)
        for i in (1, 2):
            await async_wait_until(lambda i=i: "copy the store" in cl.nodes[i].output(), 15, 0.05,
                                   f"n{i} says what to copy")
            out = cl.nodes[i].output()
            assert "dividedCommitlogOffset" in out and str(cl.root / f"node{i}") in out
        # nothing else ever becomes master
        for _ in range(20):
            assert (await cl.broker_addrs(c)).get(0) in (None, cl.addr(0))
            await asyncio.sleep(0.1)  # sampling the NameServer view over 2 s (not synchronisation)
        # the classic messages are still in view on the master, at their queue offsets
        got = [m.body for m in await pull_all(c, master)]
        assert got[:40] == [b"classic-%02d" % i for i in range(40)]

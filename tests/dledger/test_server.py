"""Three real DLedgerServers on loopback ports: elections, replication over remoting,
restart from the file store, leadership transfer and the DLedger client APPEND RPC."""

from __future__ import annotations

import base64
import random

import pytest

from dledger.config import DLedgerConfig
from dledger.protocol import DLedgerError, RequestCode, Role
from dledger.protocol import DLedgerResponseCode as C
from dledger.server import DLedgerServer
from remoting import fastjson
from remoting.client import RemotingClient
from remoting.command import RemotingCommand
from tests.support import async_wait_until, free_port

pytestmark = pytest.mark.timeout(60)


def configs(tmp_path, n=3):
    ids = [f"n{i}" for i in range(n)]
    peers = ";".join(f"{i}-127.0.0.1:{free_port()}" for i in ids)
    return [
        DLedgerConfig(
            group="g",
            selfId=i,
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
        for i in ids
    ]


class Member:
    def __init__(self, cfg, seed):
        self.cfg = cfg
        self.roles = []
        self.applied = []
        self.server = DLedgerServer(
            cfg,
            rng=random.Random(seed),
            on_role_change=lambda r, t, lid: self.roles.append((r, t, lid)),
            on_committed=lambda es: self.applied.extend((e.index, e.body) for e in es),
        )


async def start_all(cfgs):
    members = [Member(c, k) for k, c in enumerate(cfgs)]
    for m in members:
        await m.server.start()
    return members


async def stop_all(members):
    for m in members:
        await m.server.stop()


def leader_of(members):
    ls = [m for m in members if m.server.core is not None and m.server.is_leader]
    if len(ls) != 1:
        return None
    others = [m for m in members if m is not ls[0]]
    if all(o.server.leader_id == ls[0].cfg.selfId for o in others):
        return ls[0]
    return None


async def test_three_servers_elect_replicate_and_survive_leader_restart(tmp_path):
    cfgs = configs(tmp_path)
    members = await start_all(cfgs)
    try:
        ld = await async_wait_until(lambda: leader_of(members), timeout=15, what="one leader")
        results = [await ld.server.append(b"msg-%d" % i) for i in range(20)]
        indexes = [r[0] for r in results]
        assert indexes == sorted(indexes)
        last = indexes[-1]
        await async_wait_until(lambda: all(m.server.committed_index >= last for m in members), timeout=10)
        for m in members:
            assert [m.server.get_entry(i).body for i in indexes] == [b"msg-%d" % i for i in range(20)]
            assert [b for i, b in m.applied if i in indexes] == [b"msg-%d" % i for i in range(20)]
            assert m.roles and m.roles[-1][0] in (Role.LEADER, Role.FOLLOWER)
        # positions are the entries' byte positions in the data files
        idx0, pos0 = results[0]
        assert ld.server.get_entry(idx0).pos == pos0

        follower = next(m for m in members if m is not ld)
        with pytest.raises(DLedgerError) as ei:
            await follower.server.append(b"x")
        assert ei.value.code == C.NOT_LEADER

        # Stop the leader: the others elect a new one and keep committing.
        await ld.server.stop()
        rest = [m for m in members if m is not ld]
        new = await async_wait_until(lambda: leader_of(rest), timeout=15, what="new leader")
        idx, _ = await new.server.append(b"after failover")
        # Restart the old leader from its files: it catches up.
        again = Member(ld.cfg, 99)
        await again.server.start()
        members = [*rest, again]
        assert again.server.storage.ledger_end_index >= last
        await async_wait_until(lambda: again.server.committed_index >= idx, timeout=15, what="catch up")
        assert again.server.get_entry(idx).body == b"after failover"
        assert again.server.term >= new.server.term
    finally:
        await stop_all(members)


async def test_transfer_leadership_and_client_append_rpc(tmp_path):
    cfgs = configs(tmp_path)
    members = await start_all(cfgs)
    client = RemotingClient()
    try:
        ld = await async_wait_until(lambda: leader_of(members), timeout=15, what="one leader")
        await ld.server.append(b"before")
        target = next(m for m in members if m is not ld)
        code = await ld.server.transfer_leadership(target.cfg.selfId)
        assert code == C.SUCCESS
        new = await async_wait_until(lambda: leader_of(members), timeout=15, what="leader after transfer")
        assert new is target

        # The DLedger client RPC: APPEND with a base64 body, answered once committed.
        addr = target.server.peers[target.cfg.selfId]
        body = {"group": "g", "remoteId": target.cfg.selfId, "body": base64.b64encode(b"via rpc").decode()}
        resp = await client.invoke(
            addr, RemotingCommand.request(int(RequestCode.APPEND), body=fastjson.dumps(body))
        )
        out = fastjson.loads(resp.body)
        assert resp.code == 200 and out["code"] == C.SUCCESS and out["index"] >= 1
        assert target.server.get_entry(out["index"]).body == b"via rpc"
        out_index = out["index"]
        # BatchAppendEntryRequest: one entry per body, answered with the last entry's index and pos
        bodies = [b"b0", b"b1" * 50, b"b2"]
        batch = {"group": "g", "remoteId": target.cfg.selfId,
                 "batchMsgs": [base64.b64encode(x).decode() for x in bodies]}
        resp = await client.invoke(
            addr, RemotingCommand.request(int(RequestCode.APPEND), body=fastjson.dumps(batch))
        )
        got_batch = fastjson.loads(resp.body)
        assert got_batch["code"] == C.SUCCESS and got_batch["index"] == out_index + 3
        last = target.server.get_entry(got_batch["index"])
        assert got_batch["pos"] == last.pos and last.body == b"b2"
        assert [target.server.get_entry(out_index + k).body for k in (1, 2, 3)] == bodies
        assert target.server.committed_index >= out_index + 3
        empty = {**batch, "batchMsgs": []}
        resp = await client.invoke(
            addr, RemotingCommand.request(int(RequestCode.APPEND), body=fastjson.dumps(empty))
        )
        assert fastjson.loads(resp.body)["code"] == C.REQUEST_WITH_EMPTY_BODYS
        assert target.server.storage.ledger_end_index == out_index + 3  # nothing appended
        # Sent to a follower: NOT_LEADER with the leader's id.
        faddr = ld.server.peers[ld.cfg.selfId]
        resp = await client.invoke(
            faddr, RemotingCommand.request(int(RequestCode.APPEND), body=fastjson.dumps(body))
        )
        out = fastjson.loads(resp.body)
        assert out["code"] == C.NOT_LEADER and out["leaderId"] == target.cfg.selfId
        # PULL exists in DLedger's protocol but is not served: an explicit UNSUPPORTED, no timeout
        pull = {"group": "g", "remoteId": ld.cfg.selfId, "nodeId": ld.cfg.selfId, "beginIndex": 0}
        resp = await client.invoke(faddr, RemotingCommand.request(int(RequestCode.PULL), body=fastjson.dumps(pull)))
        assert resp.code == 200 and fastjson.loads(resp.body)["code"] == C.UNSUPPORTED
        resp = await client.invoke(faddr, RemotingCommand.request(int(RequestCode.METADATA), body=b"{}"))
        assert fastjson.loads(resp.body)["leaderId"] == target.cfg.selfId
        get = RemotingCommand.request(int(RequestCode.GET), body=fastjson.dumps({"beginIndex": out_index}))
        got = fastjson.loads((await client.invoke(addr, get)).body)
        assert got["code"] == C.SUCCESS and base64.b64decode(got["entries"][0]["body"]) == b"via rpc"
    finally:
        await client.close()
        await stop_all(members)

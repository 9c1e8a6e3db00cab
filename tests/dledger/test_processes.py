"""Three DLedger members as separate processes (``python -m dledger``): a client appends
over the DLedger APPEND RPC; the leader is killed with SIGKILL and comes back from disk."""

from __future__ import annotations

import base64

import pytest

from dledger.protocol import DLedgerResponseCode as C
from dledger.protocol import RequestCode
from remoting import fastjson
from remoting.client import RemotingClient
from remoting.command import RemotingCommand
from tests.support import async_wait_until, free_port

pytestmark = pytest.mark.timeout(90)


def write_conf(tmp_path, nid, peers):
    path = tmp_path / f"{nid}.properties"
    path.write_text(
        "\n".join(
            [
                "group=pg",
                f"selfId={nid}",
                f"peers={peers}",
                f"storeBaseDir={tmp_path / 'store'}",
                "mappedFileSizeForEntryData=262144",
                "mappedFileSizeForEntryIndex=32768",
                "heartBeatTimeIntervalMs=200",
                "minVoteIntervalMs=100",
                "maxVoteIntervalMs=400",
                "maxPushTimeOutMs=400",
            ]
        )
        + "\n"
    )
    return path


async def rpc(client, addr, code, body):
    try:
        resp = await client.invoke(
            addr, RemotingCommand.request(int(code), body=fastjson.dumps(body)), timeout=2.0
        )
    except Exception:
        return None
    return fastjson.loads(resp.body) if resp.body else None


async def find_leader(client, addrs):
    """The leader id all live members agree on, or None."""
    seen = set()
    alive = set()
    for nid, addr in addrs.items():
        md = await rpc(client, addr, RequestCode.METADATA, {})
        if md is None:
            continue
        alive.add(nid)
        seen.add(md.get("leaderId"))
    if len(seen) == 1 and next(iter(seen)) in alive:
        return seen.pop()
    return None


async def append(client, addr, nid, data: bytes):
    body = {"group": "pg", "remoteId": nid, "body": base64.b64encode(data).decode()}
    return await rpc(client, addr, RequestCode.APPEND, body)


async def test_separate_processes_fail_over_and_recover(tmp_path, procs):
    ids = ["n0", "n1", "n2"]
    ports = {i: free_port() for i in ids}
    addrs = {i: f"127.0.0.1:{ports[i]}" for i in ids}
    peers = ";".join(f"{i}-{addrs[i]}" for i in ids)
    members = {}
    for i in ids:
        members[i] = procs.start(i, ["-m", "dledger", "-c", str(write_conf(tmp_path, i, peers))])
    for i in ids:
        members[i].wait_port(ports[i])
    client = RemotingClient()
    try:
        leader = await async_wait_until(lambda: find_leader(client, addrs), timeout=30, what="a leader")
        last = None
        for k in range(20):
            out = await append(client, addrs[leader], leader, b"p%d" % k)
            assert out["code"] == C.SUCCESS, out
            last = out["index"]
        # SIGKILL the leader: no flush, no checkpoint. The other two elect a new leader.
        members[leader].kill()
        rest = {i: a for i, a in addrs.items() if i != leader}
        new = await async_wait_until(lambda: find_leader(client, rest), timeout=30, what="a new leader")
        assert new != leader
        out = await append(client, addrs[new], new, b"after kill")
        assert out["code"] == C.SUCCESS and out["index"] > last
        # The killed member restarts from its files and follows the new leader.
        conf = tmp_path / f"{leader}.properties"
        members[leader] = procs.start(leader + "-again", ["-m", "dledger", "-c", str(conf)])
        members[leader].wait_port(ports[leader])
        await async_wait_until(lambda: find_leader(client, addrs), timeout=30, what="all agree again")
        # the role line is printed by the role-change callback, which may run after METADATA answered
        await async_wait_until(lambda: "role FOLLOWER" in members[leader].output(), timeout=10,
                               what="the restarted member printing its FOLLOWER role")
        out = await append(client, addrs[new], new, b"with all three")
        assert out["code"] == C.SUCCESS
        # Refused on a follower, with the leader named.
        out = await append(client, addrs[leader], leader, b"x")
        assert out["code"] == C.NOT_LEADER and out["leaderId"] == new
    finally:
        await client.close()

"""Soak: many clients, mixed encodings and sizes, connections dropped under load (pytest -m soak)."""

from __future__ import annotations

import asyncio
import random

import pytest

from remoting.client import RemotingClient
from remoting.codes import ResponseCode, SerializeType
from remoting.command import RemotingCommand
from remoting.errors import RemotingSendRequestError
from tests.support import async_wait_until

pytestmark = pytest.mark.soak


async def test_soak_drops_under_load(server, addr):
    async def echo(req, conn):
        if int(req.ext_fields["n"]) % 3 == 0:
            await asyncio.sleep(0)  # a share of async handlers, interleaved with sync ones
        return req.response_to(ResponseCode.SUCCESS, header=req.ext_fields, body=req.body)

    server.register_processor(1, echo)
    rnd = random.Random(99)
    clients = [RemotingClient(name=f"soak-{i}") for i in range(8)]
    total, per_worker = 0, 1500
    stats = {"ok": 0, "dropped": 0}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 240

    async def worker(cli: RemotingClient, wid: int):
        nonlocal total
        for i in range(per_worker):
            if loop.time() > deadline:
                return
            total += 1
            n = wid * per_worker + i
            body = rnd.randbytes(rnd.choice([0, 10, 1024, 65536, 300_000]))
            stype = rnd.choice([SerializeType.JSON, SerializeType.ROCKETMQ])
            req = RemotingCommand.request(1, {"n": n, "s": "ü" * (n % 5)}, body, serialize_type=stype)
            try:
                resp = await cli.invoke(addr, req, 10)
            except RemotingSendRequestError:
                stats["dropped"] += 1
                continue
            assert resp.ext_fields["n"] == str(n) and (resp.body or b"") == body
            assert resp.serialize_type == stype
            stats["ok"] += 1
            if n % 97 == 0 and server.connections:  # the server drops a random connection now and then
                rnd.choice(list(server.connections)).close()

    await asyncio.gather(*(worker(c, ci * 4 + w) for ci, c in enumerate(clients) for w in range(4)))
    for c in clients:
        assert all(conn.pending_count == 0 for conn in c.connections)
        await c.close()
    await async_wait_until(lambda: not server.connections, 10)
    assert stats["ok"] + stats["dropped"] == total and stats["ok"] > total * 0.8 and stats["dropped"] > 0

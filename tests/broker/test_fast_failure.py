"""Issue 17, defect 4: load shedding (BrokerFastFailure) and fairness between connections.

A pipelined flood on a few connections is served in fair turns; what waits in a connection's
backlog longer than waitTimeMillsInSendQueue is answered SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE] at
once, a peer sending one message at a time keeps being served meanwhile, and every acknowledged
message can be pulled back. (The latency goal is measured by bench/bench_overload.py.)
"""

from __future__ import annotations

import asyncio

import pytest

from remoting.body.kv import KVTable
from remoting.client import RemotingClient
from remoting.codec import FrameDecoder, encode
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.broker.helpers import call, messages, pull, send, send_header_v2

pytestmark = pytest.mark.timeout(120)

TOPIC, CONNS, PER_CONN = "FloodT", 4, 1000
BUSY_PREFIX = "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: "


async def _flood_one(port: int, conn_no: int) -> list[tuple[int, RemotingCommand]]:
    """PER_CONN sends written at once on one connection; (message number, answer) of each."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        out = []
        for i in range(PER_CONN):
            cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, send_header_v2(TOPIC, queue_id=conn_no),
                                          b"%d-%06d" % (conn_no, i) + b"." * 200)
            cmd.opaque = i + 1
            out.extend(bytes(c) for c in encode(cmd))
        writer.write(b"".join(out))
        dec = FrameDecoder()
        answers: dict[int, RemotingCommand] = {}
        while len(answers) < PER_CONN:
            data = await asyncio.wait_for(reader.read(1 << 16), 30)
            assert data, f"connection {conn_no} closed after {len(answers)} answers"
            for r in dec.feed(data):
                answers[r.opaque] = r
        return [(op - 1, r) for op, r in sorted(answers.items())]
    finally:
        writer.close()


async def test_flood_is_shed_canary_is_served_and_nothing_acked_is_lost(broker_factory):
    # a few ms of backlog is "too long" here, so the flood is shed on any machine
    b = broker_factory("ff", waitTimeMillsInSendQueue=3)
    async with RemotingClient() as c:
        r = await send(c, b.addr, TOPIC, b"warm-up", queue_id=0)
        assert r.code == ResponseCode.SUCCESS
        flood = asyncio.gather(*(_flood_one(b.port, n) for n in range(CONNS)))
        canary = []
        while not flood.done() and len(canary) < 200:
            r = await send(c, b.addr, "CanaryT", b"c%d" % len(canary), queue_id=0, timeout=10)
            canary.append(r.code)
        results = await flood
        # the canary was served, and only with success: it never waits in a backlog
        assert canary and set(canary) == {ResponseCode.SUCCESS}
        codes = [r.code for res in results for _, r in res]
        busy = [r for res in results for _, r in res if r.code == ResponseCode.SYSTEM_BUSY]
        assert busy, "the flood was never shed"
        assert all(r.remark.startswith(BUSY_PREFIX) for r in busy), busy[0].remark
        assert set(codes) <= {ResponseCode.SUCCESS, ResponseCode.SYSTEM_BUSY}
        assert codes.count(ResponseCode.SUCCESS) > 0
        # the runtime info counts what was shed; the backlog is empty again
        r = await call(c, b.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        t = KVTable.from_json(r.body).table
        assert int(t["requestsShedByFastFailure"]) == len(busy)
        assert t["sendThreadPoolQueueSize"] == "0"
        # every acknowledged message is in its queue at the offset it was acknowledged with
        for n, res in enumerate(results):
            acked = {int(r.ext_fields["queueOffset"]): i for i, r in res if r.code == ResponseCode.SUCCESS}
            assert all(int(r.ext_fields["queueId"]) == n for i, r in res if r.code == ResponseCode.SUCCESS)
            got: dict[int, bytes] = {}
            offset = 0
            for _ in range(200):  # bounded: at most PER_CONN + 1 messages per queue
                p = await pull(c, b.addr, "ffG", TOPIC, n, offset, max_nums=32)
                if p.code != ResponseCode.SUCCESS:
                    break
                for m in messages(p):
                    got[m.queue_offset] = m.body
                offset = int(p.ext_fields["nextBeginOffset"])
            for off, i in acked.items():
                assert got.get(off, b"")[:8] == b"%d-%06d" % (n, i), (n, off, i)
            # nothing refused was stored: the queue holds exactly what was acknowledged (+ the warm-up)
            assert len(got) == len(acked) + (1 if n == 0 else 0)

"""Long polling: a parked pull is answered as soon as a matching message lands, or at its suspend time."""

from __future__ import annotations

import asyncio
import time

from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.broker.helpers import messages, pull, send, wait_max_offset

SUSPEND = 0x2 | 0x4


async def test_parked_pull_answers_within_50ms_of_a_message(shared_broker):
    addr = shared_broker.addr
    wake_ms = []
    async with RemotingClient() as c, RemotingClient() as producer:
        await send(producer, addr, "LpT", b"first")
        await wait_max_offset(c, addr, "LpT", 0, 1)
        for round_ in range(5):
            offset = 1 + round_
            pending = asyncio.ensure_future(pull(c, addr, "gLp", "LpT", 0, offset, sys_flag=SUSPEND, suspend_ms=5000, timeout=10))
            # the broker holds the pull (no answer yet) ...
            done, _ = await asyncio.wait({pending}, timeout=0.2)
            assert not done, "the pull was answered instead of being held"
            # ... until a message lands
            r = await send(producer, addr, "LpT", b"m%d" % round_)
            t_sent = time.monotonic()
            assert r.code == ResponseCode.SUCCESS
            p = await pending
            wake_ms.append(1000 * (time.monotonic() - t_sent))
            assert p.code == ResponseCode.SUCCESS, (p.code, p.remark)
            assert [m.body for m in messages(p)] == [b"m%d" % round_]
    # typically 1-3 ms; the median tolerates one scheduling hiccup of a loaded CI machine
    assert sorted(wake_ms)[len(wake_ms) // 2] < 50, wake_ms
    assert max(wake_ms) < 1000, wake_ms


async def test_parked_pull_times_out_at_suspend_time(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        await send(c, addr, "LpIdle", b"x")
        await wait_max_offset(c, addr, "LpIdle", 0, 1)
        t0 = time.monotonic()
        p = await pull(c, addr, "gIdle", "LpIdle", 0, 1, sys_flag=SUSPEND, suspend_ms=600, timeout=5)
        elapsed = time.monotonic() - t0
        assert p.code == ResponseCode.PULL_NOT_FOUND
        assert p.remark == "OFFSET_OVERFLOW_ONE"
        assert 0.55 <= elapsed < 1.5, elapsed


async def test_parked_pull_ignores_non_matching_tags(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c, RemotingClient() as producer:
        await send(producer, addr, "LpTag", b"seed", {"TAGS": "x"})
        await wait_max_offset(c, addr, "LpTag", 0, 1)
        pending = asyncio.ensure_future(
            pull(c, addr, "gTag", "LpTag", 0, 1, sys_flag=SUSPEND, suspend_ms=5000, subscription="want", timeout=10)
        )
        # a request behind the pull on the same connection: its answer means the pull is parked
        await wait_max_offset(c, addr, "LpTag", 0, 1)
        await send(producer, addr, "LpTag", b"other", {"TAGS": "other"})
        await wait_max_offset(producer, addr, "LpTag", 0, 2)
        done, _ = await asyncio.wait({pending}, timeout=0.3)
        assert not done, "a non-matching message woke the pull"
        await send(producer, addr, "LpTag", b"yes", {"TAGS": "want"})
        p = await asyncio.wait_for(pending, 2)
        assert p.code == ResponseCode.SUCCESS
        assert [m.body for m in messages(p)] == [b"yes"]
        assert p.ext_fields["nextBeginOffset"] == "3"


async def test_pull_without_suspend_flag_answers_at_once(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        await send(c, addr, "LpNo", b"x")
        await wait_max_offset(c, addr, "LpNo", 0, 1)
        t0 = time.monotonic()
        p = await pull(c, addr, "gNo", "LpNo", 0, 1, sys_flag=0x4, suspend_ms=5000)
        assert p.code == ResponseCode.PULL_NOT_FOUND
        assert time.monotonic() - t0 < 0.5

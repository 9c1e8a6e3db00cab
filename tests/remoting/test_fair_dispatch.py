"""Fair turns between connections, bounded backlogs and fast failure (remoting.fair_dispatch),
over real loopback sockets."""

from __future__ import annotations

import asyncio

from remoting.codec import FrameDecoder, encode
from remoting.command import RemotingCommand
from remoting.fair_dispatch import FairDispatcher


def _frames(tag: str, n: int, code: int = 77) -> bytes:
    out = []
    for i in range(n):
        cmd = RemotingCommand.request(code, {"c": tag, "i": str(i)}, b"p" * 64)
        cmd.opaque = i + 1
        out.extend(bytes(c) for c in encode(cmd))
    return b"".join(out)


async def _answers(reader: asyncio.StreamReader, n: int) -> dict[int, RemotingCommand]:
    dec = FrameDecoder()
    got: dict[int, RemotingCommand] = {}
    while len(got) < n:
        data = await asyncio.wait_for(reader.read(1 << 16), 30)
        assert data, f"closed after {len(got)} of {n}"
        for r in dec.feed(data):
            got[r.opaque] = r
    return got


async def test_a_flood_does_not_starve_a_single_request_and_its_backlog_is_bounded(server):
    served: list[tuple[str, int]] = []

    def handler(req, conn):
        served.append((req.ext_fields["c"], int(req.ext_fields["i"])))
        return req.response_to(0)

    server.register_processor(77, handler)
    fair = FairDispatcher(turn_budget=4, max_backlog=64)
    server.set_fair_dispatch(fair)
    n = 20_000
    ra, wa = await asyncio.open_connection("127.0.0.1", server.port)
    rb, wb = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        wa.write(_frames("A", n))
        flood = asyncio.ensure_future(_answers(ra, n))
        await asyncio.sleep(0)
        wb.write(_frames("B", 1))
        (one,) = (await _answers(rb, 1)).values()
        assert one.code == 0
        # B was served while A still had most of its requests waiting
        assert served.index(("B", 0)) < n // 2
        got = await flood
        assert len(got) == n and all(r.code == 0 for r in got.values())
        # A's requests were served in order
        assert [i for c, i in served if c == "A"] == list(range(n))
        # reading from A paused at the bound (a read or so beyond it), not 20,000 requests queued
        assert 64 <= fair.backlog_peak < n // 2
    finally:
        wa.close()
        wb.close()


async def test_fast_fail_answers_backlogged_requests_in_order_and_never_the_first_turn(server):
    seen_waits: list[float] = []

    def shed_odd(req, waited_ms, queued):
        seen_waits.append(waited_ms)
        if int(req.ext_fields["i"]) % 2:
            return req.response_to(2, f"busy after {waited_ms:.0f}ms, {queued} queued")
        return None

    server.register_processor(77, lambda req, conn: req.response_to(0))
    fair = FairDispatcher(turn_budget=8, max_backlog=256, fast_fail=shed_odd)
    server.set_fair_dispatch(fair)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(_frames("A", 100))
        got = await _answers(reader, 100)
    finally:
        writer.close()
    codes = {op - 1: r.code for op, r in got.items()}
    # the first turn of a read is served at once, without asking fast_fail
    assert all(codes[i] == 0 for i in range(8))
    # the backlog (one loopback read: 13 KB) went through fast_fail: odd ones shed, even ones served
    assert all(codes[i] == (2 if i % 2 else 0) for i in range(8, 100))
    assert len(seen_waits) >= 92 and min(seen_waits) >= 0
    assert fair.shed == sum(1 for c in codes.values() if c == 2) > 0
    assert got[10].remark.startswith("busy after ")

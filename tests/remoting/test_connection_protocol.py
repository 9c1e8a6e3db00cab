"""The Connection protocol driven with a fake transport (no sockets): batching and dispatch rules."""

from __future__ import annotations

import asyncio

from remoting.codec import FrameDecoder, encode_bytes
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection, Endpoint
from tests.support import async_wait_until


class FakeTransport(asyncio.Transport):
    """Records writes; enough of a transport for Connection."""

    def __init__(self):
        super().__init__()
        self.writes: list[list[bytes]] = []
        self.closed = False
        self.reading = True

    def get_extra_info(self, name, default=None):
        return {"peername": ("10.0.0.7", 51234), "sockname": ("10.0.0.1", 9876)}.get(name, default)

    def writelines(self, chunks):
        self.writes.append([bytes(c) for c in chunks])

    def write(self, data):
        self.writes.append([bytes(data)])

    def close(self):
        self.closed = True

    def abort(self):
        self.closed = True

    def is_closing(self):
        return self.closed

    def pause_reading(self):
        self.reading = False

    def resume_reading(self):
        self.reading = True


def _decode_writes(writes):
    return FrameDecoder().feed(b"".join(b"".join(w) for w in writes))


async def _conn(ep: Endpoint, server_side: bool = True):
    conn = Connection(ep, pause_reading_on_backpressure=server_side)
    t = FakeTransport()
    conn.connection_made(t)
    return conn, t


async def test_all_frames_of_one_read_answered_with_one_writelines():
    ep = Endpoint(name="t")
    ep.register_processor(1, lambda req, conn: req.response_to(ResponseCode.SUCCESS, body=req.body))
    conn, t = await _conn(ep)
    assert conn.remote_addr == "10.0.0.7:51234" and conn.local_addr == "10.0.0.1:9876"
    reqs = [RemotingCommand.request(1, body=bytes([i]) * 10) for i in range(5)]
    reqs.insert(2, RemotingCommand.request(1, oneway=True))  # oneway: nothing written for it
    conn.data_received(b"".join(encode_bytes(r) for r in reqs))
    assert len(t.writes) == 1
    resps = _decode_writes(t.writes)
    assert [r.opaque for r in resps] == [r.opaque for r in reqs if not r.is_oneway]
    assert all(r.is_response and r.code == 0 for r in resps)


async def test_async_handler_result_written_when_done_and_pause_stops_reading():
    ep = Endpoint(name="t")
    gate = asyncio.Event()

    async def later(req, conn):
        await gate.wait()
        return req.response_to(ResponseCode.SUCCESS, "late")

    ep.register_processor(2, later)
    conn, t = await _conn(ep)
    req = RemotingCommand.request(2)
    conn.data_received(encode_bytes(req))
    assert t.writes == []
    gate.set()
    await async_wait_until(lambda: t.writes, 5)
    [resp] = _decode_writes(t.writes)
    assert resp.opaque == req.opaque and resp.remark == "late"
    conn.pause_writing()
    assert not t.reading
    conn.resume_writing()
    assert t.reading


async def test_invokes_in_one_iteration_are_coalesced_and_matched_out_of_order():
    ep = Endpoint(name="t")
    conn, t = await _conn(ep, server_side=False)
    reqs = [RemotingCommand.request(7, {"i": i}) for i in range(10)]
    tasks = [asyncio.ensure_future(conn.invoke(r, 5)) for r in reqs]
    await async_wait_until(lambda: conn.pending_count == 10 and t.writes, 5)
    assert len(t.writes) == 1  # one writelines for the ten requests
    sent = _decode_writes(t.writes)
    assert [s.opaque for s in sent] == [r.opaque for r in reqs]
    # answer in reverse order, all in one read
    conn.data_received(b"".join(encode_bytes(s.response_to(0, header={"i": s.ext_fields["i"]})) for s in reversed(sent)))
    results = await asyncio.gather(*tasks)
    assert [r.ext_fields["i"] for r in results] == [str(i) for i in range(10)]
    assert conn.pending_count == 0

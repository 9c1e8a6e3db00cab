"""The single sends of one read go to the store in one call (put_message_list / put_message_list_async).

Over a real broker and raw sockets: answers, offsets and durability must be what
one put per message gives, under SYNC_FLUSH too; oneway sends are stored but not
answered; a batch request between single sends keeps the request order.
"""

from __future__ import annotations

import socket
import time

from common.message import decode_messages, encode_batch_body
from remoting.client import RemotingClient
from remoting.codec import FrameDecoder, encode_bytes
from remoting.codes import RPC_ONEWAY, RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.broker.helpers import pull, send_header_v2, wait_max_offset


def _exchange(port: int, frames: list[bytes], expect: int, timeout: float = 30.0) -> list[RemotingCommand]:
    """Write every frame with one sendall, read ``expect`` responses."""
    dec = FrameDecoder()
    out: list[RemotingCommand] = []
    deadline = time.monotonic() + timeout
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"".join(frames))
        while len(out) < expect and time.monotonic() < deadline:
            data = s.recv(65536)
            if not data:
                break
            out.extend(dec.feed(data))
    return out


def _v2(opaque: int, topic: str, body: bytes, *, oneway: bool = False, **extra) -> bytes:
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, send_header_v2(topic, {"KEYS": f"k{opaque}"},
                                                                              **extra), body)
    cmd.opaque = opaque
    if oneway:
        cmd.flag |= RPC_ONEWAY
    return encode_bytes(cmd)


async def _runtime_info(addr: str) -> dict[str, str]:
    from remoting.body.kv import KVTable

    async with RemotingClient() as c:
        r = await c.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {}), 5)
        assert r.code == ResponseCode.SUCCESS
        return KVTable.from_json(r.body).table


async def test_sync_flush_pipelined_sends_are_answered_once_on_disk(broker_factory):
    b = broker_factory("sf", flushDiskType="SYNC_FLUSH")
    n = 300
    frames = [_v2(10 + i, "SyncListT", b"sync-%d" % i + b"x" * 500) for i in range(n)]
    resps = _exchange(b.port, frames, n)
    assert [r.opaque for r in resps] == [10 + i for i in range(n)]
    assert all(r.code == ResponseCode.SUCCESS for r in resps), {(r.code, r.remark) for r in resps}
    assert [int(r.ext_fields["queueOffset"]) for r in resps] == list(range(n))
    info = await _runtime_info(b.addr)
    # every answered record was on disk when answered: nothing was written after, so all is flushed
    assert int(info["commitLogFlushedOffset"]) == int(info["commitLogMaxOffset"]) > 0
    # the 300 writers shared fsyncs (one wait per read, one fsync per group commit round)
    assert 1 <= int(info["groupCommitFsyncCount"]) < n
    async with RemotingClient() as c:
        await wait_max_offset(c, b.addr, "SyncListT", 0, n)
        p = await pull(c, b.addr, "gSync", "SyncListT", 0, 290, max_nums=32)
        assert [m.body[:8] for m in decode_messages(p.body)] == [b"sync-%d" % i for i in range(290, 300)]


async def test_oneway_sends_are_stored_but_not_answered(shared_broker):
    frames = [_v2(1, "OnewayT", b"one", oneway=True), _v2(2, "OnewayT", b"two"),
              _v2(3, "OnewayT", b"three", oneway=True), _v2(4, "OnewayT", b"four")]
    resps = _exchange(shared_broker.port, frames, 2)
    assert [r.opaque for r in resps] == [2, 4]
    assert [int(r.ext_fields["queueOffset"]) for r in resps] == [1, 3]
    async with RemotingClient() as c:
        await wait_max_offset(c, shared_broker.addr, "OnewayT", 0, 4)
        p = await pull(c, shared_broker.addr, "gOneway", "OnewayT", 0, 0)
        assert [m.body for m in decode_messages(p.body)] == [b"one", b"two", b"three", b"four"]


class _M:
    def __init__(self, body: bytes):
        self.body = body
        self.flag = 0
        self.properties = {}


async def test_batch_request_between_single_sends_keeps_request_order(shared_broker):
    batch = RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, send_header_v2("OrderT", {}, m="true"),
                                    encode_batch_body([_M(b"b0"), _M(b"b1")]))
    batch.opaque = 2
    frames = [_v2(1, "OrderT", b"s0"), encode_bytes(batch), _v2(3, "OrderT", b"s1")]
    resps = {r.opaque: r for r in _exchange(shared_broker.port, frames, 3)}
    assert all(r.code == ResponseCode.SUCCESS for r in resps.values())
    assert [int(resps[o].ext_fields["queueOffset"]) for o in (1, 2, 3)] == [0, 1, 3]
    async with RemotingClient() as c:
        await wait_max_offset(c, shared_broker.addr, "OrderT", 0, 4)
        p = await pull(c, shared_broker.addr, "gOrder", "OrderT", 0, 0)
        assert [m.body for m in decode_messages(p.body)] == [b"s0", b"b0", b"b1", b"s1"]


async def test_refused_send_in_a_read_does_not_disturb_the_others(shared_broker):
    frames = [_v2(1, "MixT", b"ok0"), _v2(2, "MixT", b"x" * (65 * 1024)), _v2(3, "Bad Topic!", b"x"),
              _v2(4, "MixT", b"ok1")]
    resps = {r.opaque: r for r in _exchange(shared_broker.port, frames, 4)}
    assert resps[1].code == resps[4].code == ResponseCode.SUCCESS
    assert resps[2].code == ResponseCode.MESSAGE_ILLEGAL
    assert resps[3].code != ResponseCode.SUCCESS
    assert [int(resps[o].ext_fields["queueOffset"]) for o in (1, 4)] == [0, 1]

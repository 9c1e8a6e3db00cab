"""Send hot path over a raw socket: many SEND_MESSAGE_V2 frames in one write, header errors, batch."""

from __future__ import annotations

import socket
import time

from common.message import decode_messages, encode_batch_body
from remoting.client import RemotingClient
from remoting.codec import FrameDecoder, encode_bytes
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.broker.helpers import pull, send_header_v2, wait_max_offset


def _exchange(port: int, frames: list[bytes], expect: int, timeout: float = 10.0) -> list[RemotingCommand]:
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


def _v2(opaque: int, topic: str, body: bytes, queue_id: int | str = 0, **extra) -> bytes:
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, send_header_v2(topic, {"KEYS": f"k{opaque}"},
                                                                              queue_id=queue_id, **extra), body)
    cmd.opaque = opaque
    return encode_bytes(cmd)


async def test_pipelined_sends_get_ordered_answers_and_consecutive_offsets(shared_broker):
    n = 200
    frames = [_v2(1000 + i, "PipeT", b"body-%d" % i) for i in range(n)]
    resps = _exchange(shared_broker.port, frames, n)
    assert [r.opaque for r in resps] == [1000 + i for i in range(n)]
    assert all(r.code == ResponseCode.SUCCESS for r in resps), {r.code for r in resps}
    assert [int(r.ext_fields["queueOffset"]) for r in resps] == list(range(n))
    assert len({r.ext_fields["msgId"] for r in resps}) == n
    assert all(r.ext_fields["queueId"] == "0" and r.ext_fields["TRACE_ON"] == "true" for r in resps)
    async with RemotingClient() as c:
        await wait_max_offset(c, shared_broker.addr, "PipeT", 0, n)
        p = await pull(c, shared_broker.addr, "gPipe", "PipeT", 0, 0, max_nums=32)
        msgs = decode_messages(p.body)
        assert [m.body for m in msgs] == [b"body-%d" % i for i in range(32)]
        assert msgs[5].properties["KEYS"] == "k1005" and msgs[5].properties["CLUSTER"] == "TestCluster"


async def test_bad_v2_headers_are_refused_one_by_one(shared_broker):
    good = _v2(1, "HdrT", b"ok")
    missing = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "c": "TBW102", "d": 4, "e": 0,
                                                                    "f": 0, "g": 1, "h": 0}, b"x")
    missing.opaque = 2
    not_number = _v2(3, "HdrT", b"x", queue_id="zero")
    resps = _exchange(shared_broker.port, [good, encode_bytes(missing), not_number, _v2(4, "HdrT", b"ok2")], 4)
    by_opaque = {r.opaque: r for r in resps}
    assert by_opaque[1].code == ResponseCode.SUCCESS
    assert by_opaque[2].code == ResponseCode.SYSTEM_ERROR and "<b>" in by_opaque[2].remark
    assert by_opaque[3].code == ResponseCode.SYSTEM_ERROR and "zero" in by_opaque[3].remark
    assert by_opaque[4].code == ResponseCode.SUCCESS
    # the refused ones stored nothing
    assert [int(by_opaque[o].ext_fields["queueOffset"]) for o in (1, 4)] == [0, 1]


async def test_pipelined_batches(shared_broker):
    class M:
        def __init__(self, i):
            self.body = b"b%d" % i
            self.flag = 0
            self.properties = {"UNIQ_KEY": f"U{i}"}

    frames = []
    for r in range(10):
        h = send_header_v2("BatchPipeT", {}, m="true")
        cmd = RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, h, encode_batch_body([M(r * 16 + i)
                                                                                              for i in range(16)]))
        cmd.opaque = 50 + r
        frames.append(encode_bytes(cmd))
    resps = _exchange(shared_broker.port, frames, 10)
    assert [r.code for r in resps] == [ResponseCode.SUCCESS] * 10
    assert [int(r.ext_fields["queueOffset"]) for r in resps] == [16 * r for r in range(10)]
    assert all(len(r.ext_fields["msgId"].split(",")) == 16 for r in resps)

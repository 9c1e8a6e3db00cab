"""Issue 17, defects 5 and 8: what a broker does with frames it cannot read.

5. A ROCKETMQ binary header whose text is not UTF-8 is framed correctly: the request is answered
   with SYSTEM_ERROR (4.9.7 decodes it leniently and answers 0 or 1) and the connection, with the
   other requests in flight on it, lives on.
8. A flood of malformed frames logs a bounded number of lines per peer, with a count, not one
   WARNING per frame.
"""

from __future__ import annotations

import asyncio
import struct

import pytest

from remoting.codec import FrameDecoder, encode
from remoting.codes import RequestCode, ResponseCode, SerializeType
from remoting.command import RemotingCommand

pytestmark = pytest.mark.timeout(60)


def _frame(cmd: RemotingCommand) -> bytes:
    return b"".join(bytes(c) for c in encode(cmd))


def _binary_frame(code: int, opaque: int, remark: bytes, ext: dict[bytes, bytes]) -> bytes:
    ext_raw = b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in ext.items())
    header = (struct.pack(">hBhii", code, 0, 407, opaque, 0) + struct.pack(">i", len(remark)) + remark
              + struct.pack(">i", len(ext_raw)) + ext_raw)
    return struct.pack(">iI", 4 + len(header), (1 << 24) | len(header)) + header


async def _read_responses(reader: asyncio.StreamReader, n: int) -> dict[int, RemotingCommand]:
    dec = FrameDecoder()
    out: dict[int, RemotingCommand] = {}
    while len(out) < n:
        data = await asyncio.wait_for(reader.read(65536), 10)
        assert data, f"connection closed after {len(out)} of {n} responses"
        for cmd in dec.feed(data):
            out[cmd.opaque] = cmd
    return out


async def test_non_utf8_binary_header_is_answered_and_the_connection_kept(shared_broker):
    reader, writer = await asyncio.open_connection("127.0.0.1", shared_broker.port)
    try:
        ok1 = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, serialize_type=SerializeType.ROCKETMQ)
        ok1.opaque = 101
        ok2 = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
        ok2.opaque = 103
        bad_value = _binary_frame(RequestCode.GET_MAX_OFFSET, 102, b"", {b"topic": b"T\xff\xfe", b"queueId": b"0"})
        bad_remark = _binary_frame(RequestCode.GET_BROKER_RUNTIME_INFO, 104, b"\xc3\x28", {})
        writer.write(_frame(ok1) + bad_value + _frame(ok2) + bad_remark)
        got = await _read_responses(reader, 4)
        assert got[101].code == ResponseCode.SUCCESS and got[103].code == ResponseCode.SUCCESS
        for opaque, what in ((102, "value"), (104, "remark")):
            r = got[opaque]
            assert r.code == ResponseCode.SYSTEM_ERROR
            assert r.remark.startswith(f"binary header {what} is not UTF-8"), r.remark
            assert r.serialize_type == SerializeType.ROCKETMQ
        # the connection still serves
        ok3 = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
        ok3.opaque = 105
        writer.write(_frame(ok3))
        assert (await _read_responses(reader, 1))[105].code == ResponseCode.SUCCESS
    finally:
        writer.close()


async def test_a_flood_of_malformed_frames_logs_a_few_lines_with_a_count(broker_factory):
    b = broker_factory("flood")
    n = 300

    async def one(i: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", b.port)
        # serialize type 7 does not exist: the frame cannot be parsed and the connection is closed
        writer.write(struct.pack(">iI", 8, (7 << 24) | 0) + b"\0\0\0\0")
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()

    for start in range(0, n, 50):
        await asyncio.gather(*(one(i) for i in range(start, start + 50)))
    # a last one on a fresh window shows the count of the ones not logged
    lines = [ln for ln in b.proc.output().splitlines() if "unknown serialize type" in ln]
    assert 1 <= len(lines) <= 5, lines[:10]
    assert "closing connection" in lines[0]


async def test_a_flood_of_bad_requests_logs_a_few_lines(broker_factory):
    """Well-framed requests whose header a handler rejects (here GET_MAX_OFFSET without queueId) are
    answered one by one, and logged like bad frames: a few lines per peer, not one per request."""
    b = broker_factory("badreq")
    reader, writer = await asyncio.open_connection("127.0.0.1", b.port)
    try:
        out = []
        for i in range(300):
            cmd = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "T"})
            cmd.opaque = i + 1
            out.append(_frame(cmd))
        writer.write(b"".join(out))
        got = await _read_responses(reader, 300)
        assert {r.code for r in got.values()} == {ResponseCode.SYSTEM_ERROR}
    finally:
        writer.close()
    lines = [ln for ln in b.proc.output().splitlines() if "handler for code" in ln]
    assert 1 <= len(lines) <= 5, lines[:10]

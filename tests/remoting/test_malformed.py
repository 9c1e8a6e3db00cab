"""Malformed input over a real socket closes only that connection; everyone else keeps being served."""

from __future__ import annotations

import asyncio
import logging
import struct

import pytest

from remoting.client import RemotingClient
from remoting.codec import FrameDecoder, encode_bytes
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.server import RemotingServer
from tests.support import async_wait_until


def _frame(word: int, header: bytes, body: bytes = b"", length: int | None = None) -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body) if length is None else length, word) + header + body


BAD_INPUT = {
    "negative length": struct.pack(">i", -8) + b"\0" * 12,
    "huge length": struct.pack(">i", 0x7FFFFFFF) + b"\0" * 12,
    "over 16 MiB": struct.pack(">i", 16 * 1024 * 1024 + 1) + b"\0" * 12,
    "bad json": _frame(9, b'{"code":1,'),
    "unknown serialize type": _frame((3 << 24) | 2, b"{}"),
    "header length > total": _frame(0xFFFF, b"{}", length=10),
    "bad binary header": _frame((1 << 24) | 21, struct.pack(">hBhiiii", 1, 0, 1, 1, 0, 5000, 0)),
    "garbage": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(200)),
}


def echo(req, conn):
    return req.response_to(ResponseCode.SUCCESS, body=req.body)


async def _read_until_eof(reader: asyncio.StreamReader, timeout: float = 5.0) -> bytes:
    data = b""
    async with asyncio.timeout(timeout):
        while chunk := await reader.read(65536):
            data += chunk
    return data


@pytest.mark.parametrize("name", list(BAD_INPUT))
async def test_malformed_frame_closes_only_that_connection(server, client, addr, name, caplog):
    server.register_processor(1, echo)
    # a well-behaved client is connected before and keeps working after
    assert (await client.invoke(addr, RemotingCommand.request(1, body=b"before"), 3)).body == b"before"
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    good = RemotingCommand.request(1, body=b"served first")
    with caplog.at_level(logging.WARNING, logger="remoting"):
        writer.write(encode_bytes(good) + BAD_INPUT[name])
        data = await _read_until_eof(reader)  # the server closes the connection
    # the complete frame that preceded the bad bytes was still answered
    [resp] = FrameDecoder().feed(data)
    assert resp.opaque == good.opaque and resp.body == b"served first"
    # logged with the peer address
    host, port = writer.get_extra_info("sockname")[:2]
    peer = f"{host}:{port}"
    assert any(peer in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    writer.close()
    await async_wait_until(lambda: len(server.connections) == 1, 5)
    assert (await client.invoke(addr, RemotingCommand.request(1, body=b"after"), 3)).body == b"after"


async def test_truncated_frame_then_close(server, client, addr):
    server.register_processor(1, echo)
    await client.invoke(addr, RemotingCommand.request(1), 3)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    frame = encode_bytes(RemotingCommand.request(1, body=b"x" * 100))
    writer.write(frame[:-10])
    await writer.drain()
    await async_wait_until(lambda: len(server.connections) == 2, 5)
    writer.write_eof()
    assert await _read_until_eof(reader) == b""  # nothing answered, connection closed
    writer.close()
    await async_wait_until(lambda: len(server.connections) == 1, 5)
    assert (await client.invoke(addr, RemotingCommand.request(1, body=b"ok"), 3)).body == b"ok"


async def test_per_connection_frame_limit():
    srv = RemotingServer("127.0.0.1", 0, max_frame_size=64 * 1024)
    srv.register_processor(1, echo)
    await srv.start()
    a, b = RemotingClient(), RemotingClient()
    addr = f"127.0.0.1:{srv.port}"
    try:
        assert (await a.invoke(addr, RemotingCommand.request(1, body=b"s" * 60000), 3)).body == b"s" * 60000
        conn_b = await b.get_connection(addr)
        with pytest.raises(Exception) as ei:
            await b.invoke(addr, RemotingCommand.request(1, body=b"L" * 70000), 5)
        assert "lost" in str(ei.value) or "closed" in str(ei.value)
        await async_wait_until(lambda: conn_b.closed, 5)
        # the other client's connection was untouched
        assert (await a.invoke(addr, RemotingCommand.request(1, body=b"still"), 3)).body == b"still"
        assert len(srv.connections) == 1
    finally:
        await a.close()
        await b.close()
        await srv.stop(1)


async def test_client_side_limit_protects_the_client(server, addr):
    server.register_processor(1, lambda req, conn: req.response_to(0, body=b"z" * 100_000))
    cli = RemotingClient(max_frame_size=10_000)
    try:
        with pytest.raises(Exception, match="lost|closed"):
            await cli.invoke(addr, RemotingCommand.request(1), 5)
    finally:
        await cli.close()

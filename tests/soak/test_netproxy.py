"""The fault-injecting link proxy of the DLedger nemesis (quick, not soak), over a loopback echo server."""

from __future__ import annotations

import asyncio

from tests.soak.netproxy import LinkProxy
from tests.support import LOOPBACK, async_wait_until


async def _echo_handler(r, w):
    while data := await r.read(1024):
        w.write(data)
        await w.drain()
    w.close()


async def _echo_server():
    srv = await asyncio.start_server(_echo_handler, LOOPBACK, 0)
    return srv, srv.sockets[0].getsockname()[1]


async def _roundtrip(port: int, payload: bytes, wait: float = 0.3) -> bytes | None:
    try:
        r, w = await asyncio.open_connection(LOOPBACK, port)
    except ConnectionError:
        return None
    try:
        w.write(payload)
        await w.drain()
        return await asyncio.wait_for(r.readexactly(len(payload)), wait)
    except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
        return None
    finally:
        w.transport.abort()


async def test_modes():
    srv, port = await _echo_server()
    p = await LinkProxy(port).start()
    try:
        assert await _roundtrip(p.port, b"hello") == b"hello"
        for mode in ("blackhole", "drop_forward", "drop_back", "reset"):
            p.set(mode)
            assert await _roundtrip(p.port, b"lost") is None, mode
        p.set("delay", 0.05)
        # after a reset the port listens again within the proxy's 50 ms poll
        await async_wait_until(lambda: _roundtrip(p.port, b"late", wait=2), 5, what="delayed round trip")
        p.set("pass")
        assert await _roundtrip(p.port, b"again") == b"again"
        assert p.dropped > 0 and p.passed > 0
    finally:
        await p.close()
        srv.close()


async def test_reset_cuts_open_connections_and_closed_target_closes_ours():
    srv, port = await _echo_server()
    p = await LinkProxy(port).start()
    try:
        r, w = await asyncio.open_connection(LOOPBACK, p.port)
        w.write(b"x")
        assert await r.readexactly(1) == b"x"
        p.set("reset")
        try:
            got = await asyncio.wait_for(r.read(10), 2)
        except ConnectionError:
            got = b""
        assert got == b""
        w.transport.abort()
        p.set("pass")
        await async_wait_until(lambda: _roundtrip(p.port, b"back"), 5, what="listening again after reset")
        # the peer's port closes: after one reset connection the proxy's port refuses too
        srv.close()
        await srv.wait_closed()
        assert await _roundtrip(p.port, b"nobody") is None

        async def refused():
            try:
                _r, w = await asyncio.open_connection(LOOPBACK, p.port)
            except ConnectionRefusedError:
                return True
            w.transport.abort()
            return False

        await async_wait_until(refused, 5, what="the proxy's port refusing")
        # and listens again once the peer is back on its port
        srv2 = await asyncio.start_server(_echo_handler, LOOPBACK, port)
        try:
            await async_wait_until(lambda: _roundtrip(p.port, b"again"), 5, what="listening again")
        finally:
            srv2.close()
    finally:
        await p.close()

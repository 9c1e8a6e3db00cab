"""Flow control, graceful stop and the uvloop runner."""

from __future__ import annotations

import asyncio
import socket

import uvloop

import remoting
from remoting.client import RemotingClient
from remoting.codec import FrameDecoder, encode_bytes
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingSendRequestError
from remoting.server import RemotingServer
from tests.support import async_wait_until

BIG = b"B" * (256 * 1024)


async def test_server_pauses_reading_a_peer_that_does_not_read(server):
    """A peer that floods requests without reading responses is throttled, and loses nothing."""
    served = []

    def big(req, conn):
        served.append(req.opaque)
        return req.response_to(ResponseCode.SUCCESS, body=BIG)

    server.register_processor(1, big)
    n = 200  # 200 x 64 KiB requests, 200 x 256 KiB = 50 MiB of responses if nobody throttled
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    try:
        await loop.sock_connect(sock, ("127.0.0.1", server.port))
        payload = b"".join(encode_bytes(RemotingCommand.request(1, body=b"r" * 65536)) for _ in range(n))
        sender = asyncio.ensure_future(loop.sock_sendall(sock, payload))
        await async_wait_until(lambda: server.connections, 5)
        [conn] = list(server.connections)
        await async_wait_until(
            lambda: conn._write_paused and not conn._transport.is_reading(), 10, what="server paused reading"
        )
        assert len(served) < n and not sender.done()  # the flood is held back in the socket buffers
        dec, got = FrameDecoder(), []
        async with asyncio.timeout(30):
            while len(got) < n:
                got += dec.feed(await loop.sock_recv(sock, 1 << 20))
            await sender
        assert len(got) == n and all(r.body == BIG for r in got)
        assert sorted(r.opaque for r in got) == sorted(served)
    finally:
        sock.close()


async def test_stop_waits_for_in_flight_handlers_then_closes():
    srv = RemotingServer("127.0.0.1", 0)
    started = asyncio.Event()

    async def slow(req, conn):
        started.set()
        await asyncio.sleep(0.2)
        return req.response_to(ResponseCode.SUCCESS, "finished")

    srv.register_processor(1, slow)
    await srv.start()
    cli = RemotingClient()
    addr = f"127.0.0.1:{srv.port}"
    try:
        fut = asyncio.ensure_future(cli.invoke(addr, RemotingCommand.request(1), 5))
        await started.wait()
        await srv.stop(grace=5)
        assert (await fut).remark == "finished"  # the in-flight request was answered before closing
        assert not srv.connections and not srv.serving
        await async_wait_until(lambda: not cli.connections, 5)
        # nothing listens any more
        try:
            await cli.invoke(addr, RemotingCommand.request(1), 1)
            raise AssertionError("server still accepting")
        except remoting.RemotingConnectError:
            pass
    finally:
        await cli.close()


async def test_stop_grace_expires_for_stuck_handler():
    srv = RemotingServer("127.0.0.1", 0)
    srv.register_processor(1, lambda req, conn: asyncio.Event().wait())  # never finishes
    await srv.start()
    cli = RemotingClient()
    try:
        fut = asyncio.ensure_future(cli.invoke(f"127.0.0.1:{srv.port}", RemotingCommand.request(1), 30))
        await async_wait_until(lambda: srv._tasks, 5)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await srv.stop(grace=0.2)
        assert loop.time() - t0 < 3
        try:
            await fut
            raise AssertionError("expected failure")
        except RemotingSendRequestError:
            pass
    finally:
        await cli.close()


def test_run_uses_uvloop():
    async def which():
        return type(asyncio.get_running_loop())

    assert remoting.run(which()) is uvloop.Loop


async def test_idle_connections_are_closed_busy_ones_kept():
    srv = RemotingServer("127.0.0.1", 0, idle_timeout=0.3)
    srv.register_processor(1, lambda req, conn: req.response_to(ResponseCode.SUCCESS))
    await srv.start()
    idle, busy = RemotingClient(), RemotingClient()
    addr = f"127.0.0.1:{srv.port}"
    try:
        await idle.invoke(addr, RemotingCommand.request(1), 3)
        idle_conn = await idle.get_connection(addr)
        busy_conn = await busy.get_connection(addr)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        sent = 0
        while not idle_conn.closed and loop.time() - t0 < 10:
            await busy.invoke(addr, RemotingCommand.request(1), 3)  # keeps its connection active
            sent += 1
        assert idle_conn.closed and loop.time() - t0 >= 0.25
        assert not busy_conn.closed and sent > 0
        # the idle client reconnects transparently on next use
        assert (await idle.invoke(addr, RemotingCommand.request(1), 3)).code == ResponseCode.SUCCESS
    finally:
        await idle.close()
        await busy.close()
        await srv.stop(1)

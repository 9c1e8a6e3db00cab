"""A fault-injecting TCP proxy for one directed peer link (asyncio, loopback only).

Node A reaches node B through ``LinkProxy(B's port)``: A's connections go to the proxy's port,
which opens one to B for each and pumps bytes both ways. "forward" is A -> B (A's requests),
"back" is B -> A (B's answers on A's connections). Modes, switchable at any time:

* ``pass``: bytes flow;
* ``blackhole``: every byte is swallowed, both ways; connections stay open (a hung peer);
* ``reset``: open connections are reset (RST) and the port refuses new ones (a dead port);
* ``drop_forward`` / ``drop_back``: one direction is swallowed (one-way loss);
* ``delay``: each chunk waits ``delay`` seconds before it is passed on.

Like the peer's port, the proxy's refuses connections while the peer's is closed (a killed node):
a connection the peer refuses is reset and the proxy stops listening until the peer's port answers
again. (A node watching its leader's port sees a kill -9 through the proxy as it would directly.)
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct

from tests.support import LOOPBACK

__all__ = ["LinkProxy", "MODES"]

MODES = ("pass", "blackhole", "reset", "drop_forward", "drop_back", "delay")
_LINGER_RST = struct.pack("ii", 1, 0)


def _reset(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
    writer.transport.abort()


class LinkProxy:
    def __init__(self, target_port: int, name: str = "") -> None:
        self.target_port = target_port
        self.name = name
        self.mode = "pass"
        self.delay = 0.0
        self.port = 0
        self.passed = self.dropped = 0
        self._server: asyncio.AbstractServer | None = None
        self._conns: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter | None]] = set()
        self._tasks: set[asyncio.Task] = set()
        self._reopen: asyncio.Task | None = None
        self._closed = False

    async def start(self, port: int = 0) -> LinkProxy:
        self._server = await asyncio.start_server(self._accept, LOOPBACK, port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def set(self, mode: str, delay: float = 0.0) -> None:
        if mode not in MODES:
            raise ValueError(mode)
        self.mode, self.delay = mode, delay
        if mode == "reset":
            for down, up in list(self._conns):
                _reset(down)
                if up is not None:
                    _reset(up)
            self._conns.clear()
            self._stop_listening()
        self._reopen_soon()

    def _stop_listening(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def _reopen_soon(self) -> None:
        if self._server is None and self._reopen is None and not self._closed:
            self._reopen = asyncio.get_running_loop().create_task(self._reopen_when_up())

    async def _reopen_when_up(self) -> None:
        """Listen again once the mode allows it and the peer's port answers (polled every 50 ms)."""
        try:
            while not self._closed:
                if self.mode != "reset":
                    try:
                        _r, w = await asyncio.open_connection(LOOPBACK, self.target_port)
                        w.transport.abort()
                        break
                    except OSError:
                        pass
                await asyncio.sleep(0.05)  # polling the peer's port
            if not self._closed:
                self._server = await asyncio.start_server(self._accept, LOOPBACK, self.port)
        finally:
            self._reopen = None

    async def close(self) -> None:
        self._closed = True
        self._stop_listening()
        if self._reopen is not None:
            self._reopen.cancel()
        for down, up in list(self._conns):
            down.transport.abort()
            if up is not None:
                up.transport.abort()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "reset":
            _reset(writer)
            return
        try:
            up_r, up_w = await asyncio.open_connection(LOOPBACK, self.target_port)
        except OSError:
            _reset(writer)  # the peer's port is closed: so is ours, until it answers again
            self._stop_listening()
            self._reopen_soon()
            return
        pair = (writer, up_w)
        self._conns.add(pair)
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self._pump(reader, up_w, True, pair)),
                 loop.create_task(self._pump(up_r, writer, False, pair))]
        self._tasks.update(tasks)
        for t in tasks:
            t.add_done_callback(self._tasks.discard)

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, forward: bool, pair) -> None:
        try:
            while True:
                data = await src.read(65536)
                if not data:
                    break
                mode = self.mode
                if mode == "blackhole" or (mode == "drop_forward" and forward) or (mode == "drop_back" and not forward):
                    self.dropped += len(data)
                    continue
                if mode == "delay" and self.delay > 0:
                    await asyncio.sleep(self.delay)  # the injected latency itself
                dst.write(data)
                self.passed += len(data)
                await dst.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._conns.discard(pair)
            for w in pair:
                w.transport.abort()

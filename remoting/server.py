"""RemotingServer: accept connections and serve requests by code.

Handlers have the shape ``handler(request, connection)`` and return a
:class:`RemotingCommand` (written at once, batched per read), ``None`` (nothing
is written; the handler may answer later with ``connection.send_response``) or
an awaitable of either (run as a task); a handler returning ``None`` may also
``connection.defer`` work to the end of the read (see remoting.connection). Unknown codes get
REQUEST_CODE_NOT_SUPPORTED; a raising handler gets SYSTEM_ERROR with the error
text as remark. Oneway requests never get a response. A malformed or
oversized frame closes only that connection.
"""

from __future__ import annotations

import asyncio
import logging
import socket

from remoting.codec import DEFAULT_MAX_FRAME_SIZE
from remoting.connection import Connection, Endpoint, Handler
from remoting.tls import PermissiveAcceptor, TlsMode, TlsSystemConfig, listening_socket

__all__ = ["RemotingServer", "Connection", "Handler"]

log = logging.getLogger("remoting")


class RemotingServer(Endpoint):
    """A TCP server speaking the remoting protocol; see the module docstring."""

    def __init__(
        self,
        host: str = "0.0.0.0",
        port: int = 0,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        name: str = "server",
        backlog: int = 1024,
        idle_timeout: float | None = 120.0,
        tls: TlsSystemConfig | None = None,
    ):
        super().__init__(max_frame_size=max_frame_size, name=name)
        #: TLS settings (remoting.tls); None or mode disabled serves plaintext only
        self.tls = tls
        self.host = host
        self._port = port
        self._backlog = backlog
        #: close connections with neither read nor write for this long
        #: (``serverChannelMaxIdleTimeSeconds``); None disables it.
        self.idle_timeout = idle_timeout
        self._idle_handle: asyncio.TimerHandle | None = None
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        """Bind and start accepting (``port=0`` picks a free port, see :attr:`port`)."""
        loop = asyncio.get_running_loop()
        mode = self.tls.server_mode if self.tls is not None else TlsMode.DISABLED
        if mode == TlsMode.PERMISSIVE:  # TLS and plaintext on one port: sniff each connection
            acceptor = PermissiveAcceptor(
                listening_socket(self.host, self._port, self._backlog),
                lambda: self._make_connection(True), self.tls.server_context(), self.idle_timeout,
            )
            acceptor.start()
            self._server = acceptor  # type: ignore[assignment]
        else:
            self._server = await loop.create_server(
                lambda: self._make_connection(True),
                self.host,
                self._port,
                reuse_address=True,
                backlog=self._backlog,
                family=socket.AF_INET if self.host and ":" not in self.host else socket.AF_UNSPEC,
                ssl=self.tls.server_context() if mode == TlsMode.ENFORCING else None,
            )
        self._port = self._server.sockets[0].getsockname()[1]
        if self.idle_timeout:
            self._idle_handle = loop.call_later(self._idle_period(), self._close_idle)
        log.info("%s: listening on %s:%s (TLS %s)", self.name, self.host, self._port, mode)

    def _idle_period(self) -> float:
        return max(min(self.idle_timeout / 4, 10.0), 0.01)

    def _close_idle(self) -> None:
        loop = asyncio.get_running_loop()
        limit = loop.time() - self.idle_timeout
        for conn in list(self.connections):
            if conn.last_io < limit and not conn.closed:
                log.info("%s: closing idle connection %s", self.name, conn.remote_addr)
                conn.close()
        if self._server is not None:
            self._idle_handle = loop.call_later(self._idle_period(), self._close_idle)

    @property
    def port(self) -> int:
        """The bound port (after :meth:`start`)."""
        return self._port

    @property
    def serving(self) -> bool:
        return self._server is not None and self._server.is_serving()

    async def stop(self, grace: float = 5.0) -> None:
        """Stop accepting, wait up to ``grace`` seconds for in-flight handlers, close every connection."""
        if self._server is None:
            return
        server, self._server = self._server, None
        server.close()
        if self._idle_handle is not None:
            self._idle_handle.cancel()
            self._idle_handle = None
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=grace)
        for task in list(self._tasks):
            task.cancel()
        conns = list(self.connections)
        for conn in conns:
            conn.close()
        waits = [asyncio.ensure_future(c.wait_closed()) for c in conns]
        if waits:
            _done, not_done = await asyncio.wait(waits, timeout=max(grace, 0.1))
            for c in conns:
                if not c.closed or c in self.connections:
                    c.abort()
            for w in not_done:
                w.cancel()
        await server.wait_closed()
        log.info("%s: stopped", self.name)

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.stop()

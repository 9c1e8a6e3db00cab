"""RemotingClient: one connection per address, requests matched by opaque.

A dropped connection fails every request pending on it at once
(RemotingSendRequestError, cause chained) and is re-established on next use.
Server-initiated requests arriving on a client connection are served by the
processors registered here, exactly as on a server.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

from remoting.codec import DEFAULT_MAX_FRAME_SIZE
from remoting.command import RemotingCommand
from remoting.connection import Connection, Endpoint, Handler, ResponseCallback, _run_callback
from remoting.errors import RemotingConnectError, RemotingError, RemotingTimeoutError

__all__ = ["RemotingClient", "Connection", "Handler", "parse_addr"]

log = logging.getLogger("remoting")


def parse_addr(addr: str) -> tuple[str, int]:
    """``"host:port"`` (or ``"[v6]:port"``) to ``(host, port)``; ValueError if malformed."""
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"bad address {addr!r}, want host:port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


class RemotingClient(Endpoint):
    """Client side of the remoting protocol; see the module docstring."""

    def __init__(
        self,
        *,
        connect_timeout: float = 3.0,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        name: str = "client",
        ssl_context: ssl.SSLContext | None = None,
    ):
        super().__init__(max_frame_size=max_frame_size, name=name)
        self.connect_timeout = connect_timeout
        #: connect with TLS when set (remoting.tls.TlsSystemConfig.client_context)
        self.ssl_context = ssl_context
        self._conns: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Task] = {}
        self._closed = False

    # -- connections -------------------------------------------------------------------

    async def get_connection(self, addr: str) -> Connection:
        """The open connection to ``addr``, connecting first if needed (RemotingConnectError on failure)."""
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:
            return conn
        if self._closed:
            raise RemotingConnectError(f"{self.name} is closed")
        task = self._connecting.get(addr)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._connect(addr))
            self._connecting[addr] = task
            task.add_done_callback(lambda t: self._connect_done(addr, t))
        # shield: one caller giving up must not cancel the connect others wait on.
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled() and not _current_task_cancelling():
                raise RemotingConnectError(f"connect to {addr} cancelled: {self.name} closed") from None
            raise

    def _connect_done(self, addr: str, task: asyncio.Task) -> None:
        if self._connecting.get(addr) is task:
            del self._connecting[addr]
        if not task.cancelled():
            task.exception()  # retrieved: the waiters have their own copy

    async def _connect(self, addr: str) -> Connection:
        try:
            host, port = parse_addr(addr)
        except ValueError as e:
            raise RemotingConnectError(str(e)) from e
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                _transport, conn = await loop.create_connection(
                    lambda: self._make_connection(False), host, port,
                    **({"ssl": self.ssl_context, "server_hostname": ""} if self.ssl_context is not None else {}),
                )
        except TimeoutError as e:
            raise RemotingConnectError(f"connect to {addr} timed out after {self.connect_timeout}s") from e
        except (OSError, ssl.SSLError) as e:
            raise RemotingConnectError(f"connect to {addr} failed: {e}") from e
        if self._closed:
            conn.close()
            raise RemotingConnectError(f"{self.name} is closed")
        conn.attrs.setdefault("addr", addr)
        self._conns[addr] = conn
        return conn

    def _connection_lost(self, conn: Connection) -> None:
        addr = conn.attrs.get("addr")
        if addr is not None and self._conns.get(addr) is conn:
            del self._conns[addr]
        super()._connection_lost(conn)

    async def close_connection(self, addr: str) -> None:
        """Close the connection to ``addr`` (pending requests on it fail)."""
        conn = self._conns.pop(addr, None)
        if conn is not None:
            conn.close()
            await _bounded_wait_closed([conn])

    async def close(self) -> None:
        """Close every connection; the client cannot be used afterwards."""
        self._closed = True
        for task in list(self._connecting.values()):
            task.cancel()
        conns = list(self._conns.values())
        self._conns.clear()
        for conn in conns:
            conn.close()
        await _bounded_wait_closed(conns)
        for task in list(self._tasks):
            task.cancel()

    async def __aenter__(self) -> RemotingClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # -- requests ----------------------------------------------------------------------

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float = 3.0) -> RemotingCommand:
        """Send ``cmd`` to ``addr`` and return the response.

        Time spent connecting counts against ``timeout``. Raises
        RemotingConnectError, RemotingTimeoutError or RemotingSendRequestError.
        """
        conn = self._conns.get(addr)
        if conn is None or conn.closed:
            loop = asyncio.get_running_loop()
            start = loop.time()
            try:
                async with asyncio.timeout(timeout):
                    conn = await self.get_connection(addr)
            except TimeoutError as e:
                raise RemotingTimeoutError(f"connect to {addr} took longer than the request timeout {timeout}s") from e
            timeout -= loop.time() - start
            if timeout <= 0:
                raise RemotingTimeoutError(f"request to {addr} timed out while connecting")
        return await conn.invoke(cmd, timeout)

    def invoke_async(self, addr: str, cmd: RemotingCommand, timeout: float, callback: ResponseCallback) -> None:
        """Send ``cmd``; later ``callback(response, None)`` or ``callback(None, exc)`` runs on the loop."""
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:
            conn.invoke_callback(cmd, timeout, callback)
            return

        async def connect_then_send() -> None:
            loop = asyncio.get_running_loop()
            start = loop.time()
            try:
                c = await self.get_connection(addr)
            except RemotingError as e:
                _run_callback(callback, None, e)
                return
            c.invoke_callback(cmd, max(timeout - (loop.time() - start), 0.0), callback)

        self._track(asyncio.get_running_loop().create_task(connect_then_send()))

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand) -> None:
        """Send ``cmd`` with the oneway flag; no response is expected."""
        conn = self._conns.get(addr)
        if conn is None or conn.closed:
            conn = await self.get_connection(addr)
        conn.invoke_oneway(cmd)
        await conn.drain()


def _current_task_cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _bounded_wait_closed(conns: list[Connection], timeout: float = 5.0) -> None:
    if not conns:
        return
    waits = [asyncio.ensure_future(c.wait_closed()) for c in conns]
    _done, not_done = await asyncio.wait(waits, timeout=timeout)
    for w in not_done:
        w.cancel()
    for c in conns:
        if c in c._endpoint.connections:
            c.abort()

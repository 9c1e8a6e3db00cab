"""The asyncio side of remoting: one symmetric ``Connection`` protocol shared by server and client.

A :class:`Connection` both serves requests (dispatching them to its endpoint's
processors) and sends requests (matching responses by opaque). Each
``data_received`` decodes every complete frame; synchronous handler results of
one read are written together with one ``writelines`` (on TLS, one joined write: a record
per write, not per chunk); handlers that return an
awaitable run as tasks. A handler may also :meth:`Connection.defer` work to the
end of the read (e.g. one store append for all the sends of one read): deferred
work runs before the read's responses are written, and before any request of the
read that goes to another handler, so requests keep their order. Requests sent
through :meth:`Connection.invoke` are coalesced per loop iteration into one
``writelines`` as well.
"""

from __future__ import annotations

import asyncio
import logging
import math
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from remoting.codec import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode
from remoting.codes import RPC_ONEWAY, RPC_TYPE_RESPONSE, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import (
    LocalProtocolError,
    RemoteProtocolError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)
from remoting.fair_dispatch import Backlog, FairDispatcher
from remoting.peer_log_limiter import PeerLogLimiter

__all__ = ["Connection", "Endpoint", "Handler", "ResponseCallback", "RPCHook"]

log = logging.getLogger("remoting")

Handler = Callable[[RemotingCommand, "Connection"], RemotingCommand | None | Awaitable[RemotingCommand | None]]
ResponseCallback = Callable[[RemotingCommand | None, BaseException | None], None]


class RPCHook(Protocol):
    """Runs around every request an endpoint serves (RocketMQ's RPCHook, server side).

    ``do_before_request`` runs before the processor is looked up; returning a command answers the
    request with it and the processor never runs (an ACL refusal, a fast-fail). ``do_after_response``
    sees every response as it is encoded; ``request`` is None for late responses written with
    :meth:`Connection.send_response` (match them by ``response.opaque``; a hook installed with
    ``late=False`` is not called for those). Hooks must not raise.
    """

    def do_before_request(self, conn: Connection, request: RemotingCommand) -> RemotingCommand | None: ...

    def do_after_response(self, conn: Connection, request: RemotingCommand | None, response: RemotingCommand) -> None: ...

_NO_LIMIT = 1 << 62
_SUCCESS_RESPONSE_FLAG = RPC_TYPE_RESPONSE
_NOT_SUPPORTED = int(ResponseCode.REQUEST_CODE_NOT_SUPPORTED)
_SYSTEM_ERROR = int(ResponseCode.SYSTEM_ERROR)
_new_command = RemotingCommand.__new__
_perf = time.perf_counter


def _error_text(e: BaseException) -> str:
    text = str(e)
    return text if text else type(e).__name__


def _error_response(code: int, remark: str) -> RemotingCommand:
    return RemotingCommand(code, flag=RPC_TYPE_RESPONSE, remark=remark)


def format_addr(peer: Any) -> str:
    """``ip:port`` as RocketMQ's RemotingHelper.parseChannelRemoteAddr prints it."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return "" if peer is None else str(peer)


class Endpoint:
    """What server and client share: the processor table, listeners and in-flight handler tasks."""

    def __init__(self, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, name: str = "remoting"):
        self.name = name
        self.max_frame_size = max_frame_size
        self.processors: dict[int, Handler] = {}
        self.default_processor: Handler | None = None
        self.connections: set[Connection] = set()
        self._on_open: list[Callable[[Connection], Any]] = []
        self._on_close: list[Callable[[Connection], Any]] = []
        self._tasks: set[asyncio.Task] = set()
        # Empty tuples keep the hot path to one truth test when no hook is installed.
        self.before_hooks: tuple[RPCHook, ...] = ()
        self.after_hooks: tuple[RPCHook, ...] = ()
        self.late_hooks: tuple[RPCHook, ...] = ()  # after hooks that also see late responses
        #: stamp every read with ``time.perf_counter()`` (:attr:`Connection.received_at`): what a
        #: latency hook measures from, one clock read per read instead of one per request
        self.stamp_reads = False
        #: what peers can make us log at will (bad frames) is logged once per host per interval, counted
        self.protocol_log = PeerLogLimiter(log)
        #: fair turns and backlogs between connections (see remoting.fair_dispatch); off until set
        self.fair: FairDispatcher | None = None
        self._turn_budget = _NO_LIMIT

    def set_fair_dispatch(self, fair: FairDispatcher | None) -> None:
        """Serve big reads in fair turns with a bounded backlog per connection (None: all at once)."""
        self.fair = fair
        self._turn_budget = _NO_LIMIT if fair is None else fair.turn_budget

    def add_rpc_hook(self, hook: RPCHook, *, before: bool = True, after: bool = True, late: bool = True) -> None:
        """Install ``hook`` around every request served (see :class:`RPCHook`); hooks run in install order.

        ``late=False``: ``do_after_response`` is not called for late responses (``request`` None),
        e.g. for a hook that has nothing to do with them: the send path answers every message late.
        """
        if before:
            self.before_hooks = (*self.before_hooks, hook)
        if after:
            self.after_hooks = (*self.after_hooks, hook)
            if late:
                self.late_hooks = (*self.late_hooks, hook)

    def register_processor(self, code: int, handler: Handler) -> None:
        """Serve requests with this code by ``handler(request, connection)``."""
        self.processors[int(code)] = handler

    def register_default_processor(self, handler: Handler) -> None:
        """Serve every request code without its own processor."""
        self.default_processor = handler

    def add_connection_listener(
        self,
        on_open: Callable[[Connection], Any] | None = None,
        on_close: Callable[[Connection], Any] | None = None,
    ) -> None:
        """Call ``on_open(conn)`` / ``on_close(conn)`` when a connection opens / closes."""
        if on_open is not None:
            self._on_open.append(on_open)
        if on_close is not None:
            self._on_close.append(on_close)

    # -- hooks called by Connection ------------------------------------------------

    def _make_connection(self, pause_reading_on_backpressure: bool) -> Connection:
        return Connection(self, self.max_frame_size, pause_reading_on_backpressure)

    def _connection_made(self, conn: Connection) -> None:
        self.connections.add(conn)
        self._notify(self._on_open, conn, "open")

    def _connection_lost(self, conn: Connection) -> None:
        self.connections.discard(conn)
        self._notify(self._on_close, conn, "close")

    def _notify(self, listeners: list[Callable[[Connection], Any]], conn: Connection, event: str) -> None:
        for cb in listeners:
            try:
                cb(conn)
            except Exception:  # one failing listener neither stops the others nor the connection
                log.exception("%s: connection %s listener failed for %s", self.name, event, conn.remote_addr)

    def _track(self, task: asyncio.Task) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


class Connection(asyncio.Protocol):
    """One TCP connection: serves incoming requests and sends requests of its own.

    Public attributes: ``remote_addr``/``local_addr`` (``ip:port``), ``attrs``
    (free for upper layers), ``closed``.
    """

    def __init__(
        self,
        endpoint: Endpoint,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        pause_reading_on_backpressure: bool = False,
    ):
        self._endpoint = endpoint
        self._decoder = FrameDecoder(max_frame_size)
        self._transport: asyncio.Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.remote_addr = ""
        self.local_addr = ""
        self.attrs: dict[str, Any] = {}
        self.closed = True  # until connection_made
        # opaque -> [deadline, future | None, callback | None, code]
        self._pending: dict[int, list] = {}
        self._sweep_handle: asyncio.TimerHandle | None = None
        self._sweep_at = math.inf
        self._wbuf: list = []
        self._emit: Callable[[list], None] = _closed_emit  # transport.writelines, or the TLS form of it
        self._flush_scheduled = False
        self._write_paused = False
        self._pause_reads = pause_reading_on_backpressure
        self._drain_waiters: list[asyncio.Future] = []
        self._lost: asyncio.Future | None = None
        self._close_cause: BaseException | None = None
        self._backlog: Backlog | None = None  # requests waiting for a fair turn (see remoting.fair_dispatch)
        # end-of-read work (see defer): callables, and the handler that deferred them
        self._reading = False
        self._deferred: list[Callable[[], Any]] | None = None
        self._defer_owner: Any = None
        self._dispatching: Any = None
        #: loop time of the last read or write (idle detection)
        self.last_io = 0.0
        #: perf_counter() when the request being answered arrived (its read), with
        #: ``Endpoint.stamp_reads``: set per read, and around the encoding of an answer that a task
        #: produced later. Late answers (send_response) are timed by whoever holds the request.
        self.received_at = 0.0

    # -- asyncio.Protocol ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        self._loop = asyncio.get_running_loop()
        self._lost = self._loop.create_future()
        self.closed = False
        self.last_io = self._loop.time()
        self.remote_addr = format_addr(transport.get_extra_info("peername"))
        self.local_addr = format_addr(transport.get_extra_info("sockname"))
        if transport.get_extra_info("sslcontext") is None:
            self._emit = transport.writelines  # type: ignore[attr-defined]
        else:  # TLS makes a record of each chunk written: one joined write makes as few as it can
            write = transport.write  # type: ignore[attr-defined]
            self._emit = lambda chunks: write(b"".join(chunks))
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except (OSError, AttributeError):
                pass
        self._endpoint._connection_made(self)

    def data_received(self, data: bytes) -> None:
        self.last_io = self._loop.time()
        if self._endpoint.stamp_reads:  # at arrival: a request served later in a fair turn counts its wait
            self.received_at = _perf()
        decoder = self._decoder
        try:
            cmds = decoder.feed(data)
        except RemoteProtocolError as e:
            self._endpoint.protocol_log.log(
                logging.WARNING, self.remote_addr, "%s: closing connection %s: %s",
                self._endpoint.name, self.remote_addr, e,
            )
            self._close_cause = e
            if decoder.rejected:
                self._refuse(decoder)
            self._handle(e.frames)
            self.close()
            return
        if decoder.rejected:
            self._refuse(decoder)
        ep = self._endpoint
        if self._backlog is not None or len(cmds) > ep._turn_budget:
            if self._wbuf:  # refusals above
                self._flush()
            ep.fair.admit(self, cmds, self.last_io)
            return
        self._handle(cmds)

    def _refuse(self, decoder: FrameDecoder) -> None:
        """Answer the frames the decoder could frame but not read (bad header text) with SYSTEM_ERROR;
        the connection and the other requests on it carry on. The answers leave with the read's."""
        rejected, decoder.rejected = decoder.rejected, []
        for err in rejected:
            cmd = err.command
            self._endpoint.protocol_log.log(
                logging.WARNING, self.remote_addr, "%s: refused a frame (code %s, opaque %s) from %s: %s",
                self._endpoint.name, cmd.code, cmd.opaque, self.remote_addr, err,
            )
            if cmd.flag & RPC_TYPE_RESPONSE:
                entry = self._pending.pop(cmd.opaque, None)
                if entry is not None:
                    self._settle(entry, None, err)
            elif not cmd.flag & RPC_ONEWAY:
                self._wbuf.extend(self._encode_response(cmd, _error_response(_SYSTEM_ERROR, str(err))))

    def _handle(self, cmds: list[RemotingCommand]) -> None:
        out = self._wbuf
        self._reading = True
        try:
            for cmd in cmds:
                if cmd.flag & RPC_TYPE_RESPONSE:
                    self._on_response(cmd)
                else:
                    self._dispatch(cmd, out)
        finally:
            if self._deferred is not None:  # also when dispatch failed: deferred senders still get answers
                self._run_deferred()
            self._reading = False
            self._dispatching = None
            out = self._wbuf  # deferred work answers through send_response, into the same buffer
            if out and not self.closed:
                self._wbuf = []
                self._emit(out)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wbuf = []
        self._backlog = None
        cause = exc or self._close_cause or ConnectionResetError(f"connection to {self.remote_addr} closed")
        self._fail_pending(cause)
        self._wake_drain_waiters()
        if self._lost is not None and not self._lost.done():
            self._lost.set_result(None)
        self._endpoint._connection_lost(self)

    def eof_received(self) -> bool | None:
        if self._decoder.buffered:
            self._endpoint.protocol_log.log(
                logging.INFO, self.remote_addr, "%s: %s closed with %d bytes of an incomplete frame",
                self._endpoint.name, self.remote_addr, self._decoder.buffered,
            )
        return None  # let the transport close

    def pause_writing(self) -> None:
        self._write_paused = True
        if self._pause_reads and self._transport is not None:
            # Stop taking requests from a peer that does not read its responses.
            self._transport.pause_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        if self._pause_reads and (self._backlog is None or not self._backlog.held):
            self._resume_reading()
        self._wake_drain_waiters()

    def _resume_reading(self) -> None:
        # reads stay paused while either reason holds: a peer not reading, or a full backlog
        if self._transport is not None and not self.closed and not (self._pause_reads and self._write_paused):
            self._transport.resume_reading()

    # -- serving -------------------------------------------------------------------

    def defer(self, fn: Callable[[], Any]) -> None:
        """Run ``fn()`` once the current read's requests for this handler are dispatched.

        Call it from a handler (which returned None and answers later with
        :meth:`send_response`). ``fn`` runs at the end of the read, before the read's
        responses are written (what it answers goes out with them), or earlier, right
        before a request of the read that goes to another handler. Outside a read it
        runs on the next loop iteration. Exceptions it raises are logged.
        """
        if not self._reading:
            self._loop.call_soon(_run_logged, fn)
            return
        if self._deferred is None:
            self._deferred = [fn]
            self._defer_owner = self._dispatching
        else:
            self._deferred.append(fn)

    def _run_deferred(self) -> None:
        fns, self._deferred = self._deferred, None
        self._defer_owner = None
        for fn in fns:
            _run_logged(fn)

    def spawn(self, aw: Awaitable[Any]) -> asyncio.Task:
        """Run ``aw`` as a task that the server's stop waits for (bounded by its grace period)."""
        task = asyncio.ensure_future(aw)
        self._endpoint._track(task)
        return task

    def _dispatch(self, req: RemotingCommand, out: list) -> None:
        ep = self._endpoint
        if ep.before_hooks:
            for hook in ep.before_hooks:
                refused = hook.do_before_request(self, req)
                if refused is not None:
                    if self._deferred is not None:
                        self._run_deferred()
                    if not req.flag & RPC_ONEWAY:
                        out.extend(self._encode_response(req, refused))
                    return
        handler = ep.processors.get(req.code) or ep.default_processor
        if self._deferred is not None and handler is not self._defer_owner:
            self._run_deferred()  # work deferred by another handler first: requests keep their order
        if handler is None:
            resp = _error_response(_NOT_SUPPORTED, f" request type {req.code} not supported")
        else:
            self._dispatching = handler
            try:
                resp = handler(req, self)
            except Exception as e:
                self._log_failure(req, e)
                resp = _error_response(_SYSTEM_ERROR, _error_text(e))
            else:
                if resp is None:
                    return
                if type(resp) is not RemotingCommand and not isinstance(resp, RemotingCommand):
                    self._run_async(req, resp)
                    return
        if req.flag & RPC_ONEWAY:
            return
        out.extend(self._encode_response(req, resp))

    def _log_failure(self, req: RemotingCommand, e: BaseException) -> None:
        ep = self._endpoint
        if isinstance(e, ValueError):  # a bad request (the peer's doing): limited per peer like bad frames
            ep.protocol_log.log(logging.WARNING, self.remote_addr, "%s: handler for code %s from %s failed: %r",
                                ep.name, req.code, self.remote_addr, e)
        else:
            log.warning("%s: handler for code %s from %s failed: %r", ep.name, req.code, self.remote_addr, e,
                        exc_info=e)

    def _encode_response(self, req: RemotingCommand, resp: RemotingCommand) -> list:
        resp.opaque = req.opaque
        resp.flag |= RPC_TYPE_RESPONSE
        resp.serialize_type = req.serialize_type
        if self._endpoint.after_hooks:
            for hook in self._endpoint.after_hooks:
                hook.do_after_response(self, req, resp)
        try:
            return encode(resp)
        except LocalProtocolError as e:
            log.error("%s: cannot encode response to code %s: %s", self._endpoint.name, req.code, e)
            err = _error_response(_SYSTEM_ERROR, f"cannot encode response: {e}")
            err.opaque = req.opaque
            err.serialize_type = req.serialize_type
            return encode(err)

    def _run_async(self, req: RemotingCommand, aw: Any) -> None:
        try:
            task = asyncio.ensure_future(aw)
        except TypeError:
            log.error("%s: handler for code %s returned %r", self._endpoint.name, req.code, aw)
            if not req.flag & RPC_ONEWAY:
                self._write(self._encode_response(req, _error_response(_SYSTEM_ERROR, "handler returned no command")))
            return
        self._endpoint._track(task)
        received = self.received_at
        task.add_done_callback(lambda t: self._async_done(req, t, received))

    def _async_done(self, req: RemotingCommand, task: asyncio.Task, received: float = 0.0) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self._log_failure(req, exc)
            resp = _error_response(_SYSTEM_ERROR, _error_text(exc))
        else:
            resp = task.result()
            if resp is None:
                return
            if not isinstance(resp, RemotingCommand):
                log.error("%s: handler for code %s returned %r", self._endpoint.name, req.code, resp)
                resp = _error_response(_SYSTEM_ERROR, "handler returned no command")
        if req.flag & RPC_ONEWAY:
            return
        now_received, self.received_at = self.received_at, received
        try:
            self._write(self._encode_response(req, resp))
        finally:
            self.received_at = now_received

    def send_response(self, cmd: RemotingCommand) -> None:
        """Write a (late) response, e.g. after long polling; a no-op when the connection is closed.

        ``cmd`` should come from ``request.response_to(...)`` so it carries the request's opaque.
        """
        if self.closed:
            return
        cmd.flag |= RPC_TYPE_RESPONSE
        if self._endpoint.late_hooks:
            for hook in self._endpoint.late_hooks:
                hook.do_after_response(self, None, cmd)
        self._write(encode(cmd))

    def send_response_frame(self, frame: bytes) -> bool:
        """Write a (late) response already encoded (``codec.response_frame``): the usual answer,
        without a command object. False, with nothing written, when a late hook must see it as a
        command (``send_response`` it then); a closed connection drops it, as ``send_response`` does."""
        if self._endpoint.late_hooks:
            return False
        self._write([frame])
        return True

    # -- sending requests -------------------------------------------------------------

    def _write(self, chunks: list) -> None:
        if self.closed:
            return
        self._wbuf.extend(chunks)
        if not self._flush_scheduled and not self._reading:  # a read writes its buffer when it ends
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def flush(self) -> None:
        """Write what :meth:`send_response` / requests buffered now, not on the next loop iteration."""
        if not self._reading:
            self._flush()

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._wbuf and not self.closed:
            self.last_io = self._loop.time()
            out = self._wbuf
            self._wbuf = []
            self._emit(out)

    def _register(self, cmd: RemotingCommand, timeout: float, fut: asyncio.Future | None, cb: Any) -> list:
        if self.closed:
            raise RemotingSendRequestError(f"connection to {self.remote_addr} is closed") from self._close_cause
        opaque = cmd.opaque
        if opaque in self._pending:
            raise LocalProtocolError(f"a request with opaque {opaque} is already pending on {self.remote_addr}")
        chunks = encode(cmd)
        deadline = self._loop.time() + timeout
        self._pending[opaque] = [deadline, fut, cb, cmd.code]
        if deadline < self._sweep_at:
            if self._sweep_handle is not None:
                self._sweep_handle.cancel()
            self._sweep_at = deadline
            self._sweep_handle = self._loop.call_at(deadline, self._sweep)
        return chunks

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send a request over this connection and wait for its response.

        Raises RemotingTimeoutError, RemotingSendRequestError (connection lost, cause
        chained) or LocalProtocolError (command cannot be encoded).
        """
        if cmd.flag & RPC_ONEWAY:
            raise LocalProtocolError("invoke() of a oneway request; use invoke_oneway()")
        fut = self._loop.create_future() if self._loop is not None else None
        chunks = self._register(cmd, timeout, fut, None)
        self._write(chunks)
        opaque = cmd.opaque
        try:
            if self._write_paused:
                await self._drain()
            return await fut
        finally:
            entry = self._pending.get(opaque)
            if entry is not None and entry[1] is fut:
                del self._pending[opaque]

    def invoke_callback(self, cmd: RemotingCommand, timeout: float, callback: ResponseCallback) -> None:
        """Send a request; ``callback(response, None)`` or ``callback(None, exc)`` runs later on the loop."""
        try:
            chunks = self._register(cmd, timeout, None, callback)
        except Exception as e:
            asyncio.get_running_loop().call_soon(_run_callback, callback, None, e)
            return
        self._write(chunks)

    def invoke_oneway(self, cmd: RemotingCommand) -> None:
        """Send a request that gets no response (the oneway flag is set here)."""
        if self.closed:
            raise RemotingSendRequestError(f"connection to {self.remote_addr} is closed") from self._close_cause
        cmd.flag |= RPC_ONEWAY
        self._write(encode(cmd))

    async def drain(self) -> None:
        """Wait until the transport's write buffer is below its high-water mark."""
        if self._write_paused and not self.closed:
            await self._drain()

    async def _drain(self) -> None:
        fut = self._loop.create_future()
        self._drain_waiters.append(fut)
        await fut

    def _wake_drain_waiters(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    def _on_response(self, cmd: RemotingCommand) -> None:
        entry = self._pending.pop(cmd.opaque, None)
        if entry is None:
            log.debug("%s: response with unknown opaque %s from %s dropped", self._endpoint.name, cmd.opaque, self.remote_addr)
            return
        self._settle(entry, cmd, None)

    def _sweep(self) -> None:
        """Fail requests past their deadline; re-arm for the earliest remaining one."""
        self._sweep_handle = None
        self._sweep_at = math.inf
        now = self._loop.time()
        expired = []
        earliest = math.inf
        for opaque, entry in self._pending.items():
            d = entry[0]
            if d <= now:
                expired.append(opaque)
            elif d < earliest:
                earliest = d
        for opaque in expired:
            entry = self._pending.pop(opaque)
            err = RemotingTimeoutError(
                f"wait response on {self.remote_addr} timed out (code {entry[3]}, opaque {opaque})"
            )
            self._settle(entry, None, err)
        if earliest is not math.inf and not self.closed:
            self._sweep_at = earliest
            self._sweep_handle = self._loop.call_at(earliest, self._sweep)

    @staticmethod
    def _settle(entry: list, cmd: RemotingCommand | None, err: BaseException | None) -> None:
        """Complete a pending request with its response or its error: its future, else its callback."""
        fut = entry[1]
        if fut is None:
            _run_callback(entry[2], cmd, err)
        elif not fut.done():
            if err is None:
                fut.set_result(cmd)
            else:
                fut.set_exception(err)

    def _fail_pending(self, cause: BaseException) -> None:
        if self._sweep_handle is not None:
            self._sweep_handle.cancel()
            self._sweep_handle = None
        self._sweep_at = math.inf
        pending, self._pending = self._pending, {}
        for opaque, entry in pending.items():
            err = RemotingSendRequestError(
                f"connection to {self.remote_addr} lost while request (code {entry[3]}, opaque {opaque}) was pending"
            )
            err.__cause__ = cause
            self._settle(entry, None, err)

    # -- lifecycle -------------------------------------------------------------------

    @property
    def pending_count(self) -> int:
        """Requests sent on this connection and still waiting for a response."""
        return len(self._pending)

    def close(self) -> None:
        """Flush what is buffered and close; pending requests fail with RemotingSendRequestError."""
        if self.closed:
            return
        if self._wbuf and self._transport is not None:
            self._emit(self._wbuf)
        self._wbuf = []
        self.closed = True
        cause = self._close_cause or ConnectionAbortedError(f"connection to {self.remote_addr} closed locally")
        self._fail_pending(cause)
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Close at once, dropping unsent data."""
        self.closed = True
        if self._transport is not None:
            self._transport.abort()

    async def wait_closed(self) -> None:
        """Wait until the transport reports the connection lost."""
        if self._lost is not None:
            await asyncio.shield(self._lost)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<Connection {self.local_addr} -> {self.remote_addr} {state} pending={len(self._pending)}>"


def _closed_emit(chunks: list) -> None:
    """Writes before connection_made (there are none: every write checks ``closed``)."""


def _run_logged(fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception:
        log.exception("remoting: deferred work failed")


def _run_callback(cb: ResponseCallback, resp: RemotingCommand | None, exc: BaseException | None) -> None:
    try:
        cb(resp, exc)
    except Exception:
        log.exception("remoting: response callback failed")

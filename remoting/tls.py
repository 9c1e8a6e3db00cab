"""TLS for remoting: RocketMQ's TlsSystemConfig keys, ssl contexts, and the permissive acceptor.

Server modes (``tls.server.mode``): ``disabled`` (plaintext only), ``permissive`` (TLS and
plaintext clients share the port: the first byte of each connection decides, 0x16 being a TLS
handshake record, as RocketMQ's HandshakeHandler does) and ``enforcing`` (TLS only; a plaintext
client's first frame fails the handshake and the connection is closed).

Settings are the Java system-property keys, read from the component's properties file (and
from ``tls.config.file`` when it is set; the file's values win, as in RocketMQ). The client side
verifies the server only with ``tls.client.authServer=true`` and ``tls.test.mode.enable=false``
(the Java defaults trust any server certificate). Host names are not checked (nor are they by Netty).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields

from common.config import ConfigError, java_parse_bool, load_properties_file

__all__ = ["TlsSystemConfig", "TlsMode", "PermissiveAcceptor", "TLS_HANDSHAKE_BYTE", "TLS_KEY_PREFIX"]

log = logging.getLogger("remoting")

TLS_HANDSHAKE_BYTE = 0x16
TLS_KEY_PREFIX = "tls."


class TlsMode:
    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"
    ALL = (DISABLED, PERMISSIVE, ENFORCING)


_CLIENT_AUTH = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL, "require": ssl.CERT_REQUIRED}


@dataclass
class TlsSystemConfig:
    """One component's TLS settings; field ``metadata`` holds the RocketMQ key."""

    server_mode: str = TlsMode.DISABLED
    server_need_client_auth: str = "none"
    server_key_path: str | None = None
    server_key_password: str | None = None
    server_cert_path: str | None = None
    server_trust_cert_path: str | None = None
    client_enable: bool | None = None  # tls.enable: None = follow the server mode (enforcing => on)
    client_key_path: str | None = None
    client_key_password: str | None = None
    client_cert_path: str | None = None
    client_trust_cert_path: str | None = None
    client_auth_server: bool = False
    test_mode_enable: bool = True
    config_file: str | None = None

    KEYS = {
        "tls.server.mode": "server_mode",
        "tls.server.need.client.auth": "server_need_client_auth",
        "tls.server.keyPath": "server_key_path",
        "tls.server.keyPassword": "server_key_password",
        "tls.server.certPath": "server_cert_path",
        "tls.server.trustCertPath": "server_trust_cert_path",
        "tls.enable": "client_enable",
        "tls.client.keyPath": "client_key_path",
        "tls.client.keyPassword": "client_key_password",
        "tls.client.certPath": "client_cert_path",
        "tls.client.trustCertPath": "client_trust_cert_path",
        "tls.client.authServer": "client_auth_server",
        "tls.test.mode.enable": "test_mode_enable",
        "tls.config.file": "config_file",
    }

    @classmethod
    def from_properties(cls, props: Mapping[str, str], base_dir: str | None = None) -> TlsSystemConfig:
        """The ``tls.*`` keys of ``props`` (then of ``tls.config.file``); ConfigError for a bad value."""
        cfg = cls()
        cfg._apply(props)
        if cfg.config_file:
            path = cfg.config_file
            if base_dir and not os.path.isabs(path):
                path = os.path.join(base_dir, path)
            try:
                cfg._apply(load_properties_file(path))
            except (OSError, ConfigError) as e:
                raise ConfigError(f"tls.config.file: {e}") from None
        cfg.validate()
        return cfg

    def _apply(self, props: Mapping[str, str]) -> None:
        types = {f.name: f.type for f in fields(self)}
        for key, attr in self.KEYS.items():
            if key not in props:
                continue
            raw = str(props[key]).strip()
            if "bool" in str(types[attr]):
                setattr(self, attr, java_parse_bool(raw))
            else:
                setattr(self, attr, raw or None)

    def validate(self) -> None:
        mode = (self.server_mode or TlsMode.DISABLED).lower()
        if mode not in TlsMode.ALL:
            raise ConfigError(f"bad value for config key tls.server.mode: {self.server_mode!r} "
                              f"(want disabled, permissive or enforcing)")
        self.server_mode = mode
        if self.server_need_client_auth.lower() not in _CLIENT_AUTH:
            raise ConfigError(f"bad value for config key tls.server.need.client.auth: {self.server_need_client_auth!r}")
        if mode != TlsMode.DISABLED and not (self.server_cert_path and self.server_key_path):
            raise ConfigError(f"tls.server.mode={mode} needs tls.server.certPath and tls.server.keyPath")

    @staticmethod
    def unknown_tls_keys(props: Mapping[str, str]) -> list[str]:
        return sorted(k for k in props if k.startswith(TLS_KEY_PREFIX) and k not in TlsSystemConfig.KEYS)

    @property
    def server_enabled(self) -> bool:
        return self.server_mode != TlsMode.DISABLED

    @property
    def client_enabled(self) -> bool:
        if self.client_enable is not None:
            return self.client_enable
        return self.server_mode == TlsMode.ENFORCING

    # -- contexts ---------------------------------------------------------------------------------

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.server_cert_path, self.server_key_path, self.server_key_password)
        ctx.verify_mode = _CLIENT_AUTH[self.server_need_client_auth.lower()]
        if ctx.verify_mode != ssl.CERT_NONE:
            if self.server_trust_cert_path:
                ctx.load_verify_locations(self.server_trust_cert_path)
            else:
                ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        return ctx

    def client_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        if self.client_auth_server and not self.test_mode_enable:
            ctx.verify_mode = ssl.CERT_REQUIRED
            if self.client_trust_cert_path:
                ctx.load_verify_locations(self.client_trust_cert_path)
            else:
                ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        else:
            ctx.verify_mode = ssl.CERT_NONE
        if self.client_cert_path and self.client_key_path:
            ctx.load_cert_chain(self.client_cert_path, self.client_key_path, self.client_key_password)
        return ctx


class PermissiveAcceptor:
    """Accepts on a listening socket and, per connection, peeks at the first byte: a TLS handshake
    record gets TLS, anything else plaintext, on the same port. Nothing is consumed by the peek.

    Quacks like ``asyncio.Server`` for what RemotingServer uses (sockets, close, wait_closed,
    is_serving).
    """

    def __init__(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        ssl_context: ssl.SSLContext,
        sniff_timeout: float | None = 120.0,
    ):
        self.sockets = [sock]
        self._factory = protocol_factory
        self._ctx = ssl_context
        self._sniff_timeout = sniff_timeout
        self._task: asyncio.Task | None = None
        self._pending: set[asyncio.Task] = set()
        self._closed = asyncio.get_running_loop().create_future()

    def start(self) -> None:
        self.sockets[0].setblocking(False)
        self._task = asyncio.get_running_loop().create_task(self._accept_loop())

    def is_serving(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        lsock = self.sockets[0]
        while True:
            try:
                conn, _addr = await loop.sock_accept(lsock)
            except asyncio.CancelledError:
                raise
            except OSError as e:  # EMFILE and the like: keep serving
                log.warning("permissive acceptor: accept failed: %s", e)
                await asyncio.sleep(0.1)
                continue
            t = loop.create_task(self._sniff(conn))
            self._pending.add(t)
            t.add_done_callback(self._pending.discard)

    async def _sniff(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        conn.setblocking(False)
        ready = loop.create_future()
        fd = conn.fileno()
        loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
        try:
            try:
                async with asyncio.timeout(self._sniff_timeout):
                    await ready
                first = conn.recv(1, socket.MSG_PEEK)
            except (TimeoutError, OSError):
                first = b""
            finally:
                loop.remove_reader(fd)
        except BaseException:  # cancelled by close(): the socket is still ours
            conn.close()
            raise
        if not first:
            conn.close()
            return
        tls = first[0] == TLS_HANDSHAKE_BYTE
        try:
            await loop.connect_accepted_socket(self._factory, conn, ssl=self._ctx if tls else None)
        except (OSError, ssl.SSLError) as e:
            log.info("permissive acceptor: %s handshake failed: %s", "TLS" if tls else "plain", e)
            conn.close()

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        for t in list(self._pending):
            t.cancel()
        self.sockets[0].close()
        if not self._closed.done():
            self._closed.set_result(None)

    async def wait_closed(self) -> None:
        await self._closed


def listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A bound, listening, non-blocking TCP socket (SO_REUSEADDR as create_server sets it)."""
    family = socket.AF_INET6 if host and ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host or "0.0.0.0", port))
        s.listen(backlog)
        s.setblocking(False)
    except BaseException:
        s.close()
        raise
    return s


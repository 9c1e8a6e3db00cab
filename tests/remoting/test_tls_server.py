"""RemotingServer with TLS over real loopback sockets: the permissive acceptor's first-byte sniffing
(TLS and plaintext on one port), a broken handshake closing only its connection, and a clean stop with
connections that never sent a byte."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

from remoting.client import RemotingClient
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.server import RemotingServer
from remoting.tls import TlsSystemConfig

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl CLI is needed to make a test certificate")


@pytest.fixture(scope="module")
def tls_conf(tmp_path_factory):
    d = tmp_path_factory.mktemp("tlscert")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "k.pem"),
                    "-out", str(d / "c.pem"), "-days", "2", "-subj", "/CN=localhost"],
                   check=True, capture_output=True, timeout=60)
    return lambda mode: TlsSystemConfig.from_properties(
        {"tls.server.mode": mode, "tls.server.certPath": str(d / "c.pem"), "tls.server.keyPath": str(d / "k.pem")})


def echo(req, conn):
    return req.response_to(0, conn.remote_addr)


async def serve(tls):
    s = RemotingServer("127.0.0.1", 0, tls=tls)
    s.register_processor(7, echo)
    await s.start()
    return s, f"127.0.0.1:{s.port}"


async def test_permissive_sniffs_each_connection(tls_conf):
    s, addr = await serve(tls_conf("permissive"))
    try:
        async with RemotingClient() as plain, RemotingClient(ssl_context=TlsSystemConfig().client_context()) as tls:
            for _ in range(3):
                assert (await plain.invoke(addr, RemotingCommand.request(7), 3)).code == 0
                assert (await tls.invoke(addr, RemotingCommand.request(7), 3)).code == 0
        # a handshake record followed by garbage: that connection fails, the server keeps serving
        r, w = await asyncio.open_connection("127.0.0.1", s.port)
        w.write(b"\x16\x03\x01\x00\x05garbage-not-a-client-hello")
        await w.drain()
        assert await asyncio.wait_for(r.read(), 5) is not None  # closed by the server
        w.close()
        async with RemotingClient() as plain:
            assert (await plain.invoke(addr, RemotingCommand.request(7), 3)).code == 0
        # connections that never send a byte do not hold up stop()
        idle = [await asyncio.open_connection("127.0.0.1", s.port) for _ in range(5)]
    finally:
        async with asyncio.timeout(10):
            await s.stop(grace=1)
    for _r, w in idle:
        w.close()


async def test_enforcing_refuses_plaintext(tls_conf):
    s, addr = await serve(tls_conf("enforcing"))
    try:
        async with RemotingClient(ssl_context=TlsSystemConfig().client_context()) as tls:
            assert (await tls.invoke(addr, RemotingCommand.request(7), 3)).code == 0
        async with RemotingClient() as plain:
            with pytest.raises(RemotingError):
                await plain.invoke(addr, RemotingCommand.request(7), 2)
    finally:
        await s.stop(grace=1)


def test_bad_settings_are_config_errors(tmp_path):
    from common.config import ConfigError

    with pytest.raises(ConfigError, match="needs tls.server.certPath"):
        TlsSystemConfig.from_properties({"tls.server.mode": "enforcing"})
    with pytest.raises(ConfigError, match="tls.server.need.client.auth"):
        TlsSystemConfig.from_properties({"tls.server.need.client.auth": "maybe"})
    with pytest.raises(ConfigError, match="tls.config.file"):
        TlsSystemConfig.from_properties({"tls.config.file": str(tmp_path / "missing.properties")})
    assert TlsSystemConfig.from_properties({}).server_mode == "disabled"

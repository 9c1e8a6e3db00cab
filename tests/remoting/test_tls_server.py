"""RemotingServer with TLS over real loopback sockets: the permissive acceptor's first-byte sniffing
(TLS and plaintext on one port), a broken handshake closing only its connection, and a clean stop with
connections that never sent a byte."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess

import pytest

from remoting.client import RemotingClient
from remoting.codec import FrameDecoder, encode_bytes
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


class RawTlsClient:
    """A TLS client over a plain stream that sees the records as they arrive (their content types)."""

    def __init__(self, reader, writer):
        self.r, self.w = reader, writer
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = TlsSystemConfig().client_context().wrap_bio(self.inc, self.out)
        self.raw = bytearray()
        self.records: list[int] = []
        self.decoder = FrameDecoder()

    async def _pump(self) -> None:
        data = await asyncio.wait_for(self.r.read(65536), 5)
        assert data, "the server closed the connection"
        self.raw += data
        while len(self.raw) >= 5 and len(self.raw) >= 5 + int.from_bytes(self.raw[3:5], "big"):
            n = 5 + int.from_bytes(self.raw[3:5], "big")
            self.records.append(self.raw[0])
            self.inc.write(bytes(self.raw[:n]))
            del self.raw[:n]

    async def _send_out(self) -> None:
        self.w.write(self.out.read())
        await self.w.drain()

    async def handshake(self) -> None:
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                await self._send_out()
                await self._pump()
        await self._send_out()

    async def round_trip(self, frames: list[bytes]) -> list:
        self.tls.write(b"".join(frames))  # one record: the server gets them in one read
        await self._send_out()
        got: list = []
        while len(got) < len(frames):
            await self._pump()
            while True:
                try:
                    got += self.decoder.feed(self.tls.read(65536))
                except ssl.SSLWantReadError:
                    break
        return got


async def test_the_responses_of_one_read_leave_as_one_tls_record(tls_conf):
    # each chunk written to a TLS transport becomes a record of its own: a read's responses are joined
    s, _addr = await serve(tls_conf("enforcing"))
    try:
        client = RawTlsClient(*await asyncio.open_connection("127.0.0.1", s.port))
        await client.handshake()
        assert len(await client.round_trip([encode_bytes(RemotingCommand.request(7))])) == 1  # tickets, if any, come first
        client.records.clear()
        responses = await client.round_trip([encode_bytes(RemotingCommand.request(7)) for _ in range(8)])
        assert len({r.opaque for r in responses}) == 8 and all(r.code == 0 for r in responses)
        assert client.records == [23]  # one application-data record for the eight responses
        client.w.close()
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

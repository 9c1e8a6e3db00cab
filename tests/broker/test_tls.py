"""TLS on real NameServer and broker processes with a self-signed certificate made here (openssl CLI):
enforcing refuses plaintext, permissive serves TLS and plaintext on one port, disabled is plaintext
only; the broker registers with a TLS NameServer; the Python client and mqadmin work over TLS."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys

import pytest

from client import ClientConfig, Message, Producer
from client.admin import MQAdmin
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.tls import TlsSystemConfig
from tests.client.cluster import BrokerProc, NamesrvProc
from tests.client.conftest import wait_for
from tests.support import ROOT

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl CLI is needed to make a test certificate")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "key.pem"),
         "-out", str(d / "cert.pem"), "-days", "2", "-subj", "/CN=localhost"],
        check=True, capture_output=True, timeout=60,
    )
    return d


def tls_props(certs, mode: str) -> dict[str, str]:
    return {"tls.server.mode": mode, "tls.server.certPath": str(certs / "cert.pem"),
            "tls.server.keyPath": str(certs / "key.pem")}


def tls_client() -> RemotingClient:
    return RemotingClient(ssl_context=TlsSystemConfig().client_context(), connect_timeout=3.0)


async def runtime_info(client: RemotingClient, addr: str, timeout: float = 3.0) -> int:
    r = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), timeout)
    return r.code


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory, certs):
    """An enforcing NameServer and an enforcing broker that registers with it over TLS."""
    root = tmp_path_factory.mktemp("tlsc")
    ns = NamesrvProc(root, "ns")
    with open(ns.conf, "a") as f:
        f.write("".join(f"{k}={v}\n" for k, v in tls_props(certs, "enforcing").items()))
    ns.start()
    b = BrokerProc(root, "tlsb", ns.addr, **tls_props(certs, "enforcing")).start()
    yield ns, b
    b.stop()
    ns.stop()


async def test_enforcing_refuses_plaintext_and_serves_tls(tls_cluster):
    _ns, b = tls_cluster
    async with tls_client() as c:
        assert await runtime_info(c, b.addr) == ResponseCode.SUCCESS
    async with RemotingClient() as plain:
        with pytest.raises(RemotingError):
            await runtime_info(plain, b.addr, 2.0)


async def test_python_client_and_mqadmin_over_tls(tls_cluster):
    ns, b = tls_cluster
    async with MQAdmin(ns.addr, use_tls=True) as admin:
        async def registered():
            try:
                return bool((await admin.cluster_info()).brokerAddrTable)
            except RemotingError:
                return False

        await wait_for(registered, 15, "broker registered with the TLS NameServer")
    async with Producer("tlsPG", config=ClientConfig(namesrv_addr=ns.addr, use_tls=True)) as p:
        r = await p.send(Message("TlsTopic", b"over tls"))
    assert r.send_status.name == "SEND_OK"
    out = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "tools.mqadmin", "clusterList", "-n", ns.addr, "--useTLS"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, env=dict(os.environ),
    )
    assert out.returncode == 0 and "tlsb" in out.stdout, out.stderr


async def test_permissive_serves_tls_and_plaintext_on_one_port(tmp_path, certs):
    # the settings come from tls.config.file here, as RocketMQ allows
    tls_file = tmp_path / "tls.properties"
    tls_file.write_text("".join(f"{k}={v}\n" for k, v in tls_props(certs, "permissive").items()))
    b = BrokerProc(tmp_path, "permb", "", **{"tls.config.file": str(tls_file)}).start()
    try:
        async with tls_client() as c, RemotingClient() as plain:
            for _ in range(3):
                assert await runtime_info(c, b.addr) == ResponseCode.SUCCESS
                assert await runtime_info(plain, b.addr) == ResponseCode.SUCCESS
    finally:
        b.stop()


async def test_disabled_is_plaintext_only(tmp_path):
    b = BrokerProc(tmp_path, "plainb", "").start()
    try:
        async with RemotingClient() as plain:
            assert await runtime_info(plain, b.addr) == ResponseCode.SUCCESS
        async with tls_client() as c:
            with pytest.raises(RemotingError):
                await runtime_info(c, b.addr, 2.0)
    finally:
        b.stop()


def test_bad_tls_mode_is_refused_at_start(tmp_path, certs):
    b = BrokerProc(tmp_path, "badtls", "", **{**tls_props(certs, "enforcing"), "tls.server.mode": "sometimes"})
    with pytest.raises(AssertionError, match="tls.server.mode"):
        b.start()

"""DLedger peer traffic over TLS: three real DLedgerServers whose peer ports are TLS-only (enforcing)
elect a leader and replicate; a plaintext client is refused on a peer port."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from dledger.protocol import RequestCode
from dledger.server import DLedgerServer
from remoting.client import RemotingClient
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.tls import TlsSystemConfig
from tests.dledger.test_server import configs, leader_of, stop_all
from tests.support import async_wait_until

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl CLI is needed to make a test certificate"),
]


class _Member:
    def __init__(self, cfg, seed, tls):
        self.cfg = cfg
        self.server = DLedgerServer(cfg, rng=random.Random(seed), tls=tls)


async def test_peers_replicate_over_tls_only(tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "k.pem"),
                    "-out", str(tmp_path / "c.pem"), "-days", "2", "-subj", "/CN=localhost"],
                   check=True, capture_output=True, timeout=60)
    tls = TlsSystemConfig.from_properties({"tls.server.mode": "enforcing", "tls.server.certPath": str(tmp_path / "c.pem"),
                                           "tls.server.keyPath": str(tmp_path / "k.pem")})
    assert tls.client_enabled  # enforcing: the peer clients speak TLS too
    members = [_Member(c, k, tls) for k, c in enumerate(configs(tmp_path / "store"))]
    for m in members:
        await m.server.start()
    try:
        ld = await async_wait_until(lambda: leader_of(members), timeout=15, what="one leader over TLS")
        idx = [(await ld.server.append(b"tls-%d" % i))[0] for i in range(5)]
        await async_wait_until(lambda: all(m.server.committed_index >= idx[-1] for m in members), timeout=10)
        for m in members:
            assert [m.server.get_entry(i).body for i in idx] == [b"tls-%d" % i for i in range(5)]
        peer = ld.server.peers[ld.cfg.selfId]
        async with RemotingClient() as plain:
            with pytest.raises(RemotingError):
                await plain.invoke(peer, RemotingCommand.request(int(RequestCode.METADATA), {"group": "g"}), 2.0)
    finally:
        await stop_all(members)

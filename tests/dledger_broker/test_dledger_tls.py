"""DLedger brokers with TLS enforced, over real processes: a NameServer and three bin/mqbroker nodes whose
client and DLedger peer ports are TLS-only (``tls.server.mode=enforcing`` turns the peer clients to TLS
too) elect a leader, register, and replicate what the leader stores; plaintext is refused on both ports."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.tls import TlsSystemConfig
from tests.dledger_broker.cluster import DLedgerCluster, max_offset, msg_offset, send, view
from tests.support import async_wait_until

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="the openssl CLI is needed to make a test certificate"),
]


class TlsCluster(DLedgerCluster):
    """The cluster of cluster.py with the same TLS settings on the NameServer (brokers register over TLS)."""

    def __init__(self, procs, root, tls: dict[str, str]):
        super().__init__(procs, root, **tls)
        self.tls = tls

    def start(self) -> TlsCluster:
        ns_conf = self.root / "namesrv.conf"
        ns_conf.write_text(f"listenPort={self.ns_port}\nkvConfigPath={self.root / 'ns' / 'kv.json'}\n"
                           f"configStorePath={self.root / 'ns' / 'namesrv.properties'}\n"
                           + "".join(f"{k}={v}\n" for k, v in self.tls.items()))
        self.procs.start("namesrv", ["mqnamesrv", "-c", str(ns_conf)]).wait_port(self.ns_port)
        for i in range(self.n):
            self.start_node(i, wait=False)
        for i in range(self.n):
            self.nodes[i].wait_port(self.ports[i], timeout=30)
        return self


async def test_dledger_brokers_replicate_over_tls(procs, tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "k.pem"),
                    "-out", str(tmp_path / "c.pem"), "-days", "2", "-subj", "/CN=localhost"],
                   check=True, capture_output=True, timeout=60)
    tls = {"tls.server.mode": "enforcing", "tls.server.certPath": str(tmp_path / "c.pem"),
           "tls.server.keyPath": str(tmp_path / "k.pem")}
    cl = TlsCluster(procs, tmp_path, tls).start()
    async with RemotingClient(ssl_context=TlsSystemConfig().client_context()) as c:
        master = await cl.wait_master(c, timeout=30)  # elected over TLS peer links, registered over TLS
        offsets = []
        for k in range(5):
            r = await send(c, master, b"tls-%d" % k)
            assert r.code == ResponseCode.SUCCESS, r.remark
            offsets.append(msg_offset(r.ext_fields["msgId"]))
        for i in range(3):  # the followers got the entries over their TLS peer links and dispatched them
            await async_wait_until(lambda i=i: _max_is(c, cl.addr(i), 5), 15, 0.05, f"n{i} dispatched 5")
            bodies = [(await view(c, cl.addr(i), off)).body for off in offsets]
            assert bodies == [b"tls-%d" % k for k in range(5)]
    async with RemotingClient() as plain:  # plaintext is refused on the client and the peer ports
        for addr in (master, f"127.0.0.1:{cl.dledger_ports[cl.index_of(master)]}"):
            with pytest.raises(RemotingError):
                await plain.invoke(addr, RemotingCommand.request(0), 2.0)


async def _max_is(c: RemotingClient, addr: str, want: int) -> bool:
    try:
        return await max_offset(c, addr) == want
    except (OSError, RemotingError):
        return False

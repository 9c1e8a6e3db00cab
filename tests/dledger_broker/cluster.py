"""A NameServer plus three bin/mqbroker processes in DLedger mode, on free loopback ports.

Clients are plain RemotingClient requests with the typed headers of
remoting/header (no client library): sends, pulls, cluster info.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from common.message import MessageExt, decode_messages
from remoting import fastjson
from remoting.body.cluster import ClusterInfo
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.header.broker import (
    GetMaxOffsetRequestHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeaderV2,
    ViewMessageRequestHeader,
)
from tests.support import Proc, async_wait_until, free_port

CLUSTER = "RaftCluster"
BROKER_NAME = "RaftNode00"
TOPIC = "DLedgerT"


class DLedgerCluster:
    """Config files in ``root``; ``procs`` is the conftest fixture (everything stops at teardown)."""

    def __init__(self, procs, root: Path, n: int = 3, **extra):
        self.procs = procs
        self.root = Path(root)
        self.n = n
        self.ns_port = free_port()
        self.ns_addr = f"127.0.0.1:{self.ns_port}"
        self.ports = [free_port() for _ in range(n)]
        self.dledger_ports = [free_port() for _ in range(n)]
        peers = ";".join(f"n{i}-127.0.0.1:{p}" for i, p in enumerate(self.dledger_ports))
        self.confs: list[Path] = []
        for i in range(n):
            props = {
                "brokerClusterName": CLUSTER,
                "brokerName": BROKER_NAME,
                "listenPort": self.ports[i],
                "brokerIP1": "127.0.0.1",
                "namesrvAddr": self.ns_addr,
                "storePathRootDir": self.root / f"node{i}",
                "mappedFileSizeCommitLog": 4 * 1024 * 1024,
                "mappedFileSizeConsumeQueue": 6000,
                "enableDLegerCommitLog": "true",
                "dLegerGroup": BROKER_NAME,
                "dLegerPeers": peers,
                "dLegerSelfId": f"n{i}",
                **extra,
            }
            conf = self.root / f"broker-n{i}.conf"
            conf.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            self.confs.append(conf)
        self.nodes: list[Proc | None] = [None] * n
        self.starts = [0] * n

    # -- processes ---------------------------------------------------------------------

    def start(self) -> DLedgerCluster:
        ns_conf = self.root / "namesrv.conf"
        ns_conf.write_text(f"listenPort={self.ns_port}\nkvConfigPath={self.root / 'ns' / 'kv.json'}\n"
                           f"configStorePath={self.root / 'ns' / 'namesrv.properties'}\n")
        self.procs.start("namesrv", ["mqnamesrv", "-c", str(ns_conf)]).wait_port(self.ns_port)
        for i in range(self.n):
            self.start_node(i, wait=False)
        for i in range(self.n):
            self.nodes[i].wait_port(self.ports[i], timeout=30)
        return self

    def start_node(self, i: int, wait: bool = True) -> Proc:
        self.starts[i] += 1
        p = self.procs.start(f"n{i}-{self.starts[i]}", ["mqbroker", "-c", str(self.confs[i])])
        self.nodes[i] = p
        if wait:
            p.wait_port(self.ports[i], timeout=30)
        return p

    def kill(self, i: int) -> None:
        """kill -9."""
        self.nodes[i].kill()

    def pause(self, i: int) -> None:
        self.nodes[i].signal(signal.SIGSTOP)

    def resume(self, i: int) -> None:
        self.nodes[i].signal(signal.SIGCONT)

    def addr(self, i: int) -> str:
        return f"127.0.0.1:{self.ports[i]}"

    def index_of(self, addr: str) -> int:
        return self.ports.index(int(addr.rpartition(":")[2]))

    def data_dir(self, i: int) -> Path:
        return self.root / f"node{i}" / f"dledger-n{i}" / "data"

    # -- NameServer view ---------------------------------------------------------------

    async def broker_addrs(self, c: RemotingClient) -> dict[int, str]:
        """brokerId -> address of the group as the NameServer has it now."""
        r = await c.invoke(self.ns_addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 3)
        if r.code != ResponseCode.SUCCESS or not r.body:
            return {}
        bd = ClusterInfo.from_json(r.body).brokerAddrTable.get(BROKER_NAME)
        return dict(bd.brokerAddrs) if bd is not None else {}

    async def wait_master(self, c: RemotingClient, timeout: float = 20.0, not_addr: str | None = None) -> str:
        """Address the NameServer names as brokerId 0 (other than ``not_addr``)."""

        async def master():
            try:
                m = (await self.broker_addrs(c)).get(0)
            except (OSError, RemotingError):
                return None
            return m if m and m != not_addr else None

        return await async_wait_until(master, timeout, 0.02, "a master in the NameServer")


# -- requests ----------------------------------------------------------------------------


async def send(c: RemotingClient, addr: str, body: bytes, *, topic: str = TOPIC, queue_id: int = 0,
               timeout: float = 5.0, props: dict[str, str] | None = None, sys_flag: int = 0) -> RemotingCommand:
    p = "\x02".join(f"{k}\x01{v}" for k, v in (props or {}).items())
    h = SendMessageRequestHeaderV2(a="dledger-pg", b=topic, c="TBW102", d=4, e=queue_id, f=sys_flag,
                                   g=int(time.time() * 1000), h=0, i=p)
    return await c.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h, body), timeout)


async def max_offset(c: RemotingClient, addr: str, topic: str = TOPIC, queue_id: int = 0) -> int:
    h = GetMaxOffsetRequestHeader(topic=topic, queueId=queue_id)
    r = await c.invoke(addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, h), 3)
    return int(r.ext_fields["offset"]) if r.code == ResponseCode.SUCCESS else -1


async def pull_all(c: RemotingClient, addr: str, topic: str = TOPIC, queue_id: int = 0) -> list[MessageExt]:
    """Every message of the queue from offset 0, in queue order."""
    out: list[MessageExt] = []
    offset = 0
    for _ in range(100_000):
        h = PullMessageRequestHeader(consumerGroup="dledger-cg", topic=topic, queueId=queue_id, queueOffset=offset,
                                     maxMsgNums=32, sysFlag=0x4, commitOffset=0, suspendTimeoutMillis=0,
                                     subVersion=0, subscription="*", expressionType="TAG")
        r = await c.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, h), 5)
        if r.code != ResponseCode.SUCCESS:
            return out
        msgs = decode_messages(r.body or b"")
        if not msgs:
            return out
        out.extend(msgs)
        offset = int(r.ext_fields["nextBeginOffset"])
    return out


async def view(c: RemotingClient, addr: str, offset: int) -> MessageExt | None:
    """VIEW_MESSAGE_BY_ID: the record at a commit-log offset (no topic config needed)."""
    r = await c.invoke(addr, RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID,
                                                     ViewMessageRequestHeader(offset=offset)), 3)
    if r.code != ResponseCode.SUCCESS:
        return None
    msgs = decode_messages(r.body or b"")
    return msgs[0] if msgs else None


async def runtime_info(c: RemotingClient, addr: str) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO table."""
    r = await c.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 3)
    if r.code != ResponseCode.SUCCESS or not r.body:
        return {}
    return dict(fastjson.loads(r.body).get("table") or {})


def msg_offset(msg_id: str) -> int:
    """Commit-log offset inside an offset msgId (last 16 hex digits)."""
    return int(msg_id[-16:], 16)

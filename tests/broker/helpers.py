"""Helpers for broker tests: a real bin/mqbroker process and small request builders.

Tests talk to the broker with remoting.client.RemotingClient over loopback,
building requests by hand (no client library).
"""

from __future__ import annotations

import time
from pathlib import Path

from common.message import decode_messages
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from tests.support import Proc, free_port

PROPS_SEP = "\x02"
NV_SEP = "\x01"


def props_string(props: dict[str, str]) -> str:
    return PROPS_SEP.join(f"{k}{NV_SEP}{v}" for k, v in props.items())


class BrokerProc:
    """bin/mqbroker started on free loopback ports with a config file in ``root``."""

    def __init__(self, root: Path, name: str = "broker", start_proc=None, **extra):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.port = free_port()
        self.store = self.root / f"{name}-store"
        self.props = {
            "brokerClusterName": "TestCluster",
            "brokerName": name,
            "listenPort": str(self.port),
            "brokerIP1": "127.0.0.1",
            "storePathRootDir": str(self.store),
            "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
            "mappedFileSizeConsumeQueue": str(6000),
            "maxMessageSize": str(64 * 1024),
            **{k: str(v) for k, v in extra.items()},
        }
        self.conf = self.root / f"{name}.conf"
        self.write_conf()
        self._start_proc = start_proc
        self.proc: Proc | None = None
        self.starts = 0

    def write_conf(self) -> None:
        self.conf.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, *extra_args: str) -> BrokerProc:
        self.starts += 1
        args = ["mqbroker", "-c", str(self.conf), *extra_args]
        label = f"{self.name}-{self.starts}"
        self.proc = self._start_proc(label, args) if self._start_proc else Proc(label, args, self.root)
        self.proc.wait_port(self.port)
        return self

    def stop(self) -> int:
        return self.proc.stop()


def send_header_v2(topic: str, body_props: dict[str, str] | None = None, *, queue_id: int = 0,
                   group: str = "pg", sys_flag: int = 0, default_topic: str = "TBW102", queue_nums: int = 4,
                   **extra) -> dict:
    h = {
        "a": group, "b": topic, "c": default_topic, "d": queue_nums, "e": queue_id, "f": sys_flag,
        "g": int(time.time() * 1000), "h": 0, "i": props_string(body_props or {}),
    }
    h.update(extra)
    return h


async def send(client: RemotingClient, addr: str, topic: str, body: bytes, props: dict[str, str] | None = None,
               *, code: int = RequestCode.SEND_MESSAGE_V2, timeout: float = 5.0, **kw) -> RemotingCommand:
    return await client.invoke(addr, RemotingCommand.request(code, send_header_v2(topic, props, **kw), body), timeout)


def pull_header(group: str, topic: str, queue_id: int, offset: int, *, max_nums: int = 32, sys_flag: int = 0x4,
                suspend_ms: int = 0, subscription: str = "*", commit_offset: int = 0, sub_version: int = 0,
                expression_type: str = "TAG") -> dict:
    return {
        "consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset, "maxMsgNums": max_nums,
        "sysFlag": sys_flag, "commitOffset": commit_offset, "suspendTimeoutMillis": suspend_ms,
        "subVersion": sub_version, "subscription": subscription, "expressionType": expression_type,
    }


async def pull(client: RemotingClient, addr: str, group: str, topic: str, queue_id: int, offset: int,
               timeout: float = 5.0, **kw) -> RemotingCommand:
    cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, pull_header(group, topic, queue_id, offset, **kw))
    return await client.invoke(addr, cmd, timeout)


def messages(resp: RemotingCommand):
    return decode_messages(resp.body or b"")


async def call(client: RemotingClient, addr: str, code: int, header=None, body=None, timeout: float = 5.0):
    return await client.invoke(addr, RemotingCommand.request(code, header, body), timeout)


async def wait_max_offset(client: RemotingClient, addr: str, topic: str, queue_id: int, n: int, timeout: float = 5.0):
    """Wait until the broker has dispatched ``n`` messages to the queue (the reput runs asynchronously)."""
    from remoting.codes import ResponseCode
    from tests.support import async_wait_until

    async def reached():
        r = await call(client, addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id})
        return r.code == ResponseCode.SUCCESS and int(r.ext_fields["offset"]) >= n

    await async_wait_until(reached, timeout, what=f"{topic}:{queue_id} max offset {n}")

"""Load for the fault suite: sequential producers that record into a :class:`History`, and a drain
that pulls every queue from offset 0. Plain remoting requests (tests/broker/helpers), no client library:
a send is made once and never retried, so its answer alone says whether it is acknowledged."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

from common.message import decode_messages
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.errors import RemotingError
from tests.broker.helpers import call, pull, send
from tests.soak.checker import History, Read

__all__ = ["env_int", "env_float", "percentile", "create_topic", "Producers", "drain", "rss_kib"]


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]


def rss_kib(pid: int) -> int:
    """Resident set of a process (VmRSS, KiB); 0 when it is gone."""
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


async def create_topic(c: RemotingClient, addr: str, topic: str, queues: int = 4) -> None:
    h = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues, "perm": 6,
         "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}
    r = await call(c, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, h)
    assert r.code == ResponseCode.SUCCESS, r.remark


class Producers:
    """``n`` producers, each sending one message at a time to its own queue (producer i -> queue i % queues).

    ``addr()`` names where to send (it may change on failover). Failed sends (an error code, a refused
    or dropped connection, a timeout) are paced by ``retry_pause`` and are simply not acknowledged."""

    def __init__(self, history: History, c: RemotingClient, addr: Callable[[], str], topic: str, *, n: int = 4,
                 queues: int = 4, size: int = 128, timeout: float = 3.0, retry_pause: float = 0.05,
                 name: str = "p", send_fn=None, pace: float = 0.0) -> None:
        self.history, self.c, self.addr, self.topic = history, c, addr, topic
        self.n, self.queues, self.size, self.timeout, self.retry_pause = n, queues, size, timeout, retry_pause
        self.name = name
        self.pace = pace  # pause after each acknowledged send: bounds the history a long run keeps
        self.seq = [0] * n
        self.codes: dict[int, int] = {}
        self.errors = 0
        self._send = send_fn or self._send_v2
        self._tasks: list[asyncio.Task] = []
        self._stop = False

    async def _send_v2(self, addr: str, queue_id: int, body: bytes, timeout: float) -> int:
        r = await send(self.c, addr, self.topic, body, queue_id=queue_id, timeout=timeout)
        return r.code

    async def _one(self, i: int) -> None:
        producer = f"{self.name}{i}"
        for _ in range(10_000_000):
            if self._stop:
                return
            key, body = self.history.attempt(producer, self.seq[i], self.size)
            self.seq[i] += 1
            try:
                code = await self._send(self.addr(), i % self.queues, body, self.timeout)
            except (TimeoutError, OSError, RemotingError):
                code = -1
                self.errors += 1
            self.codes[code] = self.codes.get(code, 0) + 1
            self.history.ack(key, code, time.monotonic())
            if code != ResponseCode.SUCCESS:
                await asyncio.sleep(self.retry_pause)  # pacing of a failed send, not synchronisation
            elif self.pace:
                await asyncio.sleep(self.pace)  # the load's rate, not synchronisation

    def start(self) -> Producers:
        self._stop = False
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._one(i)) for i in range(self.n)]
        return self

    async def stop(self) -> None:
        self._stop = True
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []


async def drain(c: RemotingClient, addr: str, topic: str, queues: int = 4, *, start: dict[int, int] | None = None,
                timeout: float = 5.0) -> list[Read]:
    """Every message of every queue of ``topic`` from offset 0 (or ``start[q]``) up to the end.

    A batch that does not decode is reported as one read of ``b"<undecodable>"`` (unexpected)."""
    out: list[Read] = []
    for q in range(queues):
        offset = (start or {}).get(q, 0)
        for _ in range(1_000_000):
            r = await pull(c, addr, "soak-drain", topic, q, offset, timeout=timeout, max_nums=32)
            if r.code != ResponseCode.SUCCESS:
                break
            try:
                msgs = decode_messages(r.body or b"")
            except Exception:
                out.append(Read((topic, q), offset, b"<undecodable>"))
                break
            if not msgs:
                break
            for m in msgs:
                out.append(Read((topic, q), m.queue_offset, bytes(m.body)))
            nxt = int(r.ext_fields["nextBeginOffset"])
            if nxt <= offset:
                break
            offset = nxt
    return out

"""Semantics benchmark against a real bin/mqbroker on loopback.

1. Delay-level delivery lateness: N delayed messages (levels "1s 2s 3s", spread
   over the levels); lateness = delivered record's store time - (parked record's
   store time + level delay); p50/p99/max, and how many were early (must be 0).
2. Transactional send throughput (half + END_TRANSACTION commit, each awaited)
   versus plain sends, with C concurrent senders over one connection.

Usage: .venv/bin/python bench/bench_semantics.py [--delayed 10000] [--tx 5000] [--concurrency 16]

Prints its figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from common.message import MessageSysFlag, decode_messages, decode_offset_msg_id  # noqa: E402
from remoting.client import RemotingClient  # noqa: E402
from remoting.codes import RequestCode, ResponseCode  # noqa: E402
from remoting.command import RemotingCommand  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEVELS_MS = [1000, 2000, 3000]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def props_string(props: dict[str, str]) -> str:
    return "\x02".join(f"{k}\x01{v}" for k, v in props.items())


def send_cmd(topic: str, props: dict[str, str], body: bytes, sys_flag: int = 0, group: str = "benchPG",
             queue_id: int = 0) -> RemotingCommand:
    h = {"a": group, "b": topic, "c": "TBW102", "d": 4, "e": queue_id, "f": sys_flag,
         "g": int(time.time() * 1000), "h": 0, "i": props_string(props)}
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h, body)


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(len(s) * p))]


async def pull_all(c: RemotingClient, addr: str, topic: str, qid: int) -> list:
    out, off = [], 0
    while True:
        h = {"consumerGroup": "benchG", "topic": topic, "queueId": qid, "queueOffset": off, "maxMsgNums": 32,
             "sysFlag": 0x4, "commitOffset": 0, "suspendTimeoutMillis": 0, "subVersion": 0, "subscription": "*",
             "expressionType": "TAG"}
        r = await c.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, h), 10)
        if r.code != ResponseCode.SUCCESS:
            return out
        out.extend(decode_messages(r.body or b""))
        off = int(r.ext_fields["nextBeginOffset"])


async def bounded(n: int, concurrency: int, make) -> float:
    """Run ``make(i)`` coroutines for i < n with at most ``concurrency`` in flight; seconds taken."""
    sem = asyncio.Semaphore(concurrency)

    async def one(i):
        async with sem:
            await make(i)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - t0


async def bench_delay(c: RemotingClient, addr: str, n: int, concurrency: int) -> None:
    async def send_one(i):
        level = 1 + i % len(LEVELS_MS)
        r = await c.invoke(addr, send_cmd("BenchDelay", {"DELAY": str(level), "UNIQ_KEY": f"D{i}"}, b"x" * 64,
                                          queue_id=i % 4), 10)
        assert r.code == ResponseCode.SUCCESS, r.remark

    took = await bounded(n, concurrency, send_one)
    print(f"delayed sends: {n} in {took:.2f}s ({n / took:,.0f}/s)")
    parked = {}
    for q in range(len(LEVELS_MS)):
        for m in await pull_all(c, addr, "SCHEDULE_TOPIC_XXXX", q):
            parked[m.properties["UNIQ_KEY"]] = (m.store_timestamp, LEVELS_MS[q])
    deadline = time.monotonic() + max(LEVELS_MS) / 1000 + 60
    got: list = []
    while time.monotonic() < deadline:
        got = [m for q in range(4) for m in await pull_all(c, addr, "BenchDelay", q)]
        if len(got) >= n:
            break
        await asyncio.sleep(0.5)
    late = []
    early = 0
    for m in got:
        key = m.properties["UNIQ_KEY"]
        if key not in parked:
            continue
        st, d = parked[key]
        v = m.store_timestamp - (st + d)
        early += v < 0
        late.append(v)
    if not late:
        print("delay: nothing delivered")
        return
    print(f"delay delivery: {len(got)}/{n} delivered; lateness ms p50={pct(late, 0.5):.0f} "
          f"p99={pct(late, 0.99):.0f} max={max(late):.0f}; early={early}")


async def bench_tx(c: RemotingClient, addr: str, n: int, concurrency: int) -> None:
    async def plain(i):
        r = await c.invoke(addr, send_cmd("BenchPlain", {"UNIQ_KEY": f"P{i}"}, b"y" * 128), 10)
        assert r.code == ResponseCode.SUCCESS, r.remark

    async def tx(i):
        key = f"T{i}"
        r = await c.invoke(addr, send_cmd("BenchTx", {"TRAN_MSG": "true", "PGROUP": "benchPG", "UNIQ_KEY": key},
                                          b"y" * 128, sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE), 10)
        assert r.code == ResponseCode.SUCCESS, r.remark
        _, phys = decode_offset_msg_id(r.ext_fields["msgId"])
        h = {"producerGroup": "benchPG", "tranStateTableOffset": r.ext_fields["queueOffset"], "commitLogOffset": phys,
             "commitOrRollback": 8, "msgId": key, "fromTransactionCheck": "false"}
        e = await c.invoke(addr, RemotingCommand.request(RequestCode.END_TRANSACTION, h), 10)
        assert e.code == ResponseCode.SUCCESS, e.remark

    await bounded(min(n, 500), concurrency, plain)  # warm-up
    t_plain = await bounded(n, concurrency, plain)
    t_tx = await bounded(n, concurrency, tx)
    print(f"plain send: {n / t_plain:,.0f} msg/s; transactional (half + commit): {n / t_tx:,.0f} msg/s "
          f"({t_tx / t_plain:.2f}x the time), concurrency {concurrency}")


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delayed", type=int, default=10000)
    ap.add_argument("--tx", type=int, default=5000)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        conf = os.path.join(tmp, "broker.conf")
        with open(conf, "w") as f:
            f.write(f"brokerName=bench\nlistenPort={port}\nbrokerIP1=127.0.0.1\nstorePathRootDir={tmp}/store\n"
                    f"messageDelayLevel=1s 2s 3s\nflushDelayOffsetInterval=1000\n")
        log = open(os.path.join(tmp, "broker.log"), "wb")
        env = dict(os.environ, HOME=tmp)
        proc = subprocess.Popen([os.path.join(ROOT, "bin", "mqbroker"), "-c", conf], stdout=log,
                                stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        try:
            addr = f"127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise SystemExit("broker did not start") from None
                    await asyncio.sleep(0.05)
            async with RemotingClient() as c:
                await bench_delay(c, addr, args.delayed, args.concurrency)
                await bench_tx(c, addr, args.tx, args.concurrency)
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


if __name__ == "__main__":
    asyncio.run(main())

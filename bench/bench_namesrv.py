"""NameServer benchmark: route lookups and broker registrations against bin/mqnamesrv over loopback.

Starts a NameServer process on a free loopback port (temporary KV/config
paths), registers ``--brokers`` masters with ``--topics`` topics each, then
prints GET_ROUTEINFO_BY_TOPIC requests/s and p50/p99 latency with 1 and
``--inflight`` requests in flight, and the latency of a full REGISTER_BROKER
(plain JSON and compressed). Also times route JSON encoding in-process.
Bounded in count and time; asserts nothing. Usage::

    .venv/bin/python bench/bench_namesrv.py [--brokers 4] [--topics 1000] [--inflight 64] [--seconds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from remoting.body.register_broker import RegisterBrokerBody  # noqa: E402
from remoting.body.route import BrokerData, QueueData, TopicRouteData  # noqa: E402
from remoting.body.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper  # noqa: E402
from remoting.client import RemotingClient  # noqa: E402
from remoting.codes import RequestCode, ResponseCode  # noqa: E402
from remoting.command import RemotingCommand  # noqa: E402
from remoting.header.namesrv import GetRouteInfoRequestHeader, RegisterBrokerRequestHeader  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def register_cmd(i: int, topics: int, compressed: bool, counter: int) -> RemotingCommand:
    table = {f"Topic{t}": TopicConfig(f"Topic{t}", 8, 8) for t in range(topics)}
    body = RegisterBrokerBody(
        TopicConfigSerializeWrapper(table, DataVersion(timestamp=1, counter=counter))
    ).encode(compressed)
    h = RegisterBrokerRequestHeader(
        f"broker-{i}", f"127.0.0.{i + 1}:10911", "Bench", f"127.0.0.{i + 1}:10912", 0, compressed
    )
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, h, body)


async def lookups(
    addr: str, topics: int, inflight: int, seconds: float, max_requests: int
) -> tuple[int, float, list]:
    lat: list[float] = []
    done = 0
    deadline = time.monotonic() + seconds
    async with RemotingClient() as client:

        async def worker(w: int) -> None:
            nonlocal done
            n = w
            while time.monotonic() < deadline and done < max_requests:
                cmd = RemotingCommand.request(
                    RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(f"Topic{n % topics}")
                )
                t0 = time.perf_counter()
                resp = await client.invoke(addr, cmd, timeout=10)
                lat.append(time.perf_counter() - t0)
                if resp.code != ResponseCode.SUCCESS:
                    raise RuntimeError(resp.remark)
                done += 1
                n += inflight

        t0 = time.monotonic()
        await asyncio.gather(*(worker(w) for w in range(inflight)))
        return done, time.monotonic() - t0, lat


async def run(args: argparse.Namespace, addr: str) -> None:
    # The registering connection stays open: closing it would unregister the brokers.
    async with RemotingClient() as client:
        for compressed in (False, True):
            for changed in (True, False):
                times = []
                for rep in range(5):
                    for i in range(args.brokers):
                        # A changed DataVersion makes the namesrv rebuild the broker's queue data.
                        counter = (rep if changed else 100) + (1000 if compressed else 0)
                        cmd = register_cmd(i, args.topics, compressed, counter)
                        t0 = time.perf_counter()
                        resp = await client.invoke(addr, cmd, timeout=30)
                        times.append(time.perf_counter() - t0)
                        assert resp.code == ResponseCode.SUCCESS, resp.remark
                print(
                    f"REGISTER_BROKER {args.topics} topics ({'compressed' if compressed else 'json'}, "
                    f"{len(cmd.body)} B body, DataVersion {'changed' if changed else 'unchanged'}): "
                    f"median {statistics.median(times) * 1e3:.2f} ms"
                )
        await lookup_rounds(args, addr)


async def lookup_rounds(args: argparse.Namespace, addr: str) -> None:
    for inflight in (1, args.inflight):
        n, elapsed, lat = await lookups(addr, args.topics, inflight, args.seconds, args.max_requests)
        lat.sort()
        print(
            f"GET_ROUTEINFO_BY_TOPIC inflight={inflight}: {n / elapsed:,.0f} req/s, "
            f"p50 {lat[len(lat) // 2] * 1e6:.0f} us, p99 {lat[int(len(lat) * 0.99)] * 1e6:.0f} us ({n} requests)"
        )


def encode_bench(brokers: int) -> None:
    route = TopicRouteData(
        [QueueData(f"broker-{i}", 8, 8, 6) for i in range(brokers)],
        [
            BrokerData("Bench", f"broker-{i}", {0: f"127.0.0.{i}:10911", 1: f"127.0.1.{i}:10911"})
            for i in range(brokers)
        ],
    )
    for standard in (False, True):
        n = 20000
        t0 = time.perf_counter()
        for _ in range(n):
            route.to_json(standard=standard)
        dt = time.perf_counter() - t0
        print(
            f"route to_json ({'standard' if standard else 'fastjson'} style, {brokers} brokers): {dt / n * 1e6:.1f} us"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", type=int, default=4)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--inflight", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--max-requests", type=int, default=500_000)
    args = ap.parse_args()
    encode_bench(args.brokers)
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "namesrv.conf")
        with open(conf, "w") as f:
            f.write(
                f"listenPort={port}\nbindAddress=127.0.0.1\nkvConfigPath={tmp}/kv.json\nconfigStorePath={tmp}/ns.properties\n"
            )
        proc = subprocess.Popen(
            [os.path.join(ROOT, "bin", "mqnamesrv"), "-c", conf],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        print("namesrv did not start", file=sys.stderr)
                        return 1
                    time.sleep(0.05)
            asyncio.run(run(args, f"127.0.0.1:{port}"))
        finally:
            proc.terminate()
            proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())

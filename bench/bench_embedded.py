"""EmbeddedCluster benchmark: time from `async with` to the first successful send, and memory per broker.

    python bench/bench_embedded.py [--rounds N]

Each round starts a fresh cluster in this process (1 broker; a DLedger group of 3), sends one
message with the Python client and stops the cluster. Memory: the process's RSS growth while
1 and then 4 more brokers run (one cluster of 5 brokers against a cluster of 1), per broker.
Prints figures; asserts nothing. Loopback only; every loop is bounded.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from client import Message, Producer  # noqa: E402
from embedded import EmbeddedCluster  # noqa: E402


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def first_send(**shape) -> tuple[float, float]:
    t0 = time.perf_counter()
    async with EmbeddedCluster(**shape) as cluster:
        started = time.perf_counter() - t0
        async with Producer("bench_emb_pg", cluster.namesrv_addr) as p:
            r = await p.send(Message("BenchEmbedded", b"x" * 1024))
            assert r.send_status.name == "SEND_OK"
        return started, time.perf_counter() - t0


async def memory() -> tuple[float, float, float]:
    base = rss_mib()
    async with EmbeddedCluster(brokers=1) as one:
        async with Producer("bench_emb_pg", one.namesrv_addr) as p:
            await p.send(Message("BenchEmbedded", b"x" * 1024))
        with_one = rss_mib()
        total = with_one
    async with EmbeddedCluster(brokers=5) as five:
        async with Producer("bench_emb_pg", five.namesrv_addr) as p:
            for _ in range(20):
                await p.send(Message("BenchEmbedded", b"x" * 1024))
        with_five = rss_mib()
    return with_one - base, (with_five - with_one) / 4, total


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    await first_send()  # warm-up: imports, bytecode
    for label, shape in (("1 broker", {}), ("DLedger group of 3", {"dledger_group": 3})):
        starts, sends = [], []
        for _ in range(max(1, min(args.rounds, 50))):
            s, f = await first_send(**shape)
            starts.append(s * 1000)
            sends.append(f * 1000)
        print(f"{label:>20}: start {statistics.median(starts):7.1f} ms median (min {min(starts):.1f}, "
              f"max {max(starts):.1f}); to first SEND_OK {statistics.median(sends):7.1f} ms median "
              f"(min {min(sends):.1f}, max {max(sends):.1f}), {len(sends)} rounds")
    one, per, total = await memory()
    print(f"{'memory':>20}: RSS +{one:.1f} MiB for the first broker (with its NameServer and a client), "
          f"+{per:.1f} MiB per further broker; the whole process with 1 broker: {total:.1f} MiB")


if __name__ == "__main__":
    import uvloop

    uvloop.run(main())

"""Proposals committed per second through the pure DLedger core: 3 members, a lossless
in-memory network, 1 KiB entries; MemoryStorage vs the mmap file store.

    .venv/bin/python bench/bench_dledger_core.py [--entries N] [--size BYTES] [--server]

Prints figures; asserts nothing. "+fsync" flushes every Ready that wrote entries
(as the real driver does); the other file run keeps the mmap writes but skips
fdatasync. ``--server`` also runs three DLedgerServers on loopback in this
process (remoting, file store) with 64 appends in flight: fsync before every
acknowledgement, DLedger's async flush, and async flush with enableBatchPush.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dledger.config import DLedgerConfig  # noqa: E402
from dledger.core import DLedgerCore  # noqa: E402
from dledger.mmap_file_store import DLedgerMmapFileStore  # noqa: E402
from dledger.protocol import DLedgerError, Role  # noqa: E402
from dledger.storage import MemoryStorage  # noqa: E402

IDS = ["n0", "n1", "n2"]


def config(nid: str) -> DLedgerConfig:
    return DLedgerConfig(
        group="bench",
        selfId=nid,
        peers=";".join(f"{i}-127.0.0.1:{30000 + k}" for k, i in enumerate(IDS)),
        heartBeatTimeIntervalMs=100,
        minVoteIntervalMs=100,
        maxVoteIntervalMs=300,
        maxPendingRequestsNum=100000,
        maxWaitAckTimeMs=600000,
    )


def run(kind: str, entries: int, size: int, fsync: bool) -> dict:
    tmp = tempfile.TemporaryDirectory(prefix="bench-dledger-")
    stores = {}
    for nid in IDS:
        if kind == "memory":
            stores[nid] = MemoryStorage()
        else:
            st = DLedgerMmapFileStore(
                os.path.join(tmp.name, nid), data_file_size=64 * 1024 * 1024, index_file_size=32 * 1024 * 1024
            )
            if not fsync:
                st.flush = lambda: None  # keep the mmap writes, skip fdatasync
            stores[nid] = st
    cores = {nid: DLedgerCore(config(nid), stores[nid], rng=random.Random(k)) for k, nid in enumerate(IDS)}
    queue: collections.deque = collections.deque()
    committed = [0]
    flushes = [0]

    def drain(nid):
        c = cores[nid]
        while c.has_ready():
            rd = c.ready()
            if rd.must_sync:
                stores[nid].flush()
                flushes[0] += 1
            queue.extend(rd.messages)
            if nid == leader_id[0]:
                committed[0] += sum(1 for r in rd.append_results if r.code == 200)
            c.advance(rd)

    def pump():
        while queue:
            m = queue.popleft()
            cores[m.to].step(m)
            drain(m.to)

    leader_id = [None]
    for _ in range(10000):
        for nid in IDS:
            cores[nid].tick()
            drain(nid)
        pump()
        leaders = [n for n in IDS if cores[n].role is Role.LEADER]
        if leaders and all(cores[n].leader_id == leaders[0] for n in IDS):
            leader_id[0] = leaders[0]
            break
    ld = cores[leader_id[0]]
    body = os.urandom(size)
    window = 256
    t0 = time.perf_counter()
    proposed = 0
    while committed[0] < entries:
        while proposed < entries and proposed - committed[0] < window:
            try:
                ld.propose(body)
            except DLedgerError:
                break
            proposed += 1
        drain(leader_id[0])
        pump()
        if not queue and proposed - committed[0] >= window:
            for nid in IDS:  # let the pushers' timers move if the window stalls
                cores[nid].tick()
                drain(nid)
            pump()
    dt = time.perf_counter() - t0
    for st in stores.values():
        st.close()
    tmp.cleanup()
    return {
        "kind": kind,
        "fsync": fsync,
        "entries": entries,
        "secs": dt,
        "rate": entries / dt,
        "flushes": flushes[0],
    }


async def run_servers(
    entries: int, size: int, inflight: int = 64, async_flush: bool = False, batch_push: bool = False
) -> float:
    import asyncio
    import socket

    from dledger.server import DLedgerServer

    def port() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    tmp = tempfile.TemporaryDirectory(prefix="bench-dledger-srv-")
    peers = ";".join(f"{i}-127.0.0.1:{port()}" for i in IDS)
    servers = []
    for k, nid in enumerate(IDS):
        c = config(nid)
        c.peers, c.storeBaseDir = peers, tmp.name
        c.mappedFileSizeForEntryData, c.mappedFileSizeForEntryIndex = 256 * 1024 * 1024, 32 * 1024 * 1024
        c.enableBatchPush = batch_push
        servers.append(DLedgerServer(c, rng=random.Random(k), async_flush=async_flush))
    for s in servers:
        await s.start()
    while True:
        leaders = [s for s in servers if s.is_leader]
        if leaders and all(s.leader_id == leaders[0].config.selfId for s in servers):
            break
        await asyncio.sleep(0.05)
    ld = leaders[0]
    body = os.urandom(size)
    sem = asyncio.Semaphore(inflight)

    async def one():
        async with sem:
            await ld.append(body)

    t0 = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(entries)))
    dt = time.perf_counter() - t0
    for s in servers:
        await s.stop()
    tmp.cleanup()
    return entries / dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--entries", type=int, default=20000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--server", action="store_true")
    args = ap.parse_args()
    for kind, fsync in (("memory", False), ("file", False), ("file", True)):
        n = args.entries if not fsync else max(1000, args.entries // 10)
        r = run(kind, n, args.size, fsync)
        label = f"{kind}{' +fsync' if fsync else ''}"
        print(
            f"{label:14s} {r['entries']:7d} x {args.size} B committed in {r['secs']:.2f}s: "
            f"{r['rate']:9.0f} entries/s, {r['rate'] * args.size / 1e6:6.1f} MB/s ({r['flushes']} flushes)"
        )
    if args.server:
        import asyncio

        n = max(1000, args.entries // 4)
        for async_flush, batch in ((False, False), (True, False), (True, True)):
            rate = asyncio.run(run_servers(n, args.size, async_flush=async_flush, batch_push=batch))
            label = "fsync per Ready" if not async_flush else "async flush"
            label += ", batch push" if batch else ""
            print(f"{'3 servers':14s} {n:7d} x {args.size} B committed: {rate:9.0f} entries/s "
                  f"(loopback, {label})")


if __name__ == "__main__":
    main()

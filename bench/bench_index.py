"""Index benchmark: IndexService puts/s (build_index of records with a UNIQ_KEY and 2 KEYS) and queries/s.

Usage: .venv/bin/python bench/bench_index.py [--records N] [--queries N] [--slots N] [--entries N]

Prints which common.speedups twin is in use (ROCKETMQ_PY_PURE=1 forces the pure one).
Runs on a temporary directory with RocketMQ's default geometry unless told
otherwise (the 420 MB file is sparse). Prints its figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from common import speedups  # noqa: E402
from store.config import MessageStoreConfig  # noqa: E402
from store.index_service import IndexService  # noqa: E402


@dataclass
class Req:
    topic: str
    commit_log_offset: int
    store_timestamp: int
    keys: str
    uniq_key: str
    sys_flag: int = 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=50_000)
    ap.add_argument("--slots", type=int, default=5_000_000)
    ap.add_argument("--entries", type=int, default=20_000_000)
    a = ap.parse_args()
    cfg = MessageStoreConfig(maxHashSlotNum=a.slots, maxIndexNum=a.entries)
    rnd = random.Random(7)
    t0 = 1_800_000_000_000
    reqs = [
        Req("BenchTopic", 1000 * i, t0 + i, f"order-{i} user-{rnd.randrange(a.records // 10 + 1)}", f"{i:032X}")
        for i in range(a.records)
    ]
    with tempfile.TemporaryDirectory() as d:
        svc = IndexService(cfg, os.path.join(d, "index"))
        svc.load(True)
        start = time.perf_counter()
        for r in reqs:
            svc.build_index(r)
        put_s = time.perf_counter() - start
        keys = a.records * 3
        start = time.perf_counter()
        svc.flush()
        flush_s = time.perf_counter() - start
        qkeys = [f"order-{rnd.randrange(a.records)}" for _ in range(a.queries)]
        start = time.perf_counter()
        hits = 0
        for k in qkeys:
            hits += len(svc.query_offset("BenchTopic", k, 64, 0, 2**63 - 1).phy_offsets)
        q_s = time.perf_counter() - start
        hot = [f"user-{rnd.randrange(a.records // 10 + 1)}" for _ in range(a.queries // 10)]
        start = time.perf_counter()
        for k in hot:
            svc.query_offset("BenchTopic", k, 64, 0, 2**63 - 1)
        hq_s = time.perf_counter() - start
        files = svc.file_count
        svc.shutdown()
    print(f"common.speedups: {'compiled' if speedups.IS_COMPILED else 'pure-Python'} twin "
          "(ROCKETMQ_PY_PURE=1 forces the pure one)")
    print(f"geometry: {a.slots} slots x {a.entries} entries, {files} file(s)")
    print(f"build_index: {a.records} records ({keys} keys) in {put_s:.2f} s = "
          f"{a.records / put_s:,.0f} records/s, {keys / put_s:,.0f} keys/s")
    print(f"flush: {flush_s * 1000:.1f} ms")
    print(f"query (unique key): {a.queries} in {q_s:.2f} s = {a.queries / q_s:,.0f} queries/s ({hits} hits)")
    print(f"query (~10 hits/key): {len(hot)} in {hq_s:.2f} s = {len(hot) / hq_s:,.0f} queries/s")


if __name__ == "__main__":
    main()

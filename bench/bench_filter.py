"""Filter benchmark: SQL92 evaluations/s, parse+compile time, tag and record-level filtering rates.

Usage: .venv/bin/python bench/bench_filter.py [--evals N] [--records N]

Prints its figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from broker.filter import (  # noqa: E402
    ConsumerFilterManager,
    build_message_filter,
    clear_expression_cache,
    compile_expression,
)
from broker.filter.record_properties import decode_record_properties  # noqa: E402
from common.filter import build_subscription_data  # noqa: E402
from common.message import MESSAGE_MAGIC_CODE, properties_to_string  # noqa: E402
from common.util import java_string_hash  # noqa: E402

EXPRESSIONS = [
    "a > 5",
    "color = 'red'",
    "a BETWEEN 1 AND 100 AND color IN ('red', 'blue', 'green')",
    "(a > 5 AND b < 3.5) OR (TAGS = 'TagA' AND region IS NOT NULL)",
    "price >= 100.0 AND price < 200.0 AND vip = TRUE AND NOT (city IN ('x', 'y', 'z'))",
    "missing > 1 OR flag IS NULL",
]

PROPS = [
    {"a": "42", "b": "1.5", "color": "red", "TAGS": "TagA", "region": "eu", "price": "150.5", "vip": "true",
     "city": "Paris", "KEYS": "k1 k2", "UNIQ_KEY": "FD00000000000000", "CLUSTER": "DefaultCluster"},
    {"a": "3", "b": "9", "color": "black", "TAGS": "TagB", "price": "20", "vip": "false", "city": "x",
     "KEYS": "k3", "UNIQ_KEY": "FD00000000000001", "CLUSTER": "DefaultCluster"},
]


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f}/s"


def make_record(props: dict[str, str], body: bytes = b"x" * 256, topic: str = "BenchTopic") -> bytes:
    """A v1 CommitLog record with IPv4 hosts (only the parts the filter reads need to be right)."""
    p = properties_to_string(props).encode("utf-8")
    t = topic.encode("utf-8")
    total = 91 + len(body) + len(t) + len(p)
    head = struct.pack(">iiiiiqqiq", total, MESSAGE_MAGIC_CODE, 0, 0, 0, 0, 0, 0, 0)
    hosts = b"\x7f\x00\x00\x01" + struct.pack(">i", 1) + struct.pack(">q", 0) + b"\x7f\x00\x00\x01" + struct.pack(">i", 2)
    tail = struct.pack(">iqi", 0, 0, len(body))
    rec = head + hosts + tail + body + bytes([len(t)]) + t + struct.pack(">h", len(p)) + p
    assert len(rec) == total
    return rec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--evals", type=int, default=200_000)
    ap.add_argument("--records", type=int, default=100_000)
    args = ap.parse_args()

    t0 = time.perf_counter()
    compile_expression("SQL92", "warm = 1")  # builds the lark LALR parser once per process
    print(f"== lark parser construction (once per process): {(time.perf_counter() - t0) * 1e3:.1f} ms ==")
    print("== parse + compile (cold, cache cleared each time) ==")
    for expr in EXPRESSIONS:
        n = 200
        t0 = time.perf_counter()
        for _ in range(n):
            clear_expression_cache()
            compile_expression("SQL92", expr)
        dt = (time.perf_counter() - t0) / n
        print(f"  {dt * 1e6:8.1f} us  {expr}")
    t0 = time.perf_counter()
    n = 200_000
    for _ in range(n):
        compile_expression("SQL92", EXPRESSIONS[2])
    print(f"  cached lookup: {(time.perf_counter() - t0) / n * 1e9:.0f} ns")

    print("== SQL92 evaluate (properties dict given) ==")
    for expr in EXPRESSIONS:
        e = compile_expression("SQL92", expr)
        n = args.evals
        t0 = time.perf_counter()
        for i in range(n):
            e.evaluate(PROPS[i & 1])
        print(f"  {rate(n, time.perf_counter() - t0):>14}  {expr}")

    print("== tag filter: is_matched_by_consume_queue ==")
    f = build_message_filter(build_subscription_data("T", "TagA || TagB || TagC"))
    codes = [java_string_hash(t) for t in ("TagA", "TagX", "TagC", "TagZ")]
    n = args.evals * 5
    t0 = time.perf_counter()
    for i in range(n):
        f.is_matched_by_consume_queue(codes[i & 3])
    print(f"  {rate(n, time.perf_counter() - t0):>14}")

    print("== SQL92 on CommitLog records: decode properties + evaluate ==")
    manager = ConsumerFilterManager(None)
    expr = EXPRESSIONS[3]
    manager.register_topic("T", "g", expr, "SQL92", 1)
    mf = build_message_filter(
        build_subscription_data("T", expr, "SQL92"),
        manager.get("T", "g"),
        enable_property_filter=True,
        consumer_filter_manager=manager,
    )
    recs = [memoryview(make_record(p)) for p in PROPS]
    n = args.records
    t0 = time.perf_counter()
    for i in range(n):
        decode_record_properties(recs[i & 1])
    print(f"  decode only:        {rate(n, time.perf_counter() - t0):>14}")
    t0 = time.perf_counter()
    matched = 0
    for i in range(n):
        matched += mf.is_matched_by_commit_log(recs[i & 1], None)
    print(f"  decode + evaluate:  {rate(n, time.perf_counter() - t0):>14}  (matched {matched}/{n})")


if __name__ == "__main__":
    main()

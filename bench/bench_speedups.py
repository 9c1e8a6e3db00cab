"""Per-call cost of the common.speedups primitives, pure-Python twin vs compiled twin.

Usage: .venv/bin/python bench/bench_speedups.py [--repeat N]

Prints nanoseconds per call (best of 5 runs) for each function and twin (the pure twin's
record functions are common.record_codec's), plus the store's reader built on them
(CommitLog.check_message_and_return_size). Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import tempfile
import timeit
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from common import speedups  # noqa: E402
from common.message import MESSAGE_MAGIC_CODE  # noqa: E402

SLOTS, ENTRIES = 5_000_000, 20_000_000


def record(body: bytes, topic: bytes, props: bytes) -> bytes:
    """One v1 IPv4 CommitLog record."""
    head = struct.pack(">iiqqiq", 1, 0, 10, 4096, 0, 1_800_000_000_000) + b"\x7f\0\0\x01" + struct.pack(">i", 5000)
    head += struct.pack(">q", 1_800_000_000_001) + b"\x7f\0\0\x01" + struct.pack(">iiqi", 10911, 0, 0, len(body))
    tail = body + bytes([len(topic)]) + topic + struct.pack(">H", len(props)) + props
    total = 12 + len(head) + len(tail)
    return struct.pack(">iii", total, MESSAGE_MAGIC_CODE, zlib.crc32(body) & 0x7FFFFFFF) + head + tail


def batch(n: int, size: int) -> bytes:
    out = []
    for i in range(n):
        body = bytes(size)
        props = f"KEYS\x01order-{i}\x02UNIQ_KEY\x01{i:032X}\x02TAGS\x01TagA".encode()
        out.append(struct.pack(">iiiii", 20 + size + 2 + len(props), 0, 0, 0, size) + body
                   + struct.pack(">H", len(props)) + props)
    return b"".join(out)


def ns(stmt, number: int) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=5)) / number * 1e9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20_000)
    a = ap.parse_args()
    n = a.repeat
    twins = [("pure", speedups.pure)]
    if speedups.compiled is not None:
        twins.append(("compiled", speedups.compiled))
    else:
        print("compiled twin not built: run `python setup.py build_ext --inplace`")

    short = "BenchTopic#order-12345"
    uniq = "BenchTopic#7F00000100002A9F0000000000000ABC0000"
    nonbmp = "BenchTopic#ключ-\U0001F600-key"
    keys3 = [uniq, short, "BenchTopic#user-42"]
    rec = record(bytes(1024), b"BenchTopic",
                 b"KEYS\x01order-1 user-2\x02UNIQ_KEY\x017F00000100002A9F0000000000000ABC0000\x02"
                 b"TAGS\x01TagA\x02WAIT\x01true\x02CLUSTER\x01DefaultCluster")
    buf = bytes(100) + rec
    b32 = batch(32, 1024)
    rows: list[tuple[str, dict[str, float]]] = []

    def row(name, make):
        rows.append((name, {tn: ns(make(t), n) for tn, t in twins}))

    row("java_hash(22-char ASCII key)", lambda t: lambda: t.java_hash(short))
    row("java_hash(48-char UNIQ_KEY)", lambda t: lambda: t.java_hash(uniq))
    row("java_hash(non-BMP key)", lambda t: lambda: t.java_hash(nonbmp))
    with tempfile.TemporaryDirectory() as d:
        import mmap

        path = os.path.join(d, "index")
        size = 40 + SLOTS * 4 + ENTRIES * 20
        with open(path, "wb") as f:
            f.truncate(size)
        fh = open(path, "r+b")
        mm = mmap.mmap(fh.fileno(), size)
        counter = [1]

        def put_one(t):
            def go():
                c = counter[0]
                t.index_put(mm, SLOTS, c, 123456789 + c, 4096 * c, 1)
                counter[0] = c + 1 if c < ENTRIES - 10 else 1
            return go

        def put_three(t):
            def go():
                c = counter[0]
                counter[0] = c + 3 if c < ENTRIES - 10 else 1
                t.index_put_keys(mm, SLOTS, c, ENTRIES, keys3, 4096 * c, 1)
            return go

        row("index_put (1 entry, 420 MB mmap)", put_one)
        row("index_put_keys (3 keys: hash + put)", put_three)
        mm.close()
        fh.close()
    row("split_batch (32 x 1 KiB)", lambda t: lambda: t.split_batch(b32))
    row("parse_record (1 KiB record, 5 props)", lambda t: lambda: t.parse_record(buf, 100))
    out = bytearray(64 * 1024 * 2)
    items32 = speedups.pure.split_batch(b32)
    hosts = (b"\x7f\0\0\x01", 5000, 1_800_000_000_001, b"\x7f\0\0\x01", 10911, 0, 0)
    row("encode_records (32 x 1 KiB batch)", lambda t: lambda: t.encode_records(
        out, 0, b32, items32, b"CLUSTER\x01DefaultCluster", b"BenchTopic", 1, 0, 0, 0, 1_800_000_000_000, *hosts))
    one = bytes(1024) + b"KEYS\x01order-1\x02UNIQ_KEY\x01" + b"A" * 32 + b"\x02TAGS\x01TagA"
    item1 = [(0, 1024, 1024, len(one) - 1024, 0)]
    row("encode_records (single 1 KiB put)", lambda t: lambda: t.encode_records(
        out, 0, one, item1, b"", b"BenchTopic", 1, 0, 0, 0, 1_800_000_000_000, *hosts))
    props_one = one[1024:]
    row("write_record (single 1 KiB put)", lambda t: lambda: t.write_record(
        out, 0, bytes(1024), b"BenchTopic", props_one, 1, 0, 0, 0, 0, 1_800_000_000_000, *hosts[:5], 0, 0, -1))
    props_s = props_one.decode()
    row("dispatch_props (4 props)", lambda t: lambda: t.dispatch_props(props_s))
    row("batch_properties (32 entries)", lambda t: lambda: t.batch_properties(b32, items32, b"CLUSTER\x01c"))
    positions = [i * 1200 for i in range(32)]
    row("msg_ids (32)", lambda t: lambda: t.msg_ids("7F00000100002A9F", 1 << 30, positions))

    class Req:
        __slots__ = ("topic", "commit_log_offset", "msg_size", "tags_code", "store_timestamp", "consume_queue_offset",
                     "keys", "uniq_key", "sys_flag")

        def __init__(self, i):
            self.topic, self.commit_log_offset, self.msg_size, self.tags_code = "BenchTopic", 1200 * i, 1200, 7
            self.store_timestamp, self.consume_queue_offset = 1_800_000_000_000 + i, i
            self.keys, self.uniq_key, self.sys_flag = f"order-{i}", f"7F00000100002A9F{i:032X}", 0

    reqs32 = [Req(i) for i in range(32)]
    cq = bytearray(20 * 40)
    row("cq_put_units (32 units)", lambda t: lambda: t.cq_put_units(cq, 0, len(cq), 0, True, -1, reqs32, 0))
    small = bytearray(40 + 1024 * 4 + 100 * 20)
    row("index_build_many (32 records, 2 keys each)", lambda t: lambda: t.index_build_many(
        small, 1024, 100, reqs32, 0, (0, 0, 0, 0, 0, 1)))
    # the remoting hot path: a SEND_MESSAGE_V2 request header in, its response header out
    import orjson

    from remoting.codec import _LANG_BY_NAME, _LANG_NAMES
    from remoting.codes import LanguageCode

    v2 = {"a": "bench_pg", "b": "BenchTopic", "c": "TBW102", "d": "8", "e": "3", "f": "0", "g": "1764000000000",
          "h": "0", "i": "UNIQ_KEY\x017F00000100002A9F0000000000000ABC0000\x02TAGS\x01TagA"}
    req = orjson.dumps({"code": 310, "extFields": v2, "flag": 0, "language": "JAVA", "opaque": 123456,
                        "serializeTypeCurrentRPC": "JSON", "version": 401})
    row("json_header (SEND_MESSAGE_V2 request)", lambda t: lambda: t.json_header(req, _LANG_BY_NAME))
    resp_ext = {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true", "msgId": "7F00000100002A9F0000000000001234",
                "queueId": "3", "queueOffset": "1234"}
    row("json_head (send response)", lambda t: lambda: t.json_head(0, LanguageCode.JAVA, 401, 123456, 1, None,
                                                                   resp_ext, _LANG_NAMES, 0))
    row("send_header_v2 (9 fields)", lambda t: lambda: t.send_header_v2(v2))

    width = max(len(r[0]) for r in rows)
    print(f"{'ns per call':<{width}}  " + "  ".join(f"{tn:>9}" for tn, _ in twins) + "   speed-up")
    for name, vals in rows:
        cells = "  ".join(f"{vals[tn]:9.0f}" for tn, _ in twins)
        sp = f"   {vals['pure'] / vals['compiled']:6.1f}x" if "compiled" in vals else ""
        print(f"{name:<{width}}  {cells}{sp}")

    # the store's current Python paths, for reference
    try:
        from store.commit_log import CommitLog
        from store.config import MessageStoreConfig

        with tempfile.TemporaryDirectory() as d:
            cl = CommitLog(MessageStoreConfig(storePathRootDir=d, storePathCommitLog=os.path.join(d, "cl")))
            mv = memoryview(buf)
            print(f"CommitLog.check_message_and_return_size (same record): "
                  f"{ns(lambda: cl.check_message_and_return_size(mv, 100, 0), n):.0f} ns")
            mv.release()
    except Exception as e:  # the store may be mid-change; the speedups figures above stand alone
        print(f"(store reference paths not measured: {e!r})")


if __name__ == "__main__":
    main()

"""Cost of reserving each mapped file's blocks at creation (posix_fallocate) against sparse files.

    python bench/bench_disk_reserve.py [--dir DIR] [--reps N] [--count N] [--file-mib M]

Arms alternate in one run (reserved, sparse, reserved, ...) and the medians are printed:
file creation time of one 1 GiB file, puts + dispatch + a final flush of the whole CommitLog
under ASYNC_FLUSH, and puts from 64 coroutines under SYNC_FLUSH (group commit). The sparse arm is the store as it was before files were
reserved (a write into a page the disk cannot back is then a SIGBUS); it exists only here.
Every phase is bounded in count; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import common.mapped_file as mapped_file  # noqa: E402
import store.index_file as index_file  # noqa: E402
from common.message import MessageExtBrokerInner, properties_to_string  # noqa: E402
from store.config import FlushDiskType, MessageStoreConfig  # noqa: E402
from store.default_message_store import DefaultMessageStore  # noqa: E402

RESERVED = mapped_file.create_reserved_file
RESERVE_BLOCKS = mapped_file.reserve_blocks


def sparse_file(path: str, size: int, reserve: int | None = None) -> int:
    """The old creation: temporary name, ftruncate (no blocks), rename."""
    tmp = path + ".creating"
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fd, size)
    os.rename(tmp, path)
    return fd


def no_blocks(fd: int, offset: int, length: int, path: str) -> None:
    """The sparse arm's index and consume-queue files reserve nothing as they fill."""


def use(creator) -> None:
    mapped_file.create_reserved_file = index_file.create_reserved_file = creator
    index_file.reserve_blocks = mapped_file.reserve_blocks = RESERVE_BLOCKS if creator is RESERVED else no_blocks


def time_creation(base: str, creator, size: int) -> float:
    path = os.path.join(base, mapped_file.offset_to_file_name(0))
    t0 = time.perf_counter()
    os.close(creator(path, size))
    secs = time.perf_counter() - t0
    os.unlink(path)
    return secs


def msg(body: bytes, i: int) -> MessageExtBrokerInner:
    props = {"UNIQ_KEY": f"7F00000100002A9F0000{i:012X}", "KEYS": f"key{i}", "TAGS": "TagA"}
    return MessageExtBrokerInner(topic="ReserveT", queue_id=i & 7, body=body, properties=props,
                                 properties_string=properties_to_string(props), born_timestamp=1,
                                 born_host=("127.0.0.1", 5000))


def time_puts(base: str, count: int, file_size: int) -> tuple[float, float, float]:
    """(seconds for count puts + dispatch, their process CPU seconds, seconds for the final flush)."""
    root = os.path.join(base, "store")
    shutil.rmtree(root, ignore_errors=True)
    cfg = MessageStoreConfig(storePathRootDir=root, mappedFileSizeCommitLog=file_size,
                             maxHashSlotNum=100_000, maxIndexNum=400_000)
    s = DefaultMessageStore(cfg)
    assert s.load()
    body = os.urandom(512)
    msgs = [msg(body, i) for i in range(10_000)]
    n = 0
    c0 = time.process_time()
    t0 = time.perf_counter()
    while n < count:
        for m in msgs:
            m.body_crc = -1
            s.put_message(m)
        n += len(msgs)
        s.dispatch_pending()
    t_put = time.perf_counter() - t0
    c_put = time.process_time() - c0
    t0 = time.perf_counter()
    s.commit_log.flush_until(s.commit_log.get_max_offset())
    s.consume_queues.flush(0)
    t_flush = time.perf_counter() - t0
    s.shutdown_sync()
    shutil.rmtree(root, ignore_errors=True)
    return t_put, c_put, t_flush


def time_sync_puts(base: str, count: int, file_size: int, writers: int = 64) -> float:
    """Seconds for ``count`` puts under SYNC_FLUSH from ``writers`` coroutines (group commit)."""
    import uvloop  # noqa: PLC0415

    async def run() -> float:
        root = os.path.join(base, "sync")
        shutil.rmtree(root, ignore_errors=True)
        cfg = MessageStoreConfig(storePathRootDir=root, mappedFileSizeCommitLog=file_size,
                                 flushDiskType=FlushDiskType.SYNC_FLUSH, maxHashSlotNum=100_000, maxIndexNum=400_000)
        s = DefaultMessageStore(cfg)
        assert s.load()
        s.start()
        body = os.urandom(512)
        per = count // writers

        async def writer(w: int) -> None:
            for i in range(per):
                await s.put_message_async(msg(body, w * per + i))

        t0 = time.perf_counter()
        await asyncio.gather(*(writer(w) for w in range(writers)))
        secs = time.perf_counter() - t0
        await s.shutdown()
        shutil.rmtree(root, ignore_errors=True)
        return secs

    return uvloop.run(run())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=None, help="where the stores go (default: a temporary directory)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--count", type=int, default=200_000)
    ap.add_argument("--file-mib", type=int, default=64)
    ap.add_argument("--sync-count", type=int, default=20_000)
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="bench-reserve-", dir=a.dir)
    size = a.file_mib << 20
    arms = {"reserved": RESERVED, "sparse": sparse_file}
    create: dict[str, list[float]] = {k: [] for k in arms}
    puts: dict[str, list[float]] = {k: [] for k in arms}
    flush: dict[str, list[float]] = {k: [] for k in arms}
    cpu: dict[str, list[float]] = {k: [] for k in arms}
    sync: dict[str, list[float]] = {k: [] for k in arms}
    try:
        for _ in range(a.reps):
            for name, creator in arms.items():
                use(creator)
                create[name].append(time_creation(base, creator, 1 << 30))
                p, c, f = time_puts(base, a.count, size)
                puts[name].append(p)
                cpu[name].append(c)
                sync[name].append(time_sync_puts(base, a.sync_count, size))
                flush[name].append(f)
    finally:
        use(RESERVED)
        shutil.rmtree(base, ignore_errors=True)
    print(f"{a.reps} reps per arm, alternating; medians; {a.count} puts of 512 B, CommitLog files of {a.file_mib} MiB")
    for name in arms:
        c = statistics.median(create[name]) * 1e3
        p = statistics.median(puts[name])
        f = statistics.median(flush[name])
        u = statistics.median(cpu[name]) / a.count * 1e6
        print(f"{name:<9} create 1 GiB file {c:8.2f} ms   puts+dispatch {a.count / p:>10,.0f} msg/s ({p:.2f} s, "
              f"{u:.2f} us CPU/msg)   final flush {f * 1e3:8.1f} ms   runs {[round(x, 2) for x in puts[name]]}")
        y = statistics.median(sync[name])
        print(f"{'':<9} SYNC_FLUSH 64 writers {a.sync_count / y:>10,.0f} msg/s   runs {[round(x, 2) for x in sync[name]]}")


if __name__ == "__main__":
    main()

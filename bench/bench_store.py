"""Message store benchmark: appends/s and MB/s, reads, SYNC vs ASYNC flush, abnormal recovery speed.

    python bench/bench_store.py [--quick] [--dir DIR] [--seconds S]

Every phase is bounded in count and time. Appends include dispatch to the
ConsumeQueue and the Index (the reput work is timed together with the puts).
Prints one line per figure; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import signal
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from common.message import (  # noqa: E402
    BatchEntry,
    MessageExtBatch,
    MessageExtBrokerInner,
    encode_batch_body,
    properties_to_string,  # noqa: E402
)
from store.config import FlushDiskType, MessageStoreConfig  # noqa: E402
from store.default_message_store import DefaultMessageStore  # noqa: E402


def make_config(root: str, **kw) -> MessageStoreConfig:
    cfg = MessageStoreConfig(storePathRootDir=root, maxIndexNum=2_000_000, maxHashSlotNum=500_000)
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


def new_store(base: str, name: str, **kw) -> DefaultMessageStore:
    root = os.path.join(base, name)
    shutil.rmtree(root, ignore_errors=True)
    s = DefaultMessageStore(make_config(root, **kw))
    assert s.load()
    return s


def drop_store(s: DefaultMessageStore) -> None:
    """Shut a phase's store down and delete it: its dirty pages are then dropped, not written back
    while the next phase runs (on a 2-core machine the writeback would compete with it)."""
    s.shutdown_sync()
    shutil.rmtree(s.config.storePathRootDir, ignore_errors=True)


def msg(body: bytes, i: int) -> MessageExtBrokerInner:
    props = {"UNIQ_KEY": f"7F00000100002A9F0000{i:012X}", "KEYS": f"key{i}", "TAGS": "TagA", "CLUSTER": "c"}
    return MessageExtBrokerInner(topic="BenchTopic", queue_id=i & 7, body=body, properties=props,
                                 properties_string=properties_to_string(props), born_timestamp=1,
                                 born_host=("127.0.0.1", 5000))


def report(name: str, n: int, nbytes: int, secs: float, cpu: float | None = None) -> None:
    """One figure line; ``cpu`` (process CPU seconds) adds CPU us per message, steadier than wall time
    on a shared machine."""
    extra = f", {cpu / n * 1e6:.2f} us CPU/msg" if cpu is not None and n else ""
    print(f"{name:<48} {n / secs:>12,.0f} msg/s {nbytes / secs / 1e6:>9.1f} MB/s  ({n} msgs, {secs:.2f}s{extra})")


def bench_single(base: str, size: int, count: int, seconds: float, index: bool = True) -> None:
    s = new_store(base, f"single{size}", messageIndexEnable=index)
    body = os.urandom(size)
    msgs = [msg(body, i) for i in range(min(count, 20000))]
    n = 0
    nbytes = 0
    t_put = 0.0
    c_put = 0.0
    c0 = time.process_time()
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while n < count and time.perf_counter() < deadline:
        tp = time.perf_counter()
        cp = time.process_time()
        for m in msgs:
            m.body_crc = -1
            r = s.put_message(m)
            nbytes += r.append_result.wrote_bytes
        c_put += time.process_time() - cp
        t_put += time.perf_counter() - tp
        n += len(msgs)
        s.dispatch_pending()
    secs = time.perf_counter() - t0
    cpu = time.process_time() - c0
    label = f"single {size} B{'' if index else ' (no index)'}"
    report(f"{label} put+dispatch ASYNC", n, nbytes, secs, cpu)
    report("  of which put_message alone", n, nbytes, t_put, c_put)
    report(f"  of which dispatch (CQ{' + index' if index else ''}) alone", n, nbytes, secs - t_put, cpu - c_put)
    t0 = time.perf_counter()
    got = 0
    for q in range(8):
        off = 0
        while True:
            r = s.get_message("g", "BenchTopic", q, off, 32)
            if not r.message_count:
                break
            got += r.message_count
            off = r.next_begin_offset
            r.release()
    secs = time.perf_counter() - t0
    report(f"get_message {size} B (32 per pull)", got, got * (size + 200), secs)
    drop_store(s)


def bench_list(base: str, size: int, count: int, seconds: float, per_call: int = 16) -> None:
    """Single messages appended ``per_call`` at a time with put_message_list (the broker's pipelined sends)."""
    s = new_store(base, f"list{size}")
    body = os.urandom(size)
    msgs = [msg(body, i) for i in range(min(count, 20000))]
    chunks = [msgs[i : i + per_call] for i in range(0, len(msgs), per_call)]
    n = 0
    nbytes = 0
    t_put = 0.0
    c_put = 0.0
    c0 = time.process_time()
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while n < count and time.perf_counter() < deadline:
        tp = time.perf_counter()
        cp = time.process_time()
        for m in msgs:
            m.body_crc = -1
        for chunk in chunks:
            for r in s.put_message_list(chunk):
                nbytes += r.append_result.wrote_bytes
        c_put += time.process_time() - cp
        t_put += time.perf_counter() - tp
        n += len(msgs)
        s.dispatch_pending()
    secs = time.perf_counter() - t0
    cpu = time.process_time() - c0
    report(f"single {size} B put_message_list({per_call}) + dispatch", n, nbytes, secs, cpu)
    report("  of which put_message_list alone", n, nbytes, t_put, c_put)
    drop_store(s)


def recycle_memory(base: str, gib: float) -> None:
    """Write ``gib`` GiB of page cache and delete it, so the next phase allocates recycled pages.

    Why: on a VM whose host backs guest memory lazily (and takes freed memory back, as free
    page reporting does), the first touch of a never-used page costs a host fault: here about
    10 us per 4 KiB page, i.e. ~2.3 us of kernel time per KiB the store writes. A broker that
    has run for a while writes into recycled page cache and never sees that cost. This gives
    the next phase such pages (for a few seconds, until the host reclaims them).
    """
    path = os.path.join(base, "recycle.tmp")
    chunk = bytes(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for off in range(0, int(gib * (1 << 30)), 1 << 20):
            os.pwrite(fd, chunk, off)
    finally:
        os.close(fd)
        os.unlink(path)


def page_cache_floor(base: str, record_size: int, nbytes: int, seconds: float) -> None:
    """The kernel's cost of the bytes alone: records of ``record_size`` copied into a fresh mapped
    file the way the CommitLog writes them (zeros put ahead with pwrite, then the mapping), with
    no store work at all. Any writer of these bytes on this machine is bounded by this figure."""
    import mmap  # noqa: PLC0415

    path = os.path.join(base, "floor.tmp")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, nbytes)
        mm = mmap.mmap(fd, nbytes)
        rec = os.urandom(record_size)
        zeros = bytes(1 << 20)
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        deadline = t0 + seconds
        pos = 0
        warmed = 0
        while pos + record_size <= nbytes and time.perf_counter() < deadline:
            if pos + record_size > warmed:
                os.pwrite(fd, zeros[: min(len(zeros), nbytes - warmed)], warmed)
                warmed += len(zeros)
            mm[pos : pos + record_size] = rec
            pos += record_size
        secs = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        n = pos // record_size
        mm.close()
    finally:
        os.close(fd)
        os.unlink(path)
    sys_us = (r1.ru_stime - r0.ru_stime) / max(n, 1) * 1e6
    print(f"{'  page-cache floor, ' + str(record_size) + ' B records only':<48} {n / secs:>12,.0f} rec/s "
          f"{pos / secs / 1e6:>9.1f} MB/s  (kernel {sys_us:.2f} us/record)")


def bench_batch(base: str, size: int, count: int, seconds: float, label: str = "") -> int:
    s = new_store(base, f"batch{size}")
    body = os.urandom(size)
    entries = [BatchEntry(body=body, properties={"UNIQ_KEY": f"U{i:030d}", "KEYS": f"k{i}"}) for i in range(32)]
    encoded = encode_batch_body(entries)
    n = 0
    nbytes = 0
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    c0 = time.process_time()
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while n < count and time.perf_counter() < deadline:
        for i in range(200):
            b = MessageExtBatch(topic="BenchTopic", queue_id=i & 7, body=encoded, properties={"CLUSTER": "c"},
                                born_timestamp=1, born_host=("127.0.0.1", 5000))
            r = s.put_messages(b)
            nbytes += r.append_result.wrote_bytes
            n += 32
        s.dispatch_pending()
    secs = time.perf_counter() - t0
    cpu = time.process_time() - c0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    report(f"batch 32 x {size} B put+dispatch ASYNC{label}", n, nbytes, secs, cpu)
    if n:
        print(f"{'  of which user / kernel':<48} {(r1.ru_utime - r0.ru_utime) / n * 1e6:>9.2f} / "
              f"{(r1.ru_stime - r0.ru_stime) / n * 1e6:.2f} us CPU/msg")
    drop_store(s)
    return nbytes // n if n else 0


async def _concurrent(s: DefaultMessageStore, size: int, writers: int, count: int, seconds: float) -> tuple[int, int]:
    body = os.urandom(size)
    deadline = time.perf_counter() + seconds
    per = count // writers
    totals = [0, 0]

    async def writer(w: int) -> None:
        for i in range(per):
            if time.perf_counter() > deadline:
                return
            r = await s.put_message_async(msg(body, w * per + i))
            totals[0] += 1
            totals[1] += r.append_result.wrote_bytes
            if (i & 15) == 0:
                await asyncio.sleep(0)

    await asyncio.gather(*(writer(w) for w in range(writers)))
    return totals[0], totals[1]


def bench_flush_modes(base: str, size: int, count: int, seconds: float) -> None:
    """64 writer coroutines on one uvloop loop (as in the broker), ASYNC then SYNC flush; the CPU
    figure is the event loop thread's alone (the group-commit fsyncs run on their own thread)."""
    import uvloop  # noqa: PLC0415

    figures = {}
    for mode in (FlushDiskType.ASYNC_FLUSH, FlushDiskType.SYNC_FLUSH):
        async def run(mode=mode):
            s = new_store(base, f"flush-{mode.name}", flushDiskType=mode)
            s.start()
            t0 = time.perf_counter()
            c0 = time.thread_time()
            n, nbytes = await _concurrent(s, size, 64, count, seconds)
            await asyncio.get_running_loop().run_in_executor(None, s.dispatch_pending)
            secs = time.perf_counter() - t0
            cpu = time.thread_time() - c0
            fsyncs = s.group_commit.fsync_count if s.group_commit else 0
            await s.shutdown()
            shutil.rmtree(s.config.storePathRootDir, ignore_errors=True)
            return n, nbytes, secs, cpu, fsyncs

        n, nbytes, secs, cpu, fsyncs = uvloop.run(run())
        figures[mode] = n / secs
        report(f"64 writers {size} B put_message_async {mode.name}" + (f" ({fsyncs} fsyncs)" if fsyncs else ""),
               n, nbytes, secs, cpu)
    ratio = figures[FlushDiskType.ASYNC_FLUSH] / figures[FlushDiskType.SYNC_FLUSH]
    print(f"{'SYNC is slower than ASYNC by a factor of':<48} {ratio:>12.2f}")


def bench_recovery(base: str, total_bytes: int, seconds: float) -> None:
    s = new_store(base, "recovery", mappedFileSizeCommitLog=128 * 1024 * 1024)
    body = os.urandom(1024)
    msgs = [msg(body, i) for i in range(10000)]
    deadline = time.perf_counter() + seconds
    while s.get_max_phy_offset() < total_bytes and time.perf_counter() < deadline:
        for m in msgs:
            s.put_message(m)
    s.dispatch_pending()
    size = s.get_max_phy_offset()
    root = s.config.storePathRootDir
    s.shutdown_sync()
    kw = dict(mappedFileSizeCommitLog=128 * 1024 * 1024, maxIndexNum=2_000_000, maxHashSlotNum=500_000)
    # crash with consume queues current (abort file back, checkpoint zeroed): the whole
    # CommitLog is validated, nothing needs re-dispatching
    for crc in (True, False):
        open(os.path.join(root, "abort"), "wb").close()
        with open(os.path.join(root, "checkpoint"), "r+b") as f:
            f.write(bytes(24))
        # the index drops its files newer than the (zeroed) checkpoint, so leave it out here
        s = DefaultMessageStore(make_config(root, checkCRCOnRecover=crc, messageIndexEnable=False, **kw))
        t0 = time.perf_counter()
        assert s.load()
        secs = time.perf_counter() - t0
        print(f"{'abnormal recovery scan (CRC ' + ('on' if crc else 'off') + ', CQ current)':<48} "
              f"{size / secs / 1e6:>12.1f} MB/s  ({size / 1e6:.0f} MB in {secs:.2f}s)")
        s.shutdown_sync()
    # crash: abort file back, checkpoint zeroed, consume queues and index gone -> full re-dispatch
    open(os.path.join(root, "abort"), "wb").close()
    with open(os.path.join(root, "checkpoint"), "r+b") as f:
        f.write(bytes(24))
    shutil.rmtree(os.path.join(root, "consumequeue"))
    shutil.rmtree(os.path.join(root, "index"), ignore_errors=True)
    for crc in (True, False):
        s = DefaultMessageStore(make_config(root, checkCRCOnRecover=crc, **kw))
        t0 = time.perf_counter()
        assert s.load()
        secs = time.perf_counter() - t0
        print(f"{'abnormal recovery (CRC ' + ('on' if crc else 'off') + ', rebuild CQ+index)':<48} "
              f"{size / secs / 1e6:>12.1f} MB/s  ({size / 1e6:.0f} MB in {secs:.2f}s)")
        s.shutdown_sync()
        open(os.path.join(root, "abort"), "wb").close()
        with open(os.path.join(root, "checkpoint"), "r+b") as f:
            f.write(bytes(24))
        shutil.rmtree(os.path.join(root, "consumequeue"))
        shutil.rmtree(os.path.join(root, "index"), ignore_errors=True)
    s = DefaultMessageStore(make_config(root, messageIndexEnable=False, checkCRCOnRecover=False, **kw))
    t0 = time.perf_counter()
    assert s.load()
    secs = time.perf_counter() - t0
    print(f"{'abnormal recovery (CRC off, CQ only)':<48} {size / secs / 1e6:>12.1f} MB/s  ({secs:.2f}s)")
    drop_store(s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small counts (CI smoke)")
    ap.add_argument("--dir", default=None, help="where to put the stores (default: a temp dir)")
    ap.add_argument("--seconds", type=float, default=None, help="time cap per phase")
    a = ap.parse_args()
    base = a.dir or tempfile.mkdtemp(prefix="bench-store-")
    # SIGTERM cleans the temp stores up too
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    quick = a.quick
    secs = a.seconds or (3.0 if quick else 20.0)
    count = 100_000 if quick else 1_000_000
    try:
        print(f"python {sys.version.split()[0]}, store in {base}, load average {os.getloadavg()[0]:.2f}")
        # first, while the machine's free memory is least likely to have been touched: what the kernel
        # alone costs to put 1 KiB records (1183 B with their headers) into fresh page cache
        page_cache_floor(base, 1183, (256 if quick else 2048) << 20, secs)
        bench_single(base, 128, count, secs)
        bench_single(base, 1024, count, secs)
        bench_single(base, 1024, count, secs, index=False)
        bench_list(base, 1024, count, secs)
        bench_batch(base, 128, count * 4, secs)
        # batches of 1 KiB write ~0.5 GB/s, where the kernel's cost of fresh pages dominates on a VM
        # (see the page-cache floor above); the same run again on recycled page cache, as a broker
        # that has run for a while has
        bench_batch(base, 1024, count * 2, secs)
        recycle_memory(base, 0.5 if quick else 4)
        bench_batch(base, 1024, count * 2, secs, " (recycled pages)")
        bench_flush_modes(base, 1024, 64 * (500 if quick else 5000), secs)
        bench_recovery(base, (128 if quick else 1024) * 1024 * 1024, secs * 3)
        print(f"load average at the end {os.getloadavg()[0]:.2f}")
    finally:
        if a.dir is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

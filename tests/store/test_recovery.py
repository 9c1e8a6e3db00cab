"""Recovery: torn tails cut at every byte, SIGKILL of a real writer process, CQ truncation, restarts."""

from __future__ import annotations

import os
import random
import shutil
import struct
import time
import zlib
from pathlib import Path

import pytest

from common.message import decode_message
from store.default_message_store import DefaultMessageStore
from store.message_store import GetMessageStatus
from tests.store.crash_writer import QUEUES, TOPIC, body_for, crash_config
from tests.store.store_helpers import make_msg, open_store, small_config
from tests.support import wait_until

CRASH_WRITER = Path(__file__).with_name("crash_writer.py")


def crash(store: DefaultMessageStore) -> None:
    """Drop a store the way a killed process does: no flush, no checkpoint, abort file left behind."""
    store.commit_log.shutdown()
    store.consume_queues.shutdown()
    if store.index_service is not None:
        for f in store.index_service.index_files:
            f.close()
    store.lock.release()
    store.shutdown_flag = True


def check_queue_intact(store: DefaultMessageStore, topic: str, queue_id: int) -> list:
    """Read a whole queue: every record decodes, CRC is right, offsets are consecutive."""
    out = []
    offset = store.get_min_offset_in_queue(topic, queue_id)
    max_off = store.get_max_offset_in_queue(topic, queue_id)
    while offset < max_off:
        r = store.get_message("check", topic, queue_id, offset, 32)
        assert r.status is GetMessageStatus.FOUND, (r.status, offset, max_off)
        for b, q in zip(r.buffers, r.queue_offsets, strict=True):
            m = decode_message(b)
            assert m.topic == topic and m.queue_id == queue_id and m.queue_offset == q
            assert m.body_crc == zlib.crc32(m.body) & 0x7FFFFFFF
            out.append(m)
        offset = r.next_begin_offset
    assert [m.queue_offset for m in out] == list(range(store.get_min_offset_in_queue(topic, queue_id), max_off))
    return out


@pytest.fixture(scope="module")
def torn_base(tmp_path_factory):
    """A crashed store whose last record is at a known place."""
    root = tmp_path_factory.mktemp("torn") / "store"
    store = open_store(small_config(root))
    for i in range(20):
        assert store.put_message(make_msg("T", 0, bytes([i]) * 60, keys=f"key{i}",
                                          props={"p": "v" * (i % 5 + 1)})).is_ok()
    last = store.put_message(make_msg("T", 0, b"LAST" * 20, keys="last-key", props={"zz": "end"}))
    store.dispatch_pending()
    crash(store)
    return root, last.append_result.wrote_offset, last.append_result.wrote_bytes


@pytest.mark.parametrize("abnormal", [True, False], ids=["abnormal", "normal"])
def test_torn_last_record_cut_at_every_byte(tmp_path, torn_base, abnormal):
    base, start, total = torn_base
    cuts = range(total) if abnormal else range(0, total, 5)
    for k in cuts:
        root = tmp_path / f"cut{k}"
        shutil.copytree(base, root)
        if not abnormal:
            os.unlink(root / "abort")
        with open(root / "commitlog" / f"{0:020d}", "r+b") as f:
            f.seek(start + k)
            f.write(bytes(total - k))
        store = open_store(small_config(root))
        try:
            assert store.last_exit_ok is (not abnormal)
            assert store.get_max_phy_offset() == start, k
            assert store.get_max_offset_in_queue("T", 0) == 20, k
            msgs = check_queue_intact(store, "T", 0)
            assert [m.body for m in msgs] == [bytes([i]) * 60 for i in range(20)]
            assert store.look_message_by_offset(start) is None
            r = store.put_message(make_msg("T", 0, b"again", keys="k2"))
            assert r.append_result.wrote_offset == start and r.append_result.logics_offset == 20
            store.dispatch_pending()
            assert [m.body for m in check_queue_intact(store, "T", 0)][-1] == b"again"
        finally:
            store.shutdown_sync()


def test_header_missing_payload_present_is_not_a_record(tmp_path, torn_base):
    """What a kill between payload and header writes leaves: the payload without TOTALSIZE/MAGIC."""
    base, start, total = torn_base
    root = tmp_path / "s"
    shutil.copytree(base, root)
    with open(root / "commitlog" / f"{0:020d}", "r+b") as f:
        f.seek(start)
        f.write(bytes(8))
    store = open_store(small_config(root))
    try:
        assert store.get_max_phy_offset() == start
        # the garbage was zeroed: a later shorter record followed by a crash cannot resurrect it
        with open(root / "commitlog" / f"{0:020d}", "rb") as f:
            f.seek(start)
            assert f.read(total) == bytes(total)
    finally:
        store.shutdown_sync()


def test_cq_units_past_commit_log_end_are_dropped(tmp_path):
    root = tmp_path / "s"
    store = open_store(small_config(root))
    res = [store.put_message(make_msg("T", i % 2, b"x" * 100)).append_result for i in range(30)]
    store.dispatch_pending()
    crash(store)
    # the last 5 records vanish (e.g. lost by the OS); their consume-queue units remain on disk
    cut = res[25].wrote_offset
    with open(root / "commitlog" / f"{0:020d}", "r+b") as f:
        f.seek(cut)
        f.write(bytes(res[-1].wrote_offset + res[-1].wrote_bytes - cut))
    store = open_store(small_config(root))
    try:
        assert store.get_max_phy_offset() == cut
        assert store.get_max_offset_in_queue("T", 0) + store.get_max_offset_in_queue("T", 1) == 25
        for q in (0, 1):
            for m in check_queue_intact(store, "T", q):
                assert m.commit_log_offset < cut
        assert store.put_message(make_msg("T", 1, b"n")).append_result.logics_offset == 12
    finally:
        store.shutdown_sync()


def test_clean_shutdown_writes_checkpoint_and_restarts_normally(tmp_path):
    root = tmp_path / "s"
    store = open_store(small_config(root))
    res = [store.put_message(make_msg("T", 0, b"m%d" % i)).append_result for i in range(10)]
    assert (root / "abort").exists()
    store.dispatch_pending()
    store.shutdown_sync()
    assert not (root / "abort").exists()
    raw = (root / "checkpoint").read_bytes()
    assert len(raw) == 4096
    physic, logics, _index = struct.unpack_from(">qqq", raw)
    assert physic == logics == res[-1].store_timestamp
    store = open_store(small_config(root))
    try:
        assert store.last_exit_ok
        assert store.get_max_offset_in_queue("T", 0) == 10
        assert store.put_message(make_msg("T", 0, b"n")).append_result.logics_offset == 10
    finally:
        store.shutdown_sync()


def test_load_refuses_wrong_size_file_and_locked_store(tmp_path):
    root = tmp_path / "s"
    store = open_store(small_config(root))
    store.put_message(make_msg())
    # a second store on the same directory is refused while the first holds the lock
    other = DefaultMessageStore(small_config(root))
    assert not other.load()
    store.shutdown_sync()
    with open(root / "commitlog" / f"{0:020d}", "ab") as f:
        f.write(b"x")
    bad = DefaultMessageStore(small_config(root))
    assert not bad.load()
    # a failed load releases the lock: fixing the file lets the next load succeed
    os.truncate(root / "commitlog" / f"{0:020d}", 64 * 1024)
    good = DefaultMessageStore(small_config(root))
    assert good.load()
    good.shutdown_sync()


def _read_acks(text: str) -> list[tuple[int, int, str, int]]:
    acks = []
    for line in text.splitlines(keepends=True):
        if line.startswith("A ") and line.endswith("\n"):
            _a, off, qid, key, length = line.split()
            acks.append((int(off), int(qid), key, int(length)))
    return acks


def _run_crash_iterations(tmp_path, procs, iterations: int, seed: int, time_budget: float) -> int:
    root = tmp_path / "crash-store"
    rng = random.Random(seed)
    all_acks: dict[int, tuple[int, str, int]] = {}
    deadline = time.monotonic() + time_budget
    done = 0
    for it in range(iterations):
        if time.monotonic() > deadline and done >= 3:
            break
        target = rng.randint(5, 150)
        p = procs.start(f"writer{it}", ["-u", str(CRASH_WRITER), str(root), str(seed * 1000 + it), "8", "SYNC_FLUSH"])
        wait_until(lambda p=p, t=target: len(_read_acks(p.output())) >= t or p.popen.poll() is not None,
                   timeout=30, what="acknowledged puts")
        p.kill()
        out = p.output()
        assert "LOAD FAILED" not in out and "Traceback" not in out, out[-2000:]
        for off, qid, key, length in _read_acks(out):
            all_acks[off] = (qid, key, length)
        store = DefaultMessageStore(crash_config(str(root)))
        assert store.load()
        assert not store.last_exit_ok
        store.dispatch_pending()
        # every acknowledged message is there, intact, and reachable through its queue
        for off, (qid, key, length) in all_acks.items():
            m = store.look_message_by_offset(off)
            assert m is not None, (it, off, key)
            assert m.body == body_for(key, length) and m.properties["KEYS"] == key and m.queue_id == qid
            assert store.get_commit_log_offset_in_queue(TOPIC, qid, m.queue_offset) == off
        seen = 0
        for q in range(QUEUES):
            seen += len(check_queue_intact(store, TOPIC, q))
        assert seen >= len(all_acks)
        if it % 2:
            store.shutdown_sync()  # alternate clean restarts and crash-on-crash
        else:
            crash(store)
        done += 1
    return done


def test_sigkill_during_sync_flush_put_loop_loses_no_ack(tmp_path, procs):
    done = _run_crash_iterations(tmp_path, procs, iterations=12, seed=7, time_budget=25)
    assert done >= 3


@pytest.mark.soak
@pytest.mark.timeout(1500)
def test_sigkill_soak(tmp_path, procs):
    done = _run_crash_iterations(tmp_path, procs, iterations=300, seed=11, time_budget=1200)
    assert done >= 100

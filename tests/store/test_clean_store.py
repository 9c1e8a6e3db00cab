"""Cleanup services wired to a real DefaultMessageStore, then bin/mqstore check on what is left."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from store.clean_commit_log_service import CleanCommitLogService
from store.clean_consume_queue_service import CleanConsumeQueueService
from tests.support import BIN, async_wait_until

dms = pytest.importorskip("store.default_message_store")
message = pytest.importorskip("common.message")
from store.config import MessageStoreConfig  # noqa: E402
from store.message_store import PutMessageStatus  # noqa: E402

LONG_MAX = 2**63 - 1


def local_ms(hour: int) -> int:
    lt = time.localtime()
    return int(time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, hour, 30, 0, 0, 0, -1))) * 1000


def msg(i: int):
    props = {"KEYS": f"k{i} grp{i % 3}", "UNIQ_KEY": f"{i:032X}", "TAGS": f"tag{i % 4}"}
    return message.MessageExtBrokerInner(
        topic="CleanT",
        queue_id=i % 2,
        body=b"x" * 300,
        properties=props,
        properties_string=message.properties_to_string(props),
        born_timestamp=1_800_000_000_000 + i,
        born_host=("127.0.0.1", 40000),
    )


def mqstore_check(root) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "mqstore"), "check", str(root)], capture_output=True, text=True, timeout=120)


async def test_store_cleanup_end_to_end(tmp_path):
    root = tmp_path / "store"
    cfg = MessageStoreConfig(
        storePathRootDir=str(root),
        mappedFileSizeCommitLog=8192,
        mappedFileSizeConsumeQueue=20 * 8,
        maxHashSlotNum=16,
        maxIndexNum=40,
        deleteWhen="04",
        fileReservedTime=1,
        deleteCommitLogFilesInterval=0,
        deleteConsumeQueueFilesInterval=0,
    )
    store = dms.DefaultMessageStore(cfg)
    assert store.load()
    store.start()
    try:
        offsets = []
        for i in range(120):  # ~400 B records: ~20 per 8 KiB file -> 6 files
            r = store.put_message(msg(i))
            assert r.is_ok(), r.status
            offsets.append(r.append_result.wrote_offset)
        await async_wait_until(store.now_dispatched, what="dispatch")
        files = sorted((root / "commitlog").iterdir())
        assert len(files) >= 5
        assert len(store.query_message("CleanT", "k0", 64, 0, LONG_MAX).buffers) == 1

        usage = {"v": 0.5}
        clean_cl = CleanCommitLogService(
            cfg, store.commit_log.mapped_file_queue, disk_usage=lambda _p: usage["v"], disk_full=store.disk_guard
        )
        clean_cq = CleanConsumeQueueService(
            cfg, store.commit_log.get_min_offset, lambda: list(store.consume_queues), store.index_service
        )
        # the first three files are 2 hours old: deleted at 04:xx, not before
        old = time.time() - 2 * 3600
        for p in files[:3]:
            os.utime(p, (old, old))
        assert clean_cl.run_once(local_ms(3)) == 0
        assert clean_cl.run_once(local_ms(4)) == 3
        min_offset = store.get_min_phy_offset()
        assert min_offset == 3 * 8192
        assert clean_cq.run_once() > 0
        first_kept = next(i for i, off in enumerate(offsets) if off >= min_offset)
        # the consume queues start at the first record still in the CommitLog
        for qid in (0, 1):
            lo = store.get_min_offset_in_queue("CleanT", qid)
            assert store.get_commit_log_offset_in_queue("CleanT", qid, lo) >= min_offset
            assert lo > 0
        # index files wholly below the min offset are gone
        assert all(f.end_phy_offset >= min_offset for f in store.index_service.index_files)
        assert len(store.query_message("CleanT", f"k{first_kept + 1}", 64, 0, LONG_MAX).buffers) == 1
        assert len(store.query_message("CleanT", "k119", 64, 0, LONG_MAX).buffers) == 1

        # what is left verifies (the store is live: its files are shared mappings)
        r = mqstore_check(root)
        assert r.returncode == 0, r.stdout + r.stderr
        n_left = 120 - first_kept
        assert f"OK: {n_left} records, {n_left} consume-queue units" in r.stdout

        # disk above 90 %: files go regardless of age and the store refuses puts until it drops
        usage["v"] = 0.95
        assert clean_cl.run_once(local_ms(12)) >= 1
        assert len(list((root / "commitlog").iterdir())) == 1
        r = store.put_message(msg(999))
        assert r.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        usage["v"] = 0.5
        clean_cl.run_once(local_ms(12))
        assert store.put_message(msg(1000)).is_ok()
        await async_wait_until(store.now_dispatched, what="dispatch")
        clean_cq.run_once()
    finally:
        await store.shutdown()
    r = mqstore_check(root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1].startswith("OK: 2 records, 2 consume-queue units")


async def test_running_store_cleans_files_by_itself_and_guards_a_full_disk(tmp_path):
    """start() runs cleanFilesPeriodically: expired CommitLog, CQ and index files go without any call,
    and a disk above 90 % makes the store refuse puts until usage drops again."""
    root = tmp_path / "store"
    cfg = MessageStoreConfig(
        storePathRootDir=str(root),
        mappedFileSizeCommitLog=8192,
        mappedFileSizeConsumeQueue=20 * 8,
        maxHashSlotNum=16,
        maxIndexNum=40,
        deleteWhen="04",
        fileReservedTime=1,
        cleanResourceInterval=20,
        deleteCommitLogFilesInterval=0,
        deleteConsumeQueueFilesInterval=0,
    )
    usage = {"v": 0.5}
    store = dms.DefaultMessageStore(cfg, disk_usage=lambda _p: usage["v"], clock=lambda: local_ms(4),
                                    clean_first_delay_ms=0)
    assert store.load()
    store.start()
    try:
        offsets = [store.put_message(msg(i)).append_result.wrote_offset for i in range(120)]
        await async_wait_until(store.now_dispatched, what="dispatch")
        files = sorted((root / "commitlog").iterdir())
        assert len(files) >= 5
        n_index = len(store.index_service.index_files)
        assert n_index > 1
        # files younger than fileReservedTime survive the 04:xx runs; age three of them
        old = time.time() - 2 * 3600
        for p in files[:3]:
            os.utime(p, (old, old))
        await async_wait_until(lambda: store.get_min_phy_offset() == 3 * 8192, what="expired files deleted")
        assert sorted((root / "commitlog").iterdir()) == files[3:]
        # the consume queues and the index follow the CommitLog's new min offset by themselves
        await async_wait_until(
            lambda: all(store.get_commit_log_offset_in_queue("CleanT", q, store.get_min_offset_in_queue("CleanT", q))
                        >= 3 * 8192 for q in (0, 1)), what="consume queues cleaned")
        await async_wait_until(
            lambda: all(f.end_phy_offset >= 3 * 8192 for f in store.index_service.index_files), what="index cleaned")
        assert len(store.index_service.index_files) < n_index
        first_kept = next(i for i, off in enumerate(offsets) if off >= 3 * 8192)
        assert store.get_min_offset_in_queue("CleanT", first_kept % 2) > 0
        assert len(store.query_message("CleanT", "k119", 64, 0, LONG_MAX).buffers) == 1

        # disk-full guard: above 90 % puts are refused (and old files go regardless of age)
        usage["v"] = 0.95
        await async_wait_until(lambda: not store.writeable, what="disk-full guard")
        r = store.put_message(msg(999))
        assert r.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.runtime_info()["storeWriteable"] == "false"
        await async_wait_until(lambda: len(list((root / "commitlog").iterdir())) == 1, what="forced cleanup")
        usage["v"] = 0.5
        await async_wait_until(lambda: store.writeable, what="writeable again")
        assert store.put_message(msg(1000)).is_ok()
    finally:
        await store.shutdown()
    r = mqstore_check(root)
    assert r.returncode == 0, r.stdout + r.stderr

"""File cleanup with real files in tmp_path: CommitLog by time / disk ratio / manual, then CQ and index files."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from common.mapped_file_queue import MappedFileQueue
from store.clean_commit_log_service import CleanCommitLogService, disk_partition_used_ratio, is_it_time_to_do
from store.clean_consume_queue_service import CleanConsumeQueueService
from store.config import MessageStoreConfig
from store.disk_space_guard import DiskSpaceGuard
from store.index_service import IndexService
from store.running_flags import RunningFlags

mapped_file = pytest.importorskip("common.mapped_file")

FILE_SIZE = 4096
HOUR_MS = 3_600_000


def local_ms(hour: int, minute: int = 30) -> int:
    """A wall time today at ``hour:minute`` local time."""
    lt = time.localtime()
    return int(time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, hour, minute, 0, 0, 0, -1))) * 1000


def make_files(d: Path, n: int, ages_h: list[float], size: int = FILE_SIZE) -> list[Path]:
    """``n`` mapped files named by offset, with mtimes ``ages_h`` hours in the past."""
    d.mkdir(parents=True, exist_ok=True)
    now = time.time()
    paths = []
    for i in range(n):
        p = d / f"{i * size:020d}"
        p.write_bytes(bytes([i % 251 + 1]) * size)
        os.utime(p, (now - ages_h[i] * 3600, now - ages_h[i] * 3600))
        paths.append(p)
    return paths


def open_queue(d: Path, size: int = FILE_SIZE):
    q = MappedFileQueue(str(d), size)
    assert q.load()
    return q


class Probe:
    """Disk usage per partition path, settable by the test."""

    def __init__(self, physic: float = 0.5, logics: float = 0.5):
        self.physic, self.logics = physic, logics
        self.calls: list[str] = []

    def __call__(self, path: str) -> float:
        self.calls.append(path)
        return self.logics if path.endswith("consumequeue") else self.physic


def config(root: Path, **kw) -> MessageStoreConfig:
    c = MessageStoreConfig(storePathRootDir=str(root), deleteCommitLogFilesInterval=0, deleteConsumeQueueFilesInterval=0)
    for k, v in kw.items():
        setattr(c, k, v)
    return c


def names(d: Path) -> list[int]:
    return sorted(int(p.name) for p in d.iterdir())


def test_is_it_time_to_do():
    assert is_it_time_to_do("04", local_ms(4))
    assert not is_it_time_to_do("04", local_ms(5))
    assert is_it_time_to_do("04;10", local_ms(10, 59))
    assert not is_it_time_to_do("04;10", local_ms(11, 0))
    assert not is_it_time_to_do("x;", local_ms(4))


def test_disk_partition_used_ratio(tmp_path):
    r = disk_partition_used_ratio(str(tmp_path))
    assert 0.0 <= r <= 1.0
    assert disk_partition_used_ratio(str(tmp_path / "missing")) == -1.0


def test_commit_log_cleanup_at_delete_hour(tmp_path):
    cl = tmp_path / "commitlog"
    make_files(cl, 5, [100, 90, 80, 1, 200])
    q = open_queue(cl)
    probe = Probe()
    svc = CleanCommitLogService(config(tmp_path, deleteWhen="04", fileReservedTime=72), q, disk_usage=probe)
    # not the hour, disk fine: nothing
    assert svc.run_once(local_ms(3)) == 0
    assert names(cl) == [0, 4096, 8192, 12288, 16384]
    # 04:xx: the three files older than 72 h go, the 1-hour-old one stops the scan, the last is kept
    assert svc.run_once(local_ms(4)) == 3
    assert names(cl) == [12288, 16384]
    assert q.get_min_offset() == 12288
    assert str(cl) in probe.calls
    assert svc.run_once(local_ms(4)) == 0


def test_commit_log_cleanup_by_disk_ratio(tmp_path):
    cl = tmp_path / "commitlog"
    make_files(cl, 6, [100, 100, 1, 1, 1, 1])
    q = open_queue(cl)
    probe = Probe(physic=0.80)  # > diskMaxUsedSpaceRatio 75 %, < 85 %: only expired files
    transitions = []
    # the store's disk-full owner, told by the service; it records each change of the disk-full mark
    guard = DiskSpaceGuard(RunningFlags(), lambda writeable: transitions.append(not writeable),
                           commit_log_paths=[str(cl)], consume_queue_path=str(tmp_path / "consumequeue"),
                           disk_usage=probe)
    svc = CleanCommitLogService(
        config(tmp_path, deleteWhen="04", fileReservedTime=72), q, disk_usage=probe, disk_full=guard
    )
    assert svc.run_once(local_ms(12)) == 2
    assert names(cl) == [8192, 12288, 16384, 20480]
    assert not svc.clean_immediately and transitions == []
    # > 85 %: cleaned regardless of age (cleanFileForciblyEnable), never the last file
    probe.physic = 0.87
    svc.config.cleanFileForciblyEnable = False
    assert svc.run_once(local_ms(12)) == 0
    svc.config.cleanFileForciblyEnable = True
    assert svc.run_once(local_ms(12)) == 3
    assert names(cl) == [20480]
    assert transitions == []
    # > 90 %: the store is marked disk-full until usage falls back
    probe.physic = 0.93
    svc.run_once(local_ms(12))
    assert svc.disk_full and transitions == [True]
    probe.physic = 0.50
    svc.run_once(local_ms(12))
    assert not svc.disk_full and transitions == [True, False]


def test_consume_queue_partition_also_triggers(tmp_path):
    cl = tmp_path / "commitlog"
    make_files(cl, 3, [100, 100, 100])
    q = open_queue(cl)
    probe = Probe(physic=0.10, logics=0.80)
    svc = CleanCommitLogService(config(tmp_path, deleteWhen="04"), q, disk_usage=probe)
    assert svc.run_once(local_ms(12)) == 2
    assert str(tmp_path / "consumequeue") in probe.calls
    # diskMaxUsedSpaceRatio is clamped to [10, 95]: 99 behaves as 95
    make_files(tmp_path / "cl2", 3, [100, 100, 100])
    svc2 = CleanCommitLogService(
        config(tmp_path, deleteWhen="04", diskMaxUsedSpaceRatio=99),
        open_queue(tmp_path / "cl2"),
        disk_usage=Probe(0.96, 0.1),
        disk_space_warning_level_ratio=0.99,
        disk_space_clean_forcibly_ratio=0.99,
    )
    assert svc2.run_once(local_ms(12)) == 2


def test_manual_delete_and_batch_limit(tmp_path):
    cl = tmp_path / "commitlog"
    make_files(cl, 14, [100] * 14)
    q = open_queue(cl)
    svc = CleanCommitLogService(config(tmp_path, deleteWhen="04"), q, disk_usage=Probe())
    assert svc.run_once(local_ms(12)) == 0
    svc.execute_delete_files_manually()
    assert svc.run_once(local_ms(12)) == 10  # at most 10 per run
    assert svc.manual_delete_file_several_times == 19
    assert svc.run_once(local_ms(12)) == 3
    assert names(cl) == [13 * FILE_SIZE]


def test_consume_queue_and_index_cleanup(tmp_path):
    cq_mod = pytest.importorskip("store.consume_queue")
    cfg = config(tmp_path, maxHashSlotNum=8, maxIndexNum=3, mappedFileSizeConsumeQueue=5 * 20)
    # a consume queue whose units point at commit-log offsets 0, 100, 200, ...
    cq = cq_mod.ConsumeQueue("T", 0, str(tmp_path / "consumequeue"), cfg.mapped_file_size_consume_queue)
    for i in range(12):
        assert cq.put_message_position_info(100 * i, 100, 0, i)
    idx = IndexService(cfg, str(tmp_path / "index"))
    idx.load(True)

    @dataclass
    class Req:
        topic: str
        commit_log_offset: int
        store_timestamp: int
        keys: str = ""
        uniq_key: str | None = None
        sys_flag: int = 0

    for i in range(12):
        idx.build_index(Req("T", 100 * i, 1_800_000_000_000 + i, keys=f"k{i}"))
    assert idx.file_count == 6
    min_offset = [0]
    svc = CleanConsumeQueueService(cfg, lambda: min_offset[0], lambda: [cq], idx)
    assert svc.run_once() == 0
    cq_dir = tmp_path / "consumequeue" / "T" / "0"
    assert len(list(cq_dir.iterdir())) == 3
    min_offset[0] = 650  # CQ file 0 ends at unit 4 (400) -> deleted; file 1 ends at 900 -> kept
    deleted = svc.run_once()
    assert names(cq_dir) == [100, 200]
    # index files end at 100, 300, 500, 700, ...: the first three go
    assert idx.file_count == 3
    assert deleted == 1 + 3
    assert cq.get_min_offset_in_queue() == 7
    assert svc.run_once() == 0  # min offset did not move
    idx.shutdown()


async def test_consume_queue_cleanup_async_pauses_between_queues(tmp_path):
    cq_mod = pytest.importorskip("store.consume_queue")
    cfg = config(tmp_path, mappedFileSizeConsumeQueue=2 * 20, deleteConsumeQueueFilesInterval=1)
    queues = []
    for qid in range(3):
        cq = cq_mod.ConsumeQueue("T", qid, str(tmp_path / "consumequeue"), cfg.mapped_file_size_consume_queue)
        for i in range(6):  # 3 files of 2 units: offsets 0..500
            assert cq.put_message_position_info(100 * i, 100, 0, i)
        queues.append(cq)
    svc = CleanConsumeQueueService(cfg, lambda: 450, lambda: queues, None)
    assert await svc.run_once_async() == 2 * 3  # files [0,100] and [200,300] of each queue
    for qid in range(3):
        assert names(tmp_path / "consumequeue" / "T" / str(qid)) == [80]
        assert queues[qid].get_min_offset_in_queue() == 5
    assert await svc.run_once_async() == 0


async def test_clean_files_periodically(tmp_path):
    import asyncio

    from store.clean_commit_log_service import clean_files_periodically
    from tests.support import async_wait_until

    cl = tmp_path / "commitlog"
    make_files(cl, 4, [100, 100, 100, 1])
    q = open_queue(cl)
    cfg = config(tmp_path, deleteWhen="04")
    cleaner = CleanCommitLogService(cfg, q, disk_usage=Probe())
    seen = []

    class CQ:
        async def run_once_async(self, now_ms):
            seen.append(now_ms)
            return 0

    task = asyncio.get_running_loop().create_task(
        clean_files_periodically(cleaner, CQ(), 10, first_delay_ms=0, clock=lambda: local_ms(4))
    )
    try:
        await async_wait_until(lambda: names(cl) == [3 * FILE_SIZE] and len(seen) >= 2, what="periodic cleanup")
        assert seen[0] == local_ms(4)
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

"""Full disk at the store level (issue #17, defect 3): reserved files, the guard's levels, and a
consume-queue file that finds no room (the dispatch waits; nothing is skipped)."""

from __future__ import annotations

import os

import pytest

from common.mapped_file import DiskFullError, MappedFile, create_reserved_file, offset_to_file_name
from common.mapped_file_queue import MappedFileQueue
from common.message import MessageExtBrokerInner, decode_message, properties_to_string
from store.config import MessageStoreConfig
from store.default_message_store import DefaultMessageStore
from store.disk_space_guard import DiskSpaceGuard, PartitionSpace
from store.message_store import PutMessageStatus
from store.running_flags import RunningFlags
from tests.support import async_wait_until
from tests.tmpfs import MiB, SmallDisks, fill


@pytest.fixture
def small_disk(tmp_path):
    disks = SmallDisks(tmp_path)
    yield disks.mount
    disks.unmount_all()


class Gate:
    """A CreateGuard that records what it is told."""

    def __init__(self, allow: bool = True) -> None:
        self.allow = allow
        self.failed: list[tuple[str, OSError]] = []

    def before_create(self, path: str, size: int) -> bool:
        return self.allow

    def create_failed(self, path: str, error: OSError) -> None:
        self.failed.append((path, error))


# -- reserving a file ---------------------------------------------------------------------------


def test_no_room_for_a_mapped_file_is_a_clean_error_and_leaves_no_file(small_disk):
    disk = small_disk(2)
    path = str(disk / offset_to_file_name(0))
    with pytest.raises(DiskFullError) as info:
        MappedFile(path, 4 * MiB)
    assert info.value.size == 4 * MiB and "no space left" in str(info.value)
    assert os.listdir(disk) == []  # neither the file nor its ".creating" twin
    # through a queue: no file, the queue says why, the guard is told
    gate = Gate()
    q = MappedFileQueue(str(disk / "q"), 4 * MiB, guard=gate)
    assert q.get_last_mapped_file_or_create(0) is None
    assert q.create_refused_disk_full
    assert [type(e) for _, e in gate.failed] == [DiskFullError]
    assert os.listdir(disk / "q") == []
    # a file that fits is created whole, its blocks reserved
    mf = MappedFileQueue(str(disk / "q"), MiB).get_last_mapped_file_or_create(0)
    assert mf is not None and os.stat(mf.path).st_blocks * 512 >= MiB
    mf.close()


def test_a_filesystem_full_to_the_last_block_refuses_even_small_files(small_disk):
    disk = small_disk(1)
    fill(disk / "filler")
    with pytest.raises(DiskFullError):
        os.close(create_reserved_file(str(disk / "x"), 8192))
    assert sorted(os.listdir(disk)) == ["filler"]


def test_a_guard_refusal_creates_nothing(tmp_path):
    gate = Gate(allow=False)
    q = MappedFileQueue(str(tmp_path / "q"), 4096, guard=gate)
    assert q.get_last_mapped_file_or_create(0) is None
    assert q.create_refused_disk_full and not (tmp_path / "q").exists()


def test_load_removes_a_creation_cut_short(tmp_path):
    d = tmp_path / "q"
    d.mkdir()
    (d / (offset_to_file_name(4096) + ".creating")).write_bytes(b"\0" * 100)
    q = MappedFileQueue(str(d), 4096)
    q.get_last_mapped_file_or_create(0).append(b"abc")
    q.shutdown()
    q2 = MappedFileQueue(str(d), 4096)
    assert q2.load()
    assert os.listdir(d) == [offset_to_file_name(0)]


# -- the guard's levels -----------------------------------------------------------------------


class Disk:
    """Injected probes: a used ratio and the bytes behind it."""

    def __init__(self, total: int = 100 * MiB, used: int = 0) -> None:
        self.total = total
        self.used = used

    def ratio(self, _path: str) -> float:
        return self.used / self.total

    def space(self, _path: str) -> PartitionSpace:
        return PartitionSpace(self.total, self.used, self.total - self.used)


def make_guard(disk: Disk, changes: list[bool], flags: RunningFlags | None = None, root=None) -> DiskSpaceGuard:
    """A guard over ``root``/commitlog and ``root``/consumequeue (directories that need not exist)."""
    root = root or "/nowhere"
    return DiskSpaceGuard(flags or RunningFlags(), changes.append, commit_log_paths=[f"{root}/commitlog"],
                          consume_queue_path=f"{root}/consumequeue", disk_usage=disk.ratio, space=disk.space)


def test_guard_marks_full_above_090_and_clears_at_085(tmp_path):
    for d in ("commitlog", "consumequeue"):
        (tmp_path / d).mkdir()
    disk = Disk(used=80 * MiB)
    changes: list[bool] = []
    g = make_guard(disk, changes, root=tmp_path)
    assert not g.probe() and changes == []
    disk.used = 91 * MiB
    assert g.probe() and changes == [False] and g.flags.is_disk_full()
    disk.used = 87 * MiB  # between the levels: stays full (no flapping)
    assert g.probe() and changes == [False]
    disk.used = 85 * MiB
    assert not g.probe() and changes == [False, True]
    # the consume-queue partition counts too (a probe per path)
    g._disk_usage = lambda p: 0.95 if p.endswith("consumequeue") else 0.1
    assert g.probe()


def test_guard_refuses_a_commit_log_file_that_would_pass_the_warning_level():
    disk = Disk(used=70 * MiB)
    changes: list[bool] = []
    g = make_guard(disk, changes)
    assert g.before_create("/nowhere/commitlog/x", 20 * MiB)  # 90 % with it: allowed
    disk.used = 71 * MiB
    assert not g.before_create("/nowhere/commitlog/x", 20 * MiB)
    assert changes == [False] and g.refusals == 1
    assert not g.before_create("/nowhere/commitlog/x", 20 * MiB)  # still no room
    assert g.probe()  # 71 % used, but the blocked file does not fit yet
    disk.used = 60 * MiB
    assert not g.probe() and changes == [False, True]  # writes resume by themselves


def test_queue_files_are_never_refused_beforehand_but_a_failure_marks_full():
    disk = Disk(used=99 * MiB)
    changes: list[bool] = []
    g = make_guard(disk, changes)
    assert g.queue_gate.before_create("/nowhere/consumequeue/T/0/x", 6000)
    g.queue_gate.create_failed("/nowhere/consumequeue/T/0/x", DiskFullError("/x", 6000, "test"))
    assert changes == [False]
    disk.used = 10 * MiB
    assert not g.probe() and changes == [False, True]


def test_not_writeable_and_disk_full_are_separate_bits():
    disk = Disk(used=95 * MiB)
    changes: list[bool] = []
    flags = RunningFlags()
    g = make_guard(disk, changes, flags)
    flags.get_and_make_not_writeable()
    g.refresh()
    g.probe()
    disk.used = 10 * MiB
    g.probe()
    # space is back, but the switch is still off: not writeable
    assert not flags.is_disk_full() and not flags.is_writeable() and changes == [False]
    flags.get_and_make_writeable()
    g.refresh()
    assert changes == [False, True]


# -- a store on a small disk --------------------------------------------------------------------


def _msg(topic: str, i: int) -> MessageExtBrokerInner:
    props = {"KEYS": f"k{i}", "UNIQ_KEY": f"{i:032X}"}
    return MessageExtBrokerInner(topic=topic, queue_id=0, body=b"m%06d" % i + b"." * 200, properties=props,
                                 properties_string=properties_to_string(props), born_host=("127.0.0.1", 40000),
                                 store_host=("127.0.0.1", 10911))


async def test_a_queue_file_without_room_pauses_dispatch_and_skips_nothing(small_disk):
    disk = small_disk(8)
    cfg = MessageStoreConfig(storePathRootDir=str(disk / "store"), mappedFileSizeCommitLog=MiB,
                             mappedFileSizeConsumeQueue=60_000, maxHashSlotNum=100, maxIndexNum=400)
    store = DefaultMessageStore(cfg, clean_first_delay_ms=3_600_000)
    assert store.load()
    store.start()
    try:
        assert store.put_message(_msg("FirstT", 0)).is_ok()
        await async_wait_until(store.now_dispatched, what="first dispatch")
        fill(disk / "filler")  # not one block left
        # the CommitLog file has room (its blocks were reserved): the records are accepted ...
        offsets = [store.put_message(_msg("SecondT", i)).append_result.logics_offset for i in range(5)]
        assert offsets == list(range(5))
        # ... but SecondT's queue file cannot be created: dispatch waits, the store refuses new puts
        await async_wait_until(lambda: not store.writeable, 5, what="disk-full mark")
        r = store.put_message(_msg("SecondT", 99))
        assert r.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.get_max_offset_in_queue("SecondT", 0) == 0
        assert not os.path.exists(os.path.join(cfg.consume_queue_dir, "SecondT", "0", offset_to_file_name(0)))
        # space returns: the units come in order, none skipped, and the store is writeable again
        (disk / "filler").unlink()
        await async_wait_until(lambda: store.get_max_offset_in_queue("SecondT", 0) == 5, 10, what="dispatch resumed")
        await async_wait_until(lambda: store.writeable, 5, what="writeable again")
        got = store.get_message("g", "SecondT", 0, 0, 32, None)
        assert got.queue_offsets == list(range(5))
        assert [decode_message(b).body[:7] for b in got.buffers] == [b"m%06d" % i for i in range(5)]
        assert store.put_message(_msg("SecondT", 5)).is_ok()
    finally:
        await store.shutdown()


def test_a_clear_from_the_cleanup_service_is_checked_against_every_partition(tmp_path):
    for d in ("commitlog", "consumequeue"):
        (tmp_path / d).mkdir()
    disk = Disk(used=10 * MiB)
    changes: list[bool] = []
    g = make_guard(disk, changes, root=tmp_path)
    g._disk_usage = lambda p: 0.95 if p.endswith("consumequeue") else 0.5
    g.set_ratio_full(True)
    g.set_ratio_full(False)  # that service's last verdict was the CommitLog's partition only
    assert g.disk_full and changes == [False]
    g._disk_usage = lambda p: 0.5
    g.set_ratio_full(False)
    assert not g.disk_full and changes == [False, True]


def test_directories_not_created_yet_are_measured_on_their_partition(tmp_path):
    seen: list[str] = []

    def usage(p: str) -> float:
        seen.append(p)
        return 0.95 if os.path.isdir(p) else -1.0

    g = DiskSpaceGuard(RunningFlags(), lambda w: None, commit_log_paths=[str(tmp_path / "store" / "commitlog")],
                       consume_queue_path=str(tmp_path / "store" / "consumequeue"), disk_usage=usage)
    assert g.probe()  # a new store on a full disk is full before its first file
    assert seen == [str(tmp_path)] * 2


# -- index files reserve their entries as they fill ------------------------------------------------


def _allocated(path) -> int:
    return os.stat(path).st_blocks * 512


def test_an_index_file_reserves_header_and_slots_then_entries_a_chunk_at_a_time(tmp_path):
    from store.index_file import ENTRIES_RESERVE_CHUNK, IndexFile

    path = str(tmp_path / "20260101000000000")
    f = IndexFile(path, 1000, 1_000_000)  # 20 MB of entries
    base = 40 + 1000 * 4
    assert base + ENTRIES_RESERVE_CHUNK <= _allocated(path) < base + ENTRIES_RESERVE_CHUNK + 1024 * 1024
    per_chunk = ENTRIES_RESERVE_CHUNK // 20
    keys = [f"T#k{i}" for i in range(1000)]
    n = 0
    while n < per_chunk + 5000:  # past the first chunk: the next one gets reserved on the way
        n += f.put_keys(keys, 1000 + n, 1_700_000_000_000)
    assert f.index_count == n + 1
    assert _allocated(path) >= base + (n + 1) * 20
    f.store_header()
    f.close()
    # a file from disk (here: as sparse as an older writer leaves it) reserves from byte 0 on its first put
    g = IndexFile(path, 1000, 1_000_000)
    g.load()
    assert g.put_keys(["T#again"], 5, 1_700_000_000_000) == 1 and g.index_count == n + 2
    g.close()


def test_no_room_for_more_index_entries_leaves_records_unindexed_not_a_crash(small_disk):
    from store.index_file import ENTRIES_RESERVE_CHUNK, IndexFile

    disk = small_disk(6)
    f = IndexFile(str(disk / "20260101000000000"), 1000, 1_000_000)  # 20 MB: more than the disk
    fill(disk / "filler")
    keys = [f"T#k{i}" for i in range(1000)]
    n = 0
    with pytest.raises(DiskFullError):
        for _ in range(ENTRIES_RESERVE_CHUNK // 20 // 1000 + 2):  # bounded: the chunk runs out first
            n += f.put_keys(keys, 7, 1_700_000_000_000)
    assert f.index_count == n + 1  # every entry that was put is counted; none beyond the reserved bytes
    (disk / "filler").unlink()
    assert f.put_keys(keys, 8, 1_700_000_000_000) == 1000  # room again: indexing goes on
    f.close()


# -- consume-queue files reserve their units a step at a time ----------------------------------------


def test_a_consume_queue_file_reserves_its_units_a_step_at_a_time(tmp_path):
    from store.consume_queue import CQ_RESERVE_STEP, ConsumeQueue

    cq = ConsumeQueue("T", 0, str(tmp_path), 6_000_000)  # RocketMQ's default: 300,000 units
    for i in range(10):
        assert cq.put_message_position_info(i * 100, 100, 0, i)
    path = cq.queue.get_last_mapped_file().path
    assert CQ_RESERVE_STEP <= _allocated(path) < CQ_RESERVE_STEP + 65536  # not 6 MB for 10 units
    n = CQ_RESERVE_STEP // 20 + 100
    for i in range(10, n):
        assert cq.put_message_position_info(i * 100, 100, 0, i)
    assert _allocated(path) >= n * 20
    assert cq.get_unit(n - 1) == ((n - 1) * 100, 100, 0)
    cq.shutdown()


async def test_a_queue_that_cannot_reserve_its_next_units_waits_and_skips_nothing(small_disk):
    from store.consume_queue import CQ_RESERVE_STEP

    disk = small_disk(8)
    cfg = MessageStoreConfig(storePathRootDir=str(disk / "store"), mappedFileSizeCommitLog=4 * MiB,
                             mappedFileSizeConsumeQueue=600_000, messageIndexEnable=False)
    store = DefaultMessageStore(cfg, clean_first_delay_ms=3_600_000)
    assert store.load()
    store.start()
    try:
        units = CQ_RESERVE_STEP // 20
        total = units + 200
        assert store.put_message(_msg("StepT", 0)).is_ok()
        await async_wait_until(store.now_dispatched, what="first dispatch")
        fill(disk / "filler")
        for i in range(1, total):  # the CommitLog file was reserved whole: all are accepted
            assert store.put_message(_msg("StepT", i)).is_ok(), i
        await async_wait_until(lambda: not store.writeable, 5, what="disk-full mark")
        assert store.get_max_offset_in_queue("StepT", 0) == units  # the reserved units, not one more
        assert store.disk_guard.refusals >= 1  # the queue told the guard, not only the periodic probe
        (disk / "filler").unlink()
        await async_wait_until(lambda: store.get_max_offset_in_queue("StepT", 0) == total, 10, what="resumed")
        got = store.get_message("g", "StepT", 0, units - 2, 4, None)
        assert [decode_message(b).body[:7] for b in got.buffers] == [b"m%06d" % i for i in range(units - 2, units + 2)]
        await async_wait_until(lambda: store.writeable, 5, what="writeable again")
    finally:
        await store.shutdown()


def _sparse(path, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size)  # what RocketMQ 4.9 or an older writer leaves: no blocks yet


def test_the_last_file_left_sparse_by_an_older_writer_is_reserved_at_load(tmp_path):
    d = tmp_path / "q"
    d.mkdir()
    _sparse(d / offset_to_file_name(0), MiB)
    _sparse(d / offset_to_file_name(MiB), MiB)
    q = MappedFileQueue(str(d), MiB)
    assert q.load()
    assert _allocated(d / offset_to_file_name(MiB)) >= MiB  # written on next: reserved
    assert _allocated(d / offset_to_file_name(0)) < MiB  # complete: left as it is
    q.shutdown()


def test_a_sparse_last_file_that_cannot_be_reserved_fails_the_load_cleanly(small_disk, caplog):
    disk = small_disk(2)
    d = disk / "q"
    d.mkdir()
    _sparse(d / offset_to_file_name(0), 4 * MiB)
    assert not MappedFileQueue(str(d), 4 * MiB).load()
    assert "cannot reserve the disk blocks" in caplog.text

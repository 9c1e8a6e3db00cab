"""MappedFile / MappedFileQueue and ConsumeQueue on real files."""

from __future__ import annotations

import os
import struct
import time

import pytest

from common.mapped_file import MappedFile, MappedFileError, offset_to_file_name
from common.mapped_file_queue import MappedFileQueue
from store.commit_log import TagsCodeCalculator
from store.consume_queue import ConsumeQueue, ConsumeQueueStore, is_valid_topic_name
from tests.store.store_helpers import make_msg, open_store, small_config


def fill_queue(q: MappedFileQueue, n_bytes: int, chunk: int = 100) -> None:
    written = 0
    while written < n_bytes:
        mf = q.get_last_mapped_file_or_create(0)
        n = min(chunk, mf.remaining(), n_bytes - written)
        assert mf.append(bytes([written % 251]) * n)
        written += n


def test_queue_names_lookup_flush_and_truncate(tmp_path):
    q = MappedFileQueue(str(tmp_path / "q"), 1000)
    fill_queue(q, 3500)
    assert [mf.file_name for mf in q] == [offset_to_file_name(i * 1000) for i in range(4)]
    assert all(os.path.getsize(mf.path) == 1000 for mf in q)
    assert (q.get_min_offset(), q.get_max_offset()) == (0, 3500)
    assert q.find_mapped_file_by_offset(2999).file_from_offset == 2000
    assert q.find_mapped_file_by_offset(3000).file_from_offset == 3000
    assert q.find_mapped_file_by_offset(4000) is None
    assert q.flush_all() == 3500
    assert all(mf.flushed_position == mf.wrote_position for mf in q)
    q.truncate_dirty_files(1500)
    assert len(q) == 2 and q.get_max_offset() == 1500 and q.flushed_where == 1500
    assert not os.path.exists(tmp_path / "q" / offset_to_file_name(2000))
    mf = q.get_last_mapped_file()
    assert bytes(mf.select(400, 100)) == bytes([1400 % 251]) * 100
    assert mf.select(500) is None  # nothing readable past the write position
    q.shutdown()
    q2 = MappedFileQueue(str(tmp_path / "q"), 1000)
    assert q2.load() and len(q2) == 2
    q2.shutdown()
    with open(tmp_path / "q" / offset_to_file_name(2000), "wb") as f:
        f.write(b"short")
    q3 = MappedFileQueue(str(tmp_path / "q"), 1000)
    assert not q3.load()
    with pytest.raises(MappedFileError):
        MappedFile(str(tmp_path / "q" / offset_to_file_name(2000)), 1000, create=False)


def test_delete_expired_by_time_and_offset(tmp_path):
    q = MappedFileQueue(str(tmp_path / "q"), 1000)
    fill_queue(q, 4500)
    old = time.time() - 3600
    for mf in list(q)[:2]:
        os.utime(mf.path, (old, old))
    # only files at least 30 minutes old (oldest first, never the last) go
    assert q.delete_expired_file_by_time(30 * 60 * 1000, 0, 0, False) == 2
    assert q.get_min_offset() == 2000
    assert q.delete_expired_file_by_time(30 * 60 * 1000, 0, 0, False) == 0
    assert q.delete_expired_file_by_time(30 * 60 * 1000, 0, 0, True) == 2  # immediately: all but the last
    assert len(q) == 1
    # by offset: units of 20 bytes whose first int64 is a CommitLog offset
    cq = MappedFileQueue(str(tmp_path / "cq"), 200)
    for i in range(35):
        mf = cq.get_last_mapped_file_or_create(0)
        mf.append(struct.pack(">qiq", i * 100, 100, 0))
    assert cq.delete_expired_file_by_offset(2000, 20) == 2  # last units 900 and 1900 < 2000
    assert cq.get_min_offset() == 400
    assert cq.delete_expired_file_by_offset(2000, 20) == 0


def test_mapped_file_by_time(tmp_path):
    q = MappedFileQueue(str(tmp_path / "q"), 1000)
    fill_queue(q, 2500)
    now = time.time()
    for i, mf in enumerate(q):
        t = now - 300 + i * 100
        os.utime(mf.path, (t, t))
    assert q.get_mapped_file_by_time(int((now - 250) * 1000)).file_from_offset == 1000
    assert q.get_mapped_file_by_time(int((now + 1000) * 1000)).file_from_offset == 2000


def test_consume_queue_prefill_idempotence_and_recover(tmp_path):
    cq = ConsumeQueue("T", 0, str(tmp_path), 200)
    # first unit written at queue offset 13: earlier slots of the file are pre-filled
    assert cq.put_message_position_info(1000, 50, 7, 13)
    assert cq.get_min_offset_in_queue() == 13 and cq.get_max_offset_in_queue() == 14
    f = cq.queue.get_first_mapped_file()
    assert f.file_from_offset == 200
    assert struct.unpack_from(">qiq", f.mm, 0) == (0, 0x7FFFFFFF, 0)
    assert cq.get_unit(13) == (1000, 50, 7)
    # a re-dispatch of already indexed records is ignored
    assert cq.put_message_position_info(1000, 50, 7, 13)
    assert cq.get_max_offset_in_queue() == 14
    for i in range(14, 30):
        assert cq.put_message_position_info(1050 + (i - 14) * 50, 50, i, i)
    cq.flush()
    cq.shutdown()
    cq2 = ConsumeQueue("T", 0, str(tmp_path), 200)
    assert cq2.load()
    cq2.recover()
    assert cq2.get_max_offset_in_queue() == 30
    assert cq2.max_physic_offset == 1050 + 15 * 50 + 50
    cq2.truncate_dirty_logic_files(1050 + 10 * 50)
    assert cq2.get_max_offset_in_queue() == 24
    cq2.correct_min_offset(1100)
    assert cq2.get_min_offset_in_queue() == 15


def test_tags_code_and_delay_delivery_time():
    calc = TagsCodeCalculator([1000, 5000, 10000])
    assert calc("T", {"TAGS": "TagA"}, 0) == 2598919  # "TagA".hashCode()
    assert calc("T", {}, 0) == 0
    assert calc("SCHEDULE_TOPIC_XXXX", {"DELAY": "2", "TAGS": "x"}, 100) == 5100
    assert calc("SCHEDULE_TOPIC_XXXX", {"DELAY": "99"}, 100) == 10100  # clamped to the max level
    assert calc("T", {"TAGS": "标签"}, 0) == 0x6807 * 31 + 0x7B7E  # Java hash over the two UTF-16 units


def test_topic_names_are_validated_before_touching_the_disk(tmp_path):
    for bad in ("", "..", "../x", "a/b", "a\\b", "x" * 128, "a b", "é"):
        assert not is_valid_topic_name(bad)
    for good in ("TopicTest", "%RETRY%group-1", "%DLQ%g", "rmq_sys|x", "x" * 127):
        assert is_valid_topic_name(good)
    store = ConsumeQueueStore(str(tmp_path / "cq"), 200)
    assert store.find_or_create("../escape", 0) is None
    assert store.find_or_create("ok", -1) is None
    assert not os.path.exists(tmp_path / "escape")


def test_delay_topic_units_carry_delivery_time(tmp_path):
    store = open_store(small_config(tmp_path, messageDelayLevel="1s 5s"))
    r = store.put_message(make_msg("SCHEDULE_TOPIC_XXXX", 1, b"d", props={"DELAY": "2", "REAL_TOPIC": "T",
                                                                           "REAL_QID": "0"}))
    store.dispatch_pending()
    unit = store.consume_queues.find("SCHEDULE_TOPIC_XXXX", 1).get_unit(0)
    assert unit[2] == r.append_result.store_timestamp + 5000
    store.shutdown_sync()


def test_prefill_units_never_count_as_dispatched_data(tmp_path):
    cq = ConsumeQueue("T", 0, str(tmp_path), 200)
    assert cq.put_message_position_info(5000, 100, 0, 3)  # pre-fills units 0..2
    cq.truncate_dirty_logic_files(5000)  # the only real unit goes
    assert cq.get_max_offset_in_queue() == 3 and cq.max_physic_offset == -1
    # the record can be dispatched again
    assert cq.put_message_position_info(5000, 100, 0, 3)
    assert cq.get_unit(3) == (5000, 100, 0)
    cq.flush()
    cq.shutdown()
    cq2 = ConsumeQueue("T", 0, str(tmp_path), 200)
    assert cq2.load()
    cq2.recover()
    assert cq2.max_physic_offset == 5100


def test_every_mapped_file_owns_its_blocks(tmp_path):
    # a write through the mapping into a block the disk cannot back is a SIGBUS: blocks are reserved up front
    q = MappedFileQueue(str(tmp_path / "q"), 1 << 20)
    b = q.get_last_mapped_file_or_create(0)
    assert os.path.getsize(b.path) == 1 << 20
    assert os.stat(b.path).st_blocks * 512 >= 1 << 20
    assert not any(n.endswith(".creating") for n in os.listdir(tmp_path / "q"))


def test_warm_ahead_zeroes_only_what_is_not_written_yet(tmp_path):
    path = str(tmp_path / offset_to_file_name(0))
    mf = MappedFile(path, 64 * 1024)
    mf.append(b"\x07" * 5000)
    mf.mm[5000:9000] = b"\xee" * 4000  # garbage past the end (a torn append)
    mf.warm_ahead(6000, ahead=10_000)
    assert mf.warmed_to == 16_000
    with open(path, "rb") as f:
        data = f.read()
    assert data[:5000] == b"\x07" * 5000
    assert data[5000:16_000] == bytes(11_000)
    assert bytes(mf.mm[5000:9000]) == bytes(4000)  # the mapping sees the same page cache
    # nothing to do below the mark; never past the file end
    mf.warm_ahead(10_000, ahead=10_000)
    assert mf.warmed_to == 16_000
    mf.append(b"\x08" * 20_000)
    mf.warm_ahead(60_000, ahead=10_000)
    assert mf.warmed_to == 64 * 1024
    with open(path, "rb") as f:
        data = f.read()
    assert data[5000:25_000] == b"\x08" * 20_000
    mf.close()


def test_commit_log_written_the_same_with_and_without_warming(tmp_path, monkeypatch):
    import store.commit_log as commit_log_module

    monkeypatch.setattr(commit_log_module, "now_ms", lambda: 1_800_000_000_000)
    files = []
    for name, warm in (("warm", True), ("cold", False)):
        s = open_store(small_config(tmp_path / name, mappedFileSizeCommitLog=256 * 1024))
        s.commit_log._warm = warm
        for i in range(400):
            assert s.put_message(make_msg("W", i % 3, bytes([i % 251]) * (i % 200 * 7), keys=f"k{i}")).is_ok()
        if warm:
            assert all(mf.warmed_to > 0 for mf in s.commit_log.mapped_file_queue.mapped_files)
        s.shutdown_sync()
        d = tmp_path / name / "commitlog"
        files.append([(n, (d / n).read_bytes()) for n in sorted(os.listdir(d))])
    assert len(files[0]) > 1
    assert [n for n, _ in files[0]] == [n for n, _ in files[1]]
    # the records are the same; the warmed file has zeros where the cold one has holes
    assert all(a == b for (_, a), (_, b) in zip(files[0], files[1], strict=True))

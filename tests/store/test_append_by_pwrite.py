"""CommitLog appends by pwrite: client batches always, single puts under SYNC_FLUSH; not through the mapping.

Two logs get the same single puts and client batches, one appending by pwrite and one through
its mapping, and must hold the same bytes and give the same answers, rolls included. Other
checks make the mapping of the file being appended read-only: the appends by pwrite still
succeed, so they did not store through it.
"""

from __future__ import annotations

import contextlib
import copy
import mmap
import random

import pytest

from common import speedups
from common.message import MessageExtBatch, MessageExtBrokerInner, properties_to_string
from store.config import FlushDiskType
from store.message_store import PutMessageStatus
from tests.store.store_helpers import open_store, small_config
from tests.store.test_speedups import batch_entry

NOW = 1_800_000_000_000


def single(rnd: random.Random, i: int) -> MessageExtBrokerInner:
    props = {"TAGS": rnd.choice(["a", "b"]), "UNIQ_KEY": f"U{i:08d}"}
    if rnd.random() < 0.3:
        props["KEYS"] = f"k{i}"
    return MessageExtBrokerInner(
        topic=rnd.choice(["TopicA", "TopicB"]), queue_id=rnd.randrange(3), body=rnd.randbytes(rnd.randrange(1500)),
        properties=props, properties_string=properties_to_string(props), born_timestamp=1_700_000_000_000 + i,
        born_host=("127.0.0.1", 5000), store_host=("127.0.0.1", 10911))


def batch(rnd: random.Random, i: int) -> MessageExtBatch:
    body = b"".join(batch_entry(rnd.randbytes(rnd.randrange(300)), f"UNIQ_KEY\x01B{i}-{k}".encode())
                    for k in range(rnd.randrange(1, 12)))
    return MessageExtBatch(topic="TopicC", queue_id=i % 2, body=body, properties={"WAIT": "true"},
                           properties_string="WAIT\x01true", born_timestamp=1_700_000_000_000 + i,
                           born_host=("127.0.0.1", 5000), store_host=("127.0.0.1", 10911))


def open_log(root, sync: bool, pwrite: bool = True):
    cfg = small_config(root, maxMessageSize=8192,
                       flushDiskType=FlushDiskType.SYNC_FLUSH if sync else FlushDiskType.ASYNC_FLUSH)
    log = open_store(cfg).commit_log
    assert log.singles_by_pwrite is sync
    assert log.append_by_pwrite is True
    if not pwrite:  # the reference: everything through the mapping
        log.append_by_pwrite = log.singles_by_pwrite = False
    return log


def answer(r) -> tuple:
    a = r.append_result
    return r.status, r.remark, None if a is None else (a.wrote_offset, a.wrote_bytes, a.msg_id, a.logics_offset,
                                                       a.msg_num)


@pytest.mark.parametrize("sync", [True, False], ids=["SYNC_FLUSH", "ASYNC_FLUSH"])
def test_same_bytes_and_answers_as_through_the_mapping(tmp_path, monkeypatch, sync):
    import store.commit_log as commit_log_module

    monkeypatch.setattr(commit_log_module, "now_ms", lambda: NOW)
    by_fd, mapped = open_log(tmp_path / "fd", sync), open_log(tmp_path / "map", False, pwrite=False)
    rnd = random.Random(11)
    for i in range(1500):
        if rnd.random() < 0.15:
            m = batch(rnd, i)
            got, want = by_fd.put_messages(m), mapped.put_messages(copy.deepcopy(m))
        elif rnd.random() < 0.5:
            m = single(rnd, i)
            got, want = by_fd.put_message(m, NOW), mapped.put_message(copy.deepcopy(m), NOW)
        else:
            ms = [single(rnd, i * 100 + k) for k in range(rnd.randrange(1, 6))]
            got_l, want_l = by_fd.put_message_list(ms), mapped.put_message_list(copy.deepcopy(ms))
            assert [answer(r) for r in got_l] == [answer(r) for r in want_l]
            continue
        assert answer(got) == answer(want), i
    files = by_fd.mapped_file_queue.mapped_files
    assert len(files) > 5  # rolls happened
    assert [bytes(f.mm[:f.wrote_position]) for f in files] == \
        [bytes(f.mm[:f.wrote_position]) for f in mapped.mapped_file_queue.mapped_files]
    assert by_fd.topic_queue_table == mapped.topic_queue_table
    by_fd.shutdown()
    assert by_fd._append_fd == -1


@contextlib.contextmanager
def read_only_mapping(mf):
    """``mf``'s mapping swapped for a read-only one of the same file while inside; yields it."""
    with open(mf.path, "rb") as f:
        read_only = mmap.mmap(f.fileno(), mf.file_size, mmap.MAP_SHARED, mmap.PROT_READ)
    writable, mf.mm = mf.mm, read_only
    try:
        yield read_only
    finally:
        mf.mm = writable
        read_only.close()


@pytest.mark.skipif(not speedups.IS_COMPILED, reason="single puts by pwrite are the compiled twin's")
def test_appends_do_not_store_through_the_mapping(tmp_path):
    log = open_log(tmp_path, True)
    rnd = random.Random(3)
    first = single(rnd, 0)
    assert log.put_message(first, NOW).status is PutMessageStatus.PUT_OK  # caches warm, the file exists
    mf = log.mapped_file_queue.mapped_files[-1]
    with read_only_mapping(mf) as read_only:
        start = mf.wrote_position
        m = copy.deepcopy(first)
        m.body = b"by pwrite"
        r = log.put_message(m, NOW)
        assert r.status is PutMessageStatus.PUT_OK
        b = batch(rnd, 1)
        assert log.put_messages(b).status is PutMessageStatus.PUT_OK
        assert mf.wrote_position > start
        # the mapping sees what the descriptor wrote: one page cache
        assert b"by pwrite" in read_only[start:mf.wrote_position]


def test_async_flush_batches_by_pwrite_singles_through_the_mapping(tmp_path):
    log = open_log(tmp_path, False)
    rnd = random.Random(5)
    assert log.put_message(single(rnd, 0), NOW).status is PutMessageStatus.PUT_OK
    mf = log.mapped_file_queue.mapped_files[-1]
    with read_only_mapping(mf):
        start = mf.wrote_position
        assert log.put_messages(batch(rnd, 1)).status is PutMessageStatus.PUT_OK  # by pwrite
        assert mf.wrote_position > start
        assert log._append_target is mf and log._append_file is None  # singles keep the mapping
        with pytest.raises((TypeError, BufferError)):  # a single put stores through the (now read-only) mapping
            log.put_message(single(rnd, 2), NOW)
    assert log.put_message(single(rnd, 3), NOW).status is PutMessageStatus.PUT_OK
    log.shutdown()
    assert log._append_fd == -1 and log._append_target is None

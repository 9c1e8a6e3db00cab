"""SYNC_FLUSH puts answered by callback from the group commit's round (put_message_list_then).

The broker's send path answers a read's single sends from the round that made them
durable, without a task per read: the callback must come only once the records are on
disk, report FLUSH_DISK_TIMEOUT when the disk hangs (keeping the data), and the reads of
one loop turn must share one fsync. Real store files in tmp_path, the real fsync worker.
"""

from __future__ import annotations

import time

from store.config import FlushDiskType
from store.message_store import PutMessageStatus
from tests.store.store_helpers import make_msg, open_store, small_config
from tests.support import async_wait_until


def _end(result) -> int:
    ar = result.append_result
    return ar.wrote_offset + ar.wrote_bytes


async def test_callback_comes_after_the_fsync_covering_the_list(tmp_path):
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH))
    store.start()
    try:
        seen: list = []

        def done(results):  # what the disk holds when the answer is made
            seen.append((results, store.commit_log.flushed_where))

        assert store.put_message_list_then([make_msg("C", i % 2, b"m%d" % i) for i in range(10)], done)
        assert seen == []  # nothing on disk yet: no answer before the round
        await async_wait_until(lambda: seen, 5, what="the group commit's callback")
        results, flushed = seen[0]
        assert [r.status for r in results] == [PutMessageStatus.PUT_OK] * 10
        assert flushed >= _end(results[-1])
    finally:
        await store.shutdown()
    assert len(seen) == 1


async def test_reads_of_one_loop_turn_share_one_fsync(tmp_path):
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH))
    store.start()
    try:
        # a first round, so that the worker exists and is idle when the "reads" come
        await store.put_message_list_async([make_msg("T", 0, b"warm")])
        before = store.group_commit.fsync_count
        answered: list = []
        assert store.put_message_list_then([make_msg("T", 0, b"r0")], answered.append)
        # still in the same turn: the worker has not been asked yet, so no round starts, however
        # long the turn lasts (asked at once, the first read would have had a round of its own)
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            assert store.group_commit.fsync_count == before
        for i in range(1, 5):  # four more reads handled in the same turn of the loop
            assert store.put_message_list_then([make_msg("T", i % 2, b"r%d" % i)], answered.append)
        await async_wait_until(lambda: len(answered) == 5, 5, what="five answers")
        assert store.group_commit.fsync_count - before == 1
    finally:
        await store.shutdown()


async def test_hanging_disk_answers_flush_disk_timeout_and_keeps_the_data(tmp_path):
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH, syncFlushTimeout=100))
    store.start()
    gc = store.group_commit
    gc.hold(True)
    try:
        seen: list = []
        assert store.put_message_list_then([make_msg("H", 0, b"one"), make_msg("H", 0, b"two")], seen.append)
        await async_wait_until(lambda: seen, 5, what="the timeout answer")
        results = seen[0]
        assert [r.status for r in results] == [PutMessageStatus.FLUSH_DISK_TIMEOUT] * 2
        assert store.commit_log.flushed_where < _end(results[-1])
        gc.hold(False)
        await async_wait_until(lambda: store.commit_log.flushed_where >= _end(results[-1]), 5,
                               what="the held round after the disk came back")
        store.dispatch_pending()
        assert store.get_message("g", "H", 0, 0, 32).message_count == 2
    finally:
        gc.hold(False)
        await store.shutdown()


async def test_wait_false_list_is_answered_at_once(tmp_path):
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH))
    store.start()
    try:
        seen: list = []
        msgs = [make_msg("W", 0, b"nowait%d" % i, props={"WAIT": "false"}) for i in range(3)]
        assert store.put_message_list_then(msgs, seen.append)
        assert len(seen) == 1 and [r.status for r in seen[0]] == [PutMessageStatus.PUT_OK] * 3
        end = _end(seen[0][-1])
        await async_wait_until(lambda: store.commit_log.flushed_where >= end, 5, what="flush of WAIT=false puts")
    finally:
        await store.shutdown()


async def test_a_failing_callback_does_not_keep_the_round_from_the_others(tmp_path):
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH))
    store.start()
    try:
        answered: list = []

        def broken(results):
            raise RuntimeError("a broken waiter")

        assert store.put_message_list_then([make_msg("F", 0, b"a")], broken)
        assert store.put_message_list_then([make_msg("F", 0, b"b")], answered.append)
        await async_wait_until(lambda: answered, 5, what="the second waiter's answer")
        assert answered[0][0].status is PutMessageStatus.PUT_OK
    finally:
        await store.shutdown()


async def test_async_flush_store_leaves_the_waits_to_the_coroutine(tmp_path):
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.ASYNC_FLUSH))
    store.start()
    try:
        before = store.commit_log.get_max_offset()
        assert store.put_message_list_then([make_msg("A", 0, b"x")], lambda results: None) is False
        assert store.commit_log.get_max_offset() == before  # nothing appended: the caller uses the coroutine
    finally:
        await store.shutdown()


async def test_sync_flush_commit_log_fills_pages_ahead_of_its_writer(tmp_path):
    # the zeros ahead reach the disk once for many rounds (see CommitLog._warm): the group
    # commits after them write data pages only
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH))
    store.start()
    try:
        results = await store.put_message_list_async([make_msg("Z", 0, b"z" * 100)])
        mf = store.commit_log.mapped_file_queue.get_last_mapped_file()
        assert mf.warmed_to > mf.wrote_position >= _end(results[0]) - mf.file_from_offset
    finally:
        await store.shutdown()

"""SYNC_FLUSH group commit (store/flush_service.GroupCommitService) on a real store in tmp_path.

The send path relies on it: one fsync shared by every writer queued before it,
writers answered once the data covering them is on disk, and a hanging disk
answered with FLUSH_DISK_TIMEOUT after syncFlushTimeout, without losing the data.
A hang is simulated by holding the group-commit worker before its next fsync.
"""

from __future__ import annotations

import asyncio

from store.config import FlushDiskType
from store.message_store import PutMessageStatus
from tests.store.store_helpers import make_msg, open_store, small_config
from tests.support import async_wait_until


async def test_list_put_waits_once_and_is_on_disk(tmp_path):
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH))
    store.start()
    try:
        before = store.group_commit.fsync_count
        results = await store.put_message_list_async([make_msg("G", i % 2, b"m%d" % i) for i in range(50)])
        assert [r.status for r in results] == [PutMessageStatus.PUT_OK] * 50
        last = results[-1].append_result
        assert store.commit_log.flushed_where >= last.wrote_offset + last.wrote_bytes
        assert store.group_commit.fsync_count - before == 1
    finally:
        await store.shutdown()


async def test_hanging_fsync_times_out_writers_then_recovers(tmp_path):
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH, syncFlushTimeout=100))
    store.start()
    gc = store.group_commit
    gc.hold(True)  # the disk hangs until the test lets it go
    try:
        r1, r2 = await asyncio.gather(store.put_message_async(make_msg("H", 0, b"one")),
                                      store.put_message_async(make_msg("H", 0, b"two")))
        assert r1.status is r2.status is PutMessageStatus.FLUSH_DISK_TIMEOUT
        assert store.commit_log.flushed_where < r2.append_result.wrote_offset + r2.append_result.wrote_bytes
        gc.hold(False)
        r3 = await store.put_message_async(make_msg("H", 0, b"three"))
        assert r3.status is PutMessageStatus.PUT_OK
        assert store.commit_log.flushed_where >= r3.append_result.wrote_offset + r3.append_result.wrote_bytes
        # nothing was lost: the timed-out messages are stored in order
        store.dispatch_pending()
        got = store.get_message("g", "H", 0, 0, 32)
        assert got.message_count == 3
    finally:
        gc.hold(False)
        await store.shutdown()


async def test_wait_false_put_is_flushed_without_waiters(tmp_path):
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH))
    store.start()
    try:
        r = await store.put_message_async(make_msg("W", 0, b"nowait", props={"WAIT": "false"}))
        assert r.status is PutMessageStatus.PUT_OK
        end = r.append_result.wrote_offset + r.append_result.wrote_bytes
        # no writer waits: the wakeup alone starts a round that flushes it
        await async_wait_until(lambda: store.commit_log.flushed_where >= end, 5, what="flush of a WAIT=false put")
    finally:
        await store.shutdown()

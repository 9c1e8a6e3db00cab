"""Running store: SYNC_FLUSH group commit, flush timeouts, ASYNC flush, reput with the arriving listener."""

from __future__ import annotations

import asyncio
import os

from common.message import MessageExtBatch, encode_batch_body
from store.config import BrokerRole, FlushDiskType
from store.message_store import GetMessageStatus, PutMessageStatus
from tests.store.store_helpers import make_msg, open_store, small_config
from tests.support import async_wait_until


async def test_sync_flush_group_commit_shares_fsyncs(tmp_path):
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH))
    store.start()
    try:
        results = await asyncio.gather(*(store.put_message_async(make_msg("S", i % 4, os.urandom(500)))
                                         for i in range(64)))
        assert all(r.status is PutMessageStatus.PUT_OK for r in results)
        flushed = store.commit_log.flushed_where
        for r in results:
            assert flushed >= r.append_result.wrote_offset + r.append_result.wrote_bytes
        # concurrent writers shared fsyncs
        assert 1 <= store.group_commit.fsync_count < 64
        batch = MessageExtBatch(topic="S", queue_id=0, body=encode_batch_body([make_msg(body=b"b1"),
                                                                               make_msg(body=b"b2")]))
        r = await store.put_messages_async(batch)
        assert r.is_ok() and store.commit_log.flushed_where >= r.append_result.wrote_offset + r.append_result.wrote_bytes
        # the physic timestamp of the checkpoint follows the flushed data
        assert store.checkpoint.physic_msg_timestamp == r.append_result.store_timestamp
    finally:
        await store.shutdown()


async def test_sync_flush_timeout_reports_but_keeps_message(tmp_path):
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH, syncFlushTimeout=0))
    store.start()
    try:
        r = await store.put_message_async(make_msg("S", 0, b"slow disk"))
        assert r.status is PutMessageStatus.FLUSH_DISK_TIMEOUT
        assert r.append_result is not None
        await async_wait_until(store.now_dispatched, 5)
        assert store.look_message_by_offset(r.append_result.wrote_offset).body == b"slow disk"
        # WAIT=false does not wait for the disk at all
        r = await store.put_message_async(make_msg("S", 0, b"nowait", props={"WAIT": "false"}))
        assert r.status is PutMessageStatus.PUT_OK
    finally:
        await store.shutdown()


async def test_async_flush_reaches_the_end_and_reput_notifies(tmp_path):
    arrived = []
    store = open_store(small_config(tmp_path, flushIntervalCommitLog=10, flushCommitLogThoroughInterval=20,
                                    flushIntervalConsumeQueue=10),
                       arriving_listener=lambda *a: arrived.append(a))
    store.start()
    try:
        rs = [await store.put_message_async(make_msg("A", 1, b"x" * 10, tags="TagZ")) for _ in range(5)]
        assert all(r.is_ok() for r in rs)
        await async_wait_until(lambda: len(arrived) == 5, 5, what="arriving notifications")
        topic, qid, next_off, tags_code, store_ts, props = arrived[-1]
        assert (topic, qid, next_off) == ("A", 1, 5)
        assert props["TAGS"] == "TagZ" and store_ts == rs[-1].append_result.store_timestamp
        end = store.get_max_phy_offset()
        await async_wait_until(lambda: store.commit_log.flushed_where >= end, 5, what="async flush")
        got = store.get_message("g", "A", 1, 0, 32)
        assert got.status is GetMessageStatus.FOUND and got.message_count == 5
    finally:
        await store.shutdown()
    assert not (tmp_path / "abort").exists()


async def test_slave_and_shutdown_refuse_puts_and_replication_appends(tmp_path):
    master = open_store(small_config(tmp_path / "m", mappedFileSizeCommitLog=4096))
    for i in range(40):
        assert master.put_message(make_msg("R", 0, bytes([i]) * 150)).is_ok()
    master.dispatch_pending()
    slave = open_store(small_config(tmp_path / "s", mappedFileSizeCommitLog=4096, brokerRole=BrokerRole.SLAVE))
    assert slave.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    slave.start()
    try:
        # replicate in odd-sized chunks, as an HA stream would
        offset = 0
        while offset < master.get_max_phy_offset():
            data = master.get_commit_log_data(offset)
            chunk = bytes(data[:777])
            data.release()
            assert slave.append_to_commit_log(offset, chunk)
            offset += len(chunk)
        assert not slave.append_to_commit_log(offset + 5, b"gap")
        await async_wait_until(lambda: slave.get_max_offset_in_queue("R", 0) == 40, 5, what="slave dispatch")
        r = slave.get_message("g", "R", 0, 0, 32)
        assert [bytes(b) for b in r.buffers] == [bytes(b) for b in master.get_message("g", "R", 0, 0, 32).buffers]
    finally:
        await slave.shutdown()
        master.shutdown_sync()
    assert master.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_store_services_run_on_uvloop(tmp_path):
    uvloop = __import__("uvloop")

    async def scenario():
        store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH))
        store.start()
        try:
            rs = await asyncio.gather(*(store.put_message_async(make_msg("U", 0, b"u%d" % i)) for i in range(32)))
            assert all(r.status is PutMessageStatus.PUT_OK for r in rs)
            await async_wait_until(store.now_dispatched, 5)
            assert store.get_max_offset_in_queue("U", 0) == 32
        finally:
            await store.shutdown()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(scenario())
    assert not (tmp_path / "abort").exists()


async def test_put_message_distribute_time_counts_puts_by_latency(tmp_path):
    import re

    from store.config import BrokerRole
    from store.default_message_store import PUT_TIME_BUCKETS

    store = open_store(small_config(tmp_path, brokerRole=BrokerRole.SYNC_MASTER))

    async def slow_replicas(end: int) -> PutMessageStatus:
        await asyncio.sleep(0.06)  # a replica that answers after 60 ms
        return PutMessageStatus.PUT_OK

    store.start()
    try:
        for i in range(5):
            assert store.put_message(make_msg("D", 0, b"fast %d" % i)).is_ok()
        store.replica_waiter = slow_replicas
        r = await store.put_message_async(make_msg("D", 0, b"waits for the replicas"))
        assert r.status is PutMessageStatus.PUT_OK
        results = await store.put_message_list_async([make_msg("D", 1, b"a"), make_msg("D", 1, b"b")])
        assert all(x.status is PutMessageStatus.PUT_OK for x in results)
        text = store.runtime_info()["putMessageDistributeTime"]
        assert re.fullmatch(r"(\[[^\]]+\]:\d+ ){13}", text), text
        counts = [int(part.split(":")[1]) for part in text.split()]
        assert [part.split(":")[0] for part in text.split()] == list(PUT_TIME_BUCKETS)
        assert sum(counts) == 8
        assert counts[0] == 5  # the plain appends
        assert sum(counts[3:]) == 3  # the waiting ones: 60 ms or more
        assert int(store.runtime_info()["putMessageEntireTimeMax"]) >= 60
    finally:
        await store.shutdown()


async def test_reput_dispatches_on_the_wakeup_not_the_idle_timer(tmp_path):
    """The reput waits on a future that an append's wakeup settles: with the idle look-up pushed to a
    minute, puts are still dispatched at once, a burst of wakeups in one loop turn costs one pass, and
    shutdown ends the waiting task."""
    from store.reput_message_service import ReputMessageService

    def slow_idle_reput(*args, **kwargs):
        return ReputMessageService(*args, idle_ms=60_000, **kwargs)

    store = open_store(small_config(tmp_path), reput_factory=slow_idle_reput)
    store.start()
    try:
        for rounds in range(3):  # the waiter is made again after every pass
            for i in range(4):  # four appends, four wakeups, in one loop turn
                assert store.put_message(make_msg("W", 0, b"m%d" % i)).is_ok()
            t0 = asyncio.get_running_loop().time()
            await async_wait_until(store.now_dispatched, 5, what="dispatch after a wakeup")
            assert asyncio.get_running_loop().time() - t0 < 5  # not the 60 s idle timer
            assert store.get_max_offset_in_queue("W", 0) == 4 * (rounds + 1)
            # back to waiting on its future: the next round's appends must wake it from there
            await async_wait_until(lambda: store.reput._waiter is not None, 5, what="reput waiting")
        reput_task = next(t for t in store._tasks if t.get_name() == "reput")
    finally:
        await store.shutdown()
    assert reput_task.done()

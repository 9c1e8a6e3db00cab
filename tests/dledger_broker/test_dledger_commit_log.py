"""DLedgerCommitLog in one process: real files under tmp_path, a real DLedger member on a loopback port.

A single-member group elects itself, so the store-level rules can be checked directly:
entry layout, committed-end reads, dispatch over entries, the put-status mapping and the
upgrade of a normal store (dividedCommitlogOffset).
"""

from __future__ import annotations

import os

from common.message import MessageExtBrokerInner, decode_message
from dledger.protocol import DLedgerResponseCode as C
from store.config import MessageStoreConfig
from store.default_message_store import DefaultMessageStore
from store.dledger_commit_log import DLedgerCommitLog, put_status_for
from store.message_store import GetMessageStatus, PutMessageStatus
from tests.support import async_wait_until, free_port

FILE = 64 * 1024


def store_config(root, dledger: bool) -> MessageStoreConfig:
    sc = MessageStoreConfig()
    sc.storePathRootDir = str(root)
    sc.mappedFileSizeCommitLog = FILE
    sc.mappedFileSizeConsumeQueue = 6000
    if dledger:
        sc.enableDLegerCommitLog = True
        sc.dLegerGroup = "g"
        sc.dLegerSelfId = "n0"
        sc.dLegerPeers = f"n0-127.0.0.1:{free_port()}"
    return sc


def msg(body: bytes, topic: str = "T") -> MessageExtBrokerInner:
    return MessageExtBrokerInner(topic=topic, queue_id=0, body=body, born_host=("127.0.0.1", 5000),
                                 store_host=("127.0.0.1", 10911))


async def open_store(sc) -> DefaultMessageStore:
    s = DefaultMessageStore(sc, store_host=("127.0.0.1", 10911))
    assert s.load()
    s.start()
    if sc.enableDLegerCommitLog:
        await async_wait_until(lambda: s.commit_log.is_leader, 10, what="single member elected")
    return s


def bodies(s: DefaultMessageStore, topic: str = "T") -> list[bytes]:
    out = []
    offset = 0
    while True:
        r = s.get_message("g", topic, 0, offset, 32)
        if r.status is not GetMessageStatus.FOUND:
            return out
        for buf in r.buffers:
            out.append(decode_message(buf).body)
        r.release()
        offset = r.next_begin_offset


def test_put_status_mapping():
    assert put_status_for(C.SUCCESS) is PutMessageStatus.PUT_OK
    for code in (C.NOT_LEADER, C.INCONSISTENT_LEADER, C.LEADER_NOT_READY, C.DISK_FULL):
        assert put_status_for(code) is PutMessageStatus.SERVICE_NOT_AVAILABLE
    for code in (C.WAIT_QUORUM_ACK_TIMEOUT, C.LEADER_PENDING_FULL):
        assert put_status_for(code) is PutMessageStatus.OS_PAGECACHE_BUSY
    assert put_status_for(C.TERM_CHANGED) is PutMessageStatus.UNKNOWN_ERROR


async def test_records_are_entry_bodies_with_patched_offsets(tmp_path):
    s = await open_store(store_config(tmp_path, True))
    try:
        assert isinstance(s.commit_log, DLedgerCommitLog)
        results = [await s.put_message_async(msg(b"body-%d" % i)) for i in range(30)]
        assert all(r.status is PutMessageStatus.PUT_OK for r in results)
        storage = s.commit_log.storage
        for i, r in enumerate(results):
            off = r.append_result.wrote_offset
            assert r.append_result.logics_offset == i
            assert r.append_result.msg_id.endswith(f"{off:016X}")
            # the record is the body of a DLedger entry whose header sits 48 bytes before it
            head = storage.select_data(off - 48, 48)
            assert int.from_bytes(head[24:32], "big") == off - 48  # entry pos
            m = s.look_message_by_offset(off)
            assert m.body == b"body-%d" % i and m.commit_log_offset == off and m.queue_offset == i
        await async_wait_until(lambda: s.get_max_offset_in_queue("T", 0) == 30, 5, what="dispatched")
        assert bodies(s) == [b"body-%d" % i for i in range(30)]
        # the synchronous put (internal writers) appends at once and is dispatched once committed
        r = s.put_message(msg(b"internal"))
        assert r.status is PutMessageStatus.PUT_OK and r.append_result.logics_offset == 30
        await async_wait_until(lambda: s.get_max_offset_in_queue("T", 0) == 31, 5, what="sync put dispatched")
        # nothing beyond the committed end is readable
        end = s.commit_log.get_max_offset()
        assert s.commit_log.get_message(end, 1) is None
        # the runtime info names the DLedger group, role, term and commit lag (the dashboard shows them)
        info = s.runtime_info()
        assert info["dLedgerRole"] == "LEADER" and info["dLedgerLeader"] == info["dLedgerSelfId"]
        assert info["dLedgerGroup"] and int(info["dLedgerTerm"]) >= 0 and info["dLedgerCommitLag"] == "0"
        assert int(info["dLedgerCommittedIndex"]) == int(info["dLedgerEndIndex"]) >= 30
    finally:
        await s.shutdown()
    # restart: the consume queues and the DLedger log agree, queue offsets continue
    s = await open_store(s.config)
    try:
        await async_wait_until(lambda: s.get_max_offset_in_queue("T", 0) == 31, 5, what="recovered")
        r = await s.put_message_async(msg(b"after-restart"))
        assert r.status is PutMessageStatus.PUT_OK and r.append_result.logics_offset == 31
    finally:
        await s.shutdown()



async def test_list_put_waits_once_and_answers_each_message(tmp_path):
    s = await open_store(store_config(tmp_path, True))
    try:
        cl = s.commit_log
        first = await s.put_message_async(msg(b"one"))
        assert first.status is PutMessageStatus.PUT_OK
        big = msg(b"x" * (s.config.maxMessageSize + 1))  # refused alone, before any append
        batch = [msg(b"l0"), msg(b"l1", topic="U"), big, msg(b"l2")]
        before = cl.storage.ledger_end_index
        results = await cl.put_message_list_async(batch)
        assert [r.status for r in results] == [PutMessageStatus.PUT_OK, PutMessageStatus.PUT_OK,
                                              PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PUT_OK]
        assert cl.storage.ledger_end_index == before + 3 and cl.committed_index() >= before + 3
        assert [results[i].append_result.logics_offset for i in (0, 1, 3)] == [1, 0, 2]
        offsets = [results[i].append_result.wrote_offset for i in (0, 1, 3)]
        assert offsets == sorted(offsets)
        for i, off in zip((0, 1, 3), offsets, strict=True):
            assert s.look_message_by_offset(off).body == batch[i].body
        await async_wait_until(lambda: s.get_max_offset_in_queue("T", 0) == 3, 5, what="dispatched")
        assert bodies(s) == [b"one", b"l0", b"l2"] and bodies(s, "U") == [b"l1"]
    finally:
        await s.shutdown()


async def test_store_list_put_in_dledger_mode_is_one_replicated_list(tmp_path):
    """DefaultMessageStore.put_message_list_async (the broker's per-read path) in DLedger mode."""
    s = await open_store(store_config(tmp_path, True))
    try:
        cl = s.commit_log
        before_index = cl.storage.ledger_end_index
        big = msg(b"x" * (s.config.maxMessageSize + 1))
        results = await s.put_message_list_async([msg(b"a"), big, msg(b"b"), msg(b"c", topic="U")])
        assert [r.status for r in results] == [PutMessageStatus.PUT_OK, PutMessageStatus.MESSAGE_ILLEGAL,
                                              PutMessageStatus.PUT_OK, PutMessageStatus.PUT_OK]
        assert cl.storage.ledger_end_index == before_index + 3 and cl.committed_index() >= before_index + 3
        await async_wait_until(lambda: s.get_max_offset_in_queue("T", 0) == 2, 5, what="dispatched")
        assert bodies(s) == [b"a", b"b"] and bodies(s, "U") == [b"c"]
        await s.shutdown()
        results = await s.put_message_list_async([msg(b"late")])
        assert results[0].status is PutMessageStatus.SERVICE_NOT_AVAILABLE  # refused before any append
    finally:
        await s.shutdown()


async def test_not_leader_refuses_and_keeps_queue_offsets(tmp_path):
    sc = store_config(tmp_path, True)
    # a member of a three-node group whose peers never answer: it never leads
    sc.dLegerPeers = ";".join(f"n{i}-127.0.0.1:{free_port()}" for i in range(3))
    s = DefaultMessageStore(sc)
    assert s.load()
    s.start()
    try:
        await async_wait_until(lambda: s.commit_log.server.core is not None, 5, what="member started")
        r = await s.put_message_async(msg(b"x"))
        assert r.status is PutMessageStatus.OS_PAGECACHE_BUSY  # DLedger could not start the append
        rs = await s.commit_log.put_message_list_async([msg(b"y"), msg(b"z")])
        assert [r.status for r in rs] == [PutMessageStatus.OS_PAGECACHE_BUSY] * 2
        assert s.commit_log.topic_queue_table.get("T-0", 0) == 0
        assert s.put_message(msg(b"y")).status is PutMessageStatus.OS_PAGECACHE_BUSY
    finally:
        await s.shutdown()


async def test_upgrade_keeps_serving_the_old_commit_log(tmp_path):
    # a normal store first
    s = DefaultMessageStore(store_config(tmp_path, False))
    assert s.load()
    s.start()
    old = []
    for i in range(40):
        r = await s.put_message_async(msg(b"legacy-%03d" % i + b"." * 2000))
        assert r.is_ok()
        old.append(r.append_result.wrote_offset)
    await s.shutdown()
    legacy_files = sorted(os.listdir(tmp_path / "commitlog"))
    last_start = int(legacy_files[-1])
    # the same store in DLedger mode
    sc = store_config(tmp_path, True)
    s = await open_store(sc)
    try:
        cl = s.commit_log
        assert cl.divided_commitlog_offset == last_start + FILE
        assert sorted(os.listdir(cl.dledger_config.data_path()))[0] == f"{last_start + FILE:020d}"
        new = [await s.put_message_async(msg(b"raft-%03d" % i)) for i in range(10)]
        assert all(r.is_ok() and r.append_result.wrote_offset > cl.divided_commitlog_offset for r in new)
        await async_wait_until(lambda: s.get_max_offset_in_queue("T", 0) == 50, 5, what="dispatched")
        want = [b"legacy-%03d" % i + b"." * 2000 for i in range(40)] + [b"raft-%03d" % i for i in range(10)]
        assert bodies(s) == want
        assert s.look_message_by_offset(old[3]).body.startswith(b"legacy-003")
        assert new[0].append_result.logics_offset == 40
    finally:
        await s.shutdown()
    # later starts: the divided offset is the first DLedger data file, both parts still served
    s = await open_store(sc)
    try:
        assert s.commit_log.divided_commitlog_offset == last_start + FILE
        await async_wait_until(lambda: s.get_max_offset_in_queue("T", 0) == 50, 5, what="recovered")
        assert bodies(s) == want
    finally:
        await s.shutdown()


async def test_batch_put_is_one_entry_per_message(tmp_path):
    """A client batch in DLedger mode: each message its own entry, consecutive queue offsets (the batch
    encoder writes into the scratch buffer that becomes the entry bodies)."""
    from common.message import MessageExtBatch, encode_batch_body

    s = await open_store(store_config(tmp_path, True))
    try:
        cl = s.commit_log
        before = cl.storage.ledger_end_index
        body = encode_batch_body([MessageExtBrokerInner(topic="B", body=b"b%d" % i) for i in range(3)])
        batch = MessageExtBatch(topic="B", queue_id=0, born_host=("127.0.0.1", 5000),
                                store_host=("127.0.0.1", 10911), body=body)
        r = await s.put_messages_async(batch)
        assert r.status is PutMessageStatus.PUT_OK and r.append_result.msg_num == 3
        assert cl.storage.ledger_end_index == before + 3
        offsets = [int(m[-16:], 16) for m in r.append_result.msg_id.split(",")]
        for i, off in enumerate(offsets):
            m = s.look_message_by_offset(off)
            assert m.body == b"b%d" % i and m.queue_offset == i and m.commit_log_offset == off
        await async_wait_until(lambda: s.get_max_offset_in_queue("B", 0) == 3, 5, what="dispatched")
        assert bodies(s, "B") == [b"b0", b"b1", b"b2"]
    finally:
        await s.shutdown()

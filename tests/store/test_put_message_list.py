"""DefaultMessageStore.put_message_list(_async): many single messages in one call, per-message results."""

from __future__ import annotations

import itertools
import os

import store.commit_log as commit_log_module
import store.default_message_store as store_module
from common.message import decode_message
from store.config import BrokerRole, FlushDiskType
from store.message_store import GetMessageStatus, PutMessageStatus
from tests.store.store_helpers import make_msg, open_store, small_config


def _mixed(big: int):
    """Legal messages with illegal ones between them, and the status each illegal one must get."""
    return [
        (make_msg("L", 0, b"first", keys="a"), PutMessageStatus.PUT_OK),
        (make_msg("bad/topic", 0, b"x"), PutMessageStatus.MESSAGE_ILLEGAL),
        (make_msg("L", 0, b"second", keys="b"), PutMessageStatus.PUT_OK),
        (make_msg("L", 0, os.urandom(big)), PutMessageStatus.MESSAGE_ILLEGAL),  # over maxMessageSize
        (make_msg("L", 1, b"q1"), PutMessageStatus.PUT_OK),
        (make_msg("L", 0, b"nul", props={"p": "a\x00b"}), PutMessageStatus.MESSAGE_ILLEGAL),
        (make_msg("L", -1, b"negative queue"), PutMessageStatus.MESSAGE_ILLEGAL),
        (make_msg("L", 0, b"big props", props={"p": "v" * 33000}), PutMessageStatus.PROPERTIES_SIZE_EXCEEDED),
        (make_msg("L", 0, b"third", keys="c"), PutMessageStatus.PUT_OK),
    ]


def test_mixed_list_gives_put_message_results_and_the_same_bytes(tmp_path, monkeypatch):
    # one store time for everything, so single puts write what the list writes
    monkeypatch.setattr(commit_log_module, "now_ms", lambda: 1_800_000_000_000)
    monkeypatch.setattr(store_module, "now_ms", lambda: 1_800_000_000_000)
    a = open_store(small_config(tmp_path / "a", maxMessageSize=1000))
    cases = _mixed(2000)
    results = a.put_message_list([m for m, _ in cases])
    assert [r.status for r in results] == [want for _, want in cases]
    ok = [r for r in results if r.status is PutMessageStatus.PUT_OK]
    assert all(r.append_result is not None for r in ok)
    assert all(r.remark for r in results if r.status is not PutMessageStatus.PUT_OK)
    # queue offsets consecutive per queue, commit-log offsets contiguous, one store time
    assert [r.append_result.logics_offset for r in ok] == [0, 1, 0, 2]
    for x, y in itertools.pairwise(ok):
        assert y.append_result.wrote_offset == x.append_result.wrote_offset + x.append_result.wrote_bytes
    assert len({r.append_result.store_timestamp for r in ok}) == 1
    assert a.put_message_times_total == 4
    assert a.put_message_size_total == sum(r.append_result.wrote_bytes for r in ok)

    # the same messages one by one: identical records
    b = open_store(small_config(tmp_path / "b", maxMessageSize=1000))
    singles = [b.put_message(m) for m, _ in _mixed(2000)]
    assert [r.status for r in singles] == [r.status for r in results]
    assert [r.remark for r in singles] == [r.remark for r in results]
    a.dispatch_pending()
    b.dispatch_pending()
    for s in (a, b):
        got = s.get_message("g", "L", 0, 0, 10)
        assert [decode_message(buf).body for buf in got.buffers] == [b"first", b"second", b"third"]
        got.release()
    a.shutdown_sync()
    b.shutdown_sync()
    ca = (tmp_path / "a" / "commitlog" / "00000000000000000000").read_bytes()
    cb = (tmp_path / "b" / "commitlog" / "00000000000000000000").read_bytes()
    assert ca == cb


def test_list_rolls_over_at_a_file_boundary(tmp_path):
    s = open_store(small_config(tmp_path, mappedFileSizeCommitLog=4096))
    msgs = [make_msg("R", i % 2, os.urandom(300), keys=f"k{i}") for i in range(40)]
    results = s.put_message_list(msgs)
    assert all(r.status is PutMessageStatus.PUT_OK for r in results)
    assert len(os.listdir(s.config.commit_log_dir)) >= 3
    for q in (0, 1):
        assert [r.append_result.logics_offset for r in results[q::2]] == list(range(20))
    # a record never straddles two files
    for r in results:
        ar = r.append_result
        assert ar.wrote_offset // 4096 == (ar.wrote_offset + ar.wrote_bytes - 1) // 4096
    s.dispatch_pending()
    for q in (0, 1):
        got = s.get_message("g", "R", q, 0, 32)
        bodies = []
        while got.status is GetMessageStatus.FOUND:
            bodies += [decode_message(b).body for b in got.buffers]
            nxt = got.next_begin_offset
            got.release()
            got = s.get_message("g", "R", q, nxt, 32)
        assert bodies == [m.body for m in msgs[q::2]]
    assert s.query_message("R", "k17", 5, 0, 2**62).buffers
    s.shutdown_sync()


def test_refused_list_on_a_slave(tmp_path):
    s = open_store(small_config(tmp_path, brokerRole=BrokerRole.SLAVE))
    results = s.put_message_list([make_msg("S", 0, b"x"), make_msg("S", 1, b"y")])
    assert [r.status for r in results] == [PutMessageStatus.SERVICE_NOT_AVAILABLE] * 2
    assert s.get_max_phy_offset() == 0
    assert s.put_message_list([]) == []
    s.shutdown_sync()


async def test_async_list_waits_once_for_the_sync_flush(tmp_path):
    s = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH))
    s.start()
    try:
        msgs = [make_msg("F", i % 3, os.urandom(200)) for i in range(50)]
        msgs.insert(7, make_msg("bad topic", 0, b"x"))
        results = await s.put_message_list_async(msgs)
        assert results[7].status is PutMessageStatus.MESSAGE_ILLEGAL
        ok = [r for i, r in enumerate(results) if i != 7]
        assert all(r.status is PutMessageStatus.PUT_OK for r in ok)
        last = ok[-1].append_result
        assert s.commit_log.flushed_where >= last.wrote_offset + last.wrote_bytes
        # one group commit for the list, not one per message
        assert s.group_commit.fsync_count <= 2
    finally:
        await s.shutdown()


async def test_async_list_reports_a_flush_timeout_to_the_waiting_messages_only(tmp_path):
    s = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH, syncFlushTimeout=0))
    s.start()
    try:
        msgs = [make_msg("F", 0, b"waits"), make_msg("F", 0, b"no wait", props={"WAIT": "false"}),
                make_msg("F", 0, b"waits too")]
        results = await s.put_message_list_async(msgs)
        assert [r.status for r in results] == [PutMessageStatus.FLUSH_DISK_TIMEOUT, PutMessageStatus.PUT_OK,
                                               PutMessageStatus.FLUSH_DISK_TIMEOUT]
        # stored all the same
        s.dispatch_pending()
        assert s.get_max_offset_in_queue("F", 0) == 3
    finally:
        await s.shutdown()

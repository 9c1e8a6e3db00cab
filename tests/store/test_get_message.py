"""get_message: every GetMessageStatus with RocketMQ's next-begin-offset rules; lookups by time/offset."""

from __future__ import annotations

from common.message import decode_message
from common.util import java_string_hash
from store.config import BrokerRole
from store.message_store import GetMessageStatus
from tests.store.store_helpers import make_msg, open_store, small_config


class TagFilter:
    """A MessageFilter matching one tag by hash (CQ) and by the TAGS property (CommitLog)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.code = java_string_hash(tag)

    def is_matched_by_consume_queue(self, tags_code, cq_ext_unit=None) -> bool:
        return tags_code == self.code

    def is_matched_by_commit_log(self, msg_buffer, properties) -> bool:
        return decode_message(msg_buffer).properties.get("TAGS") == self.tag


def fill(store, n, topic="T", queue_id=0, body_size=100):
    out = []
    for i in range(n):
        r = store.put_message(make_msg(topic, queue_id, bytes([i % 256]) * body_size, tags="even" if i % 2 == 0
                                       else "odd", keys=f"key{i}"))
        assert r.is_ok()
        out.append(r.append_result)
    store.dispatch_pending()
    return out


def test_found_counts_limits_and_next_offsets(tmp_path):
    store = open_store(small_config(tmp_path))
    fill(store, 50)
    r = store.get_message("g", "T", 0, 0, 10)
    assert r.status is GetMessageStatus.FOUND and r.message_count == 10
    assert r.queue_offsets == list(range(10)) and r.next_begin_offset == 10
    assert (r.min_offset, r.max_offset) == (0, 50)
    # maxTransferCountOnMessageInMemory (32) caps a pull
    r = store.get_message("g", "T", 0, 0, 1000)
    assert r.message_count == 32 and r.next_begin_offset == 32
    assert r.buffer_total_size == sum(len(b) for b in r.buffers)
    # the byte cap applies too
    store.config.maxTransferBytesOnMessageInMemory = 3 * len(r.buffers[0])
    r = store.get_message("g", "T", 0, 5, 1000)
    assert r.message_count == 3 and r.next_begin_offset == 8
    store.shutdown_sync()


def test_empty_and_overflow_statuses(tmp_path):
    store = open_store(small_config(tmp_path))
    r = store.get_message("g", "Nothing", 0, 5, 32)
    assert r.status is GetMessageStatus.NO_MESSAGE_IN_QUEUE and r.next_begin_offset == 0
    r = store.get_message("g", "../evil", 0, 0, 32)
    assert r.status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    fill(store, 5)
    r = store.get_message("g", "T", 0, 5, 32)
    assert r.status is GetMessageStatus.OFFSET_OVERFLOW_ONE and r.next_begin_offset == 5
    r = store.get_message("g", "T", 0, 9, 32)
    assert r.status is GetMessageStatus.OFFSET_OVERFLOW_BADLY and r.next_begin_offset == 5  # max offset (4.9.7)
    store.shutdown_sync()


def test_filter_no_matched_and_skips(tmp_path):
    store = open_store(small_config(tmp_path))
    fill(store, 20)
    r = store.get_message("g", "T", 0, 0, 32, TagFilter("odd"))
    assert r.status is GetMessageStatus.FOUND
    assert r.queue_offsets == list(range(1, 20, 2))
    assert all(decode_message(b).properties["TAGS"] == "odd" for b in r.buffers)
    r = store.get_message("g", "T", 0, 0, 32, TagFilter("none"))
    assert r.status is GetMessageStatus.NO_MATCHED_MESSAGE and r.next_begin_offset == 20 and not r.buffers
    store.shutdown_sync()


def test_offset_too_small_after_expired_files_and_message_was_removing(tmp_path):
    # 4 KiB commit-log files hold ~25 records of 100 bytes; consume-queue files hold 10 units
    store = open_store(small_config(tmp_path, mappedFileSizeCommitLog=4096, mappedFileSizeConsumeQueue=200))
    res = fill(store, 100)
    first_file_msgs = sum(1 for a in res if a.wrote_offset < 4096)
    # delete the first commit-log file only: the consume queue still points into it
    assert store.commit_log.delete_expired_file(0, 0, 0, True) >= 1
    remaining_min = store.get_min_phy_offset()
    assert remaining_min > 0
    r = store.get_message("g", "T", 0, 0, 5)
    assert r.status is GetMessageStatus.MESSAGE_WAS_REMOVING
    assert r.next_begin_offset == 10  # the whole CQ file pointed into the deleted file
    assert not r.buffers
    # now the consume queue catches up: its expired files go, min offset corrected
    store.delete_expired_consume_queue_files()
    min_off = store.get_min_offset_in_queue("T", 0)
    assert min_off > 0
    first_kept = next(i for i, a in enumerate(res) if a.wrote_offset >= remaining_min)
    assert min_off <= first_kept
    r = store.get_message("g", "T", 0, 0, 5)
    assert r.status is GetMessageStatus.OFFSET_TOO_SMALL and r.next_begin_offset == min_off
    r = store.get_message("g", "T", 0, first_kept, 5)
    assert r.status is GetMessageStatus.FOUND and r.queue_offsets[0] == first_kept
    r = store.get_message("g", "T", 0, 1000, 5)
    assert r.status is GetMessageStatus.OFFSET_OVERFLOW_BADLY and r.next_begin_offset == 100  # min != 0 -> max
    assert first_file_msgs > 0
    store.shutdown_sync()


class _LiveRole:
    """The store's live role (a broker's RoleState in production), switched by the test."""

    def __init__(self, role: BrokerRole) -> None:
        self.switch(role)

    def switch(self, role: BrokerRole) -> None:
        self.broker_role = role
        self.is_slave = role is BrokerRole.SLAVE


def test_offset_found_null_and_slave_keeps_offsets(tmp_path):
    role = _LiveRole(BrokerRole.ASYNC_MASTER)
    store = open_store(small_config(tmp_path, mappedFileSizeConsumeQueue=200), role=role)
    fill(store, 30)
    cq = store.consume_queues.find("T", 0)
    # CQ files gone but the min offset not corrected yet
    assert cq.queue.delete_expired_file_by_offset(10**12, 20) == 2
    r = store.get_message("g", "T", 0, 3, 5)
    assert r.status is GetMessageStatus.OFFSET_FOUND_NULL and r.next_begin_offset == 10
    role.switch(BrokerRole.SLAVE)
    r = store.get_message("g", "T", 0, 3, 5)
    assert r.status is GetMessageStatus.OFFSET_FOUND_NULL and r.next_begin_offset == 3  # slaves do not correct
    store.config.offsetCheckInSlave = True
    assert store.get_message("g", "T", 0, 3, 5).next_begin_offset == 10
    store.shutdown_sync()


def test_lookups_by_time_offset_and_key(tmp_path):
    store = open_store(small_config(tmp_path))
    res = fill(store, 40)
    ts = [a.store_timestamp for a in res]
    for i in (0, 7, 39):
        q = store.get_offset_in_queue_by_time("T", 0, ts[i])
        assert ts[q] == ts[i]
    assert store.get_offset_in_queue_by_time("T", 0, ts[-1] + 100000) == 39
    assert store.get_offset_in_queue_by_time("T", 0, 0) == 0
    assert store.get_offset_in_queue_by_time("Nope", 0, ts[0]) == 0
    assert store.get_message_store_timestamp("T", 0, 5) == ts[5]
    assert store.get_earliest_message_time("T", 0) == ts[0]
    assert store.get_commit_log_offset_in_queue("T", 0, 6) == res[6].wrote_offset
    m = store.look_message_by_offset(res[6].wrote_offset)
    assert m.body == bytes([6]) * 100 and m.msg_id == res[6].msg_id
    assert store.look_message_by_offset(store.get_max_phy_offset() + 10) is None
    q = store.query_message("T", "key17", 32, 0, 2**63 - 1)
    assert [decode_message(b).commit_log_offset for b in q.buffers] == [res[17].wrote_offset]
    assert q.index_last_update_phyoffset == res[-1].wrote_offset
    info = store.runtime_info()
    assert info["commitLogMaxOffset"] == str(store.get_max_phy_offset())
    assert info["dispatchBehindBytes"] == "0"
    store.shutdown_sync()


def test_delete_and_clean_unused_topics(tmp_path):
    cfg = small_config(tmp_path)
    store = open_store(cfg)
    fill(store, 3, topic="Keep")
    fill(store, 3, topic="Drop")
    fill(store, 3, topic="SCHEDULE_TOPIC_XXXX")
    assert store.clean_unused_topic({"Keep"}) == 1
    assert store.get_max_offset_in_queue("Drop", 0) == 0
    assert store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 0) == 3
    assert store.delete_topics({"Keep"}) == 1
    assert store.get_message("g", "Keep", 0, 0, 5).status is GetMessageStatus.NO_MESSAGE_IN_QUEUE
    # new messages to a deleted topic start again at queue offset 0
    assert store.put_message(make_msg("Keep")).append_result.logics_offset == 0
    store.shutdown_sync()


def _raw_record(phys: int, qoff: int, store_ts: int, body: bytes = b"b") -> bytes:
    import zlib

    from store.commit_log import RECORD_V1

    rec = dict(totalSize=0, magicCode=-626843481, bodyCRC=zlib.crc32(body) & 0x7FFFFFFF, queueId=0, flag=0,
               queueOffset=qoff, physicalOffset=phys, sysFlag=0, bornTimestamp=1,
               bornHost=dict(address=b"\x7f\x00\x00\x01", port=1), storeTimestamp=store_ts,
               storeHost=dict(address=b"\x7f\x00\x00\x01", port=2), reconsumeTimes=0, preparedTransactionOffset=0,
               body=body, topic="Timed", properties=b"TAGS\x01t")
    rec["totalSize"] = len(RECORD_V1.build(rec))
    return RECORD_V1.build(rec)


def test_offset_by_time_picks_exact_or_nearer_neighbour(tmp_path):
    store = open_store(small_config(tmp_path))
    times = [1000, 2000, 3000, 5000, 9000]
    phys = 0
    for q, t in enumerate(times):
        raw = _raw_record(phys, q, t)
        assert store.append_to_commit_log(phys, raw)
        phys += len(raw)
    store.dispatch_pending()
    by_time = lambda ts: store.get_offset_in_queue_by_time("Timed", 0, ts)  # noqa: E731
    assert [by_time(t) for t in times] == [0, 1, 2, 3, 4]
    assert by_time(500) == 0 and by_time(99999) == 4
    assert by_time(3900) == 2 and by_time(4100) == 3  # nearer neighbour
    assert by_time(7100) == 4 and by_time(6900) == 3
    assert store.get_message_store_timestamp("Timed", 0, 3) == 5000
    assert store.get_earliest_message_time("Timed", 0) == 1000
    store.shutdown_sync()

"""CommitLog writing: exact record bytes (checked by an independent reader), roll-over, limits, batches, IPv6."""

from __future__ import annotations

import os
import struct
import zlib

import pytest

from common.message import (
    MESSAGE_MAGIC_CODE_V2,
    BatchEntry,
    MessageExtBatch,
    MessageSysFlag,
    decode_message,
    decode_offset_msg_id,
    encode_batch_body,
    properties_to_string,
    string_to_properties,
)
from common.util import java_string_hash
from store.commit_log import RECORD_V1, RECORD_V2, record_length
from store.message_store import GetMessageStatus, PutMessageStatus
from tests.store.record_reader import read_records
from tests.store.store_helpers import make_msg, open_store, small_config


def commitlog_files(cfg):
    d = cfg.commit_log_dir
    return [(int(n), open(os.path.join(d, n), "rb").read()) for n in sorted(os.listdir(d))]


def test_records_match_the_spec_layout_and_roll_over_with_blank(tmp_path):
    cfg = small_config(tmp_path, mappedFileSizeCommitLog=4096)
    store = open_store(cfg)
    sent = []
    for i in range(60):
        born = ("::1", 5000 + i) if i % 7 == 3 else ("10.1.2.3", 5000 + i)
        st = ("fd00::2", 10911) if i % 11 == 5 else ("127.0.0.1", 10911)
        m = make_msg("TopicA", i % 3, os.urandom(i * 7 % 300), tags=f"t{i % 4}", keys=f"k{i} x{i}",
                     props={"city": "Zürich", "都市": "東京"}, born_host=born, store_host=st, flag=i)
        r = store.put_message(m)
        assert r.status is PutMessageStatus.PUT_OK
        sent.append((m, r.append_result))
    store.dispatch_pending()
    files = commitlog_files(cfg)
    assert len(files) > 3
    records = []
    for start, data in files:
        assert len(data) == 4096
        records.extend(read_records(data, start))
        if start != files[-1][0]:
            # every full file ends with a BLANK record covering the rest of the file
            last_end = max(r["physicalOffset"] + r["totalSize"] for r in records if r["physicalOffset"] < start + 4096)
            pos = last_end - start
            assert struct.unpack_from(">ii", data, pos) == (4096 - pos, -875286124)
    assert len(records) == len(sent)
    next_qoff = {}
    for rec, (m, ar) in zip(records, sent, strict=True):
        assert rec["physicalOffset"] == ar.wrote_offset and rec["totalSize"] == ar.wrote_bytes
        assert rec["body"] == m.body and rec["topic"] == "TopicA" and rec["flag"] == m.flag
        assert rec["queueOffset"] == next_qoff.get(m.queue_id, 0) == ar.logics_offset
        next_qoff[m.queue_id] = rec["queueOffset"] + 1
        assert rec["properties"] == m.properties_string
        assert rec["bornHost"] == (m.born_host[0], m.born_host[1])
        assert rec["storeHost"] == m.store_host
        assert bool(rec["sysFlag"] & MessageSysFlag.BORNHOST_V6) == (":" in m.born_host[0])
        assert bool(rec["sysFlag"] & MessageSysFlag.STOREHOSTADDRESS_V6) == (":" in m.store_host[0])
        assert rec["storeTimestamp"] == ar.store_timestamp
        assert rec["totalSize"] == record_length(len(m.body), 6, len(m.properties_string.encode()),
                                                 ":" in m.born_host[0], ":" in m.store_host[0])
        assert decode_offset_msg_id(ar.msg_id) == (m.store_host, ar.wrote_offset)
    # the consume queues point at the same records with the Java tag hashes
    for q in range(3):
        res = store.get_message("g", "TopicA", q, 0, 100)
        assert res.status is GetMessageStatus.FOUND
        for b in res.buffers:
            m = decode_message(b)
            assert m.queue_id == q
    cq = store.consume_queues.find("TopicA", 0)
    off, size, tags = cq.get_unit(0)
    assert (off, size) == (records[0]["physicalOffset"], records[0]["totalSize"])
    assert tags == java_string_hash("t0")
    store.shutdown_sync()


def test_roll_over_exactly_at_file_boundary(tmp_path):
    size = 4096
    cfg = small_config(tmp_path, mappedFileSizeCommitLog=size)
    store = open_store(cfg)
    base = record_length(0, len("TopicA"), 0)
    # fill so that exactly `base + gap` bytes are left, then probe the 8-byte blank rule
    first = store.put_message(make_msg(body=b"a" * (size - base - 200 - base), tags=None)).append_result
    assert first.wrote_offset == 0
    left = size - first.wrote_bytes  # = 200 + base
    fits = store.put_message(make_msg(body=b"b" * (left - base - 8), tags=None)).append_result
    assert fits.wrote_offset == first.wrote_bytes  # record + 8 == remaining: still fits
    assert fits.wrote_offset + fits.wrote_bytes == size - 8
    nxt = store.put_message(make_msg(body=b"", tags=None)).append_result
    assert nxt.wrote_offset == size  # only 8 bytes left: BLANK and next file
    data = open(os.path.join(cfg.commit_log_dir, "00000000000000000000"), "rb").read()
    assert struct.unpack_from(">ii", data, size - 8) == (8, -875286124)
    # a record that misses by one byte rolls too
    r = store.put_message(make_msg(body=b"c" * (size - 2 * base - 8 + 1), tags=None)).append_result
    assert r.wrote_offset == 2 * size
    assert sorted(os.listdir(cfg.commit_log_dir)) == [f"{i * size:020d}" for i in range(3)]
    store.dispatch_pending()
    res = store.get_message("g", "TopicA", 0, 0, 10)
    assert [decode_message(b).commit_log_offset for b in res.buffers] == [0, first.wrote_bytes, size, 2 * size]
    store.shutdown_sync()


def test_limits_give_clear_statuses_and_store_nothing(tmp_path):
    cfg = small_config(tmp_path, maxMessageSize=1000, mappedFileSizeCommitLog=8192)
    store = open_store(cfg)
    ok = store.put_message(make_msg(body=b"x"))
    assert ok.is_ok()
    before = store.get_max_phy_offset()
    cases = [
        (make_msg(body=b"x" * 1001), PutMessageStatus.MESSAGE_ILLEGAL),
        (make_msg(topic="T" * 128), PutMessageStatus.MESSAGE_ILLEGAL),
        (make_msg(topic="../../etc"), PutMessageStatus.MESSAGE_ILLEGAL),
        (make_msg(topic="a/b"), PutMessageStatus.MESSAGE_ILLEGAL),
        (make_msg(queue_id=-1), PutMessageStatus.MESSAGE_ILLEGAL),
        (make_msg(props={"big": "v" * 33000}), PutMessageStatus.PROPERTIES_SIZE_EXCEEDED),
    ]
    for m, status in cases:
        r = store.put_message(m)
        assert r.status is status and r.remark
        assert not r.is_ok()
    assert store.get_max_phy_offset() == before
    assert not os.path.exists(os.path.join(cfg.consume_queue_dir, ".."  , "etc"))
    store.dispatch_pending()
    assert sorted(os.listdir(cfg.consume_queue_dir)) == ["TopicA"]
    # a record larger than a commit-log file can never be stored
    cfg2 = small_config(tmp_path / "b", mappedFileSizeCommitLog=512)
    s2 = open_store(cfg2)
    assert s2.put_message(make_msg(body=b"y" * 500)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert s2.put_message(make_msg(body=b"y" * 100)).is_ok()
    s2.shutdown_sync()
    store.shutdown_sync()


def test_transaction_types_and_queue_offsets(tmp_path):
    store = open_store(small_config(tmp_path))
    a = store.put_message(make_msg(topic="Tx", body=b"n0")).append_result
    p = store.put_message(make_msg(topic="Tx", body=b"prep", sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE))
    rb = store.put_message(make_msg(topic="Tx", body=b"rb", sys_flag=MessageSysFlag.TRANSACTION_ROLLBACK_TYPE))
    c = make_msg(topic="Tx", body=b"commit", sys_flag=MessageSysFlag.TRANSACTION_COMMIT_TYPE)
    c.prepared_transaction_offset = p.append_result.wrote_offset
    c = store.put_message(c).append_result
    assert (a.logics_offset, p.append_result.logics_offset, rb.append_result.logics_offset, c.logics_offset) == (
        0, 0, 0, 1)
    store.dispatch_pending()
    res = store.get_message("g", "Tx", 0, 0, 10)
    got = [decode_message(b) for b in res.buffers]
    assert [m.body for m in got] == [b"n0", b"commit"]  # PREPARED/ROLLBACK have no consume-queue unit
    assert got[1].prepared_transaction_offset == p.append_result.wrote_offset
    assert store.look_message_by_offset(p.append_result.wrote_offset).body == b"prep"
    store.shutdown_sync()


def test_batch_is_consecutive_records_with_batch_properties(tmp_path):
    store = open_store(small_config(tmp_path, mappedFileSizeCommitLog=4096))
    store.put_message(make_msg(topic="B", body=b"x" * 3000))  # the batch must roll to a new file whole
    entries = [BatchEntry(body=f"m{i}".encode() * (i + 1), flag=i, properties={"UNIQ_KEY": f"U{i}", "KEYS": f"k{i}"})
               for i in range(10)]
    batch = MessageExtBatch(topic="B", queue_id=0, body=encode_batch_body(entries),
                            properties={"CLUSTER": "C1", "WAIT": "true"}, born_timestamp=5,
                            born_host=("::1", 7), store_host=("127.0.0.1", 10911))
    batch.properties_string = properties_to_string(batch.properties)
    r = store.put_messages(batch)
    assert r.is_ok()
    ar = r.append_result
    assert ar.msg_num == 10 and ar.logics_offset == 1 and ar.wrote_offset == 4096
    ids = ar.msg_id.split(",")
    assert len(ids) == 10
    store.dispatch_pending()
    res = store.get_message("g", "B", 0, 1, 32)
    msgs = [decode_message(b) for b in res.buffers]
    assert [m.queue_offset for m in msgs] == list(range(1, 11))
    assert {m.store_timestamp for m in msgs} == {ar.store_timestamp}
    for i, m in enumerate(msgs):
        assert m.body == entries[i].body and m.flag == i and m.born_host == ("::1", 7)
        assert m.properties_string == f"UNIQ_KEY\x01U{i}\x02KEYS\x01k{i}\x02CLUSTER\x01C1\x02WAIT\x01true"
        assert m.msg_id == ids[i]
        assert m.body_crc == zlib.crc32(m.body) & 0x7FFFFFFF
    assert [decode_message(b).commit_log_offset for b in store.query_message("B", "k3", 10, 0, 2**62).buffers] == [
        msgs[3].commit_log_offset]
    # malformed, delayed and transactional batches are refused and store nothing
    end = store.get_max_phy_offset()
    bad = MessageExtBatch(topic="B", body=b"\x00\x00\x00\x10garbage")
    assert store.put_messages(bad).status is PutMessageStatus.MESSAGE_ILLEGAL
    delayed = MessageExtBatch(topic="B", body=encode_batch_body(entries[:1]), properties={"DELAY": "2"})
    assert store.put_messages(delayed).status is PutMessageStatus.MESSAGE_ILLEGAL
    tx = MessageExtBatch(topic="B", body=encode_batch_body(entries[:1]),
                         sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
    assert store.put_messages(tx).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.get_max_phy_offset() == end
    store.shutdown_sync()


def test_construct_declaration_agrees_with_struct_codec(tmp_path):
    store = open_store(small_config(tmp_path))
    for born, st in [(("1.2.3.4", 9), ("127.0.0.1", 10911)), (("::1", 9), ("fd00::2", 10911))]:
        m = make_msg(body=b"payload", props={"a": "b"}, born_host=born, store_host=st)
        ar = store.put_message(m).append_result
        raw = bytes(store.select_one_message_by_offset(ar.wrote_offset))
        parsed = RECORD_V1.parse(raw)
        ours = decode_message(raw)
        assert parsed.totalSize == ours.store_size == len(raw)
        assert parsed.queueOffset == ours.queue_offset and parsed.physicalOffset == ours.commit_log_offset
        assert parsed.storeTimestamp == ours.store_timestamp and parsed.body == ours.body
        assert parsed.topic == ours.topic and parsed.properties.decode() == ours.properties_string
        assert RECORD_V1.build(parsed) == raw
    # a 5.x v2 record (int16 topic length, long topic) built by construct decodes with our reader
    long_topic = "L" * 200
    props = b"KEYS\x01k1"
    v2 = dict(totalSize=0, magicCode=MESSAGE_MAGIC_CODE_V2, bodyCRC=zlib.crc32(b"b2") & 0x7FFFFFFF, queueId=1,
              flag=0, queueOffset=3, physicalOffset=0, sysFlag=0, bornTimestamp=1,
              bornHost=dict(address=b"\x7f\x00\x00\x01", port=1), storeTimestamp=2,
              storeHost=dict(address=b"\x7f\x00\x00\x01", port=2), reconsumeTimes=0, preparedTransactionOffset=0,
              body=b"b2", topic=long_topic, properties=props)
    size = len(RECORD_V2.build(v2))
    v2["totalSize"] = size
    raw2 = RECORD_V2.build(v2)
    m2 = decode_message(raw2)
    assert m2.topic == long_topic and m2.body == b"b2" and m2.queue_offset == 3 and m2.properties == {"KEYS": "k1"}
    req = store.commit_log.check_message_and_return_size(memoryview(raw2), 0, 0, True)
    assert req.success and req.msg_size == size and req.topic == long_topic and req.keys == "k1"
    store.shutdown_sync()


def test_properties_codec_rules():
    assert properties_to_string({"a": "1", "b": "2"}) == "a\x011\x02b\x012"
    assert properties_to_string({"a": None, "b": "2"}) == "b\x012"
    assert string_to_properties("a\x011\x02b\x012\x02") == {"a": "1", "b": "2"}
    assert string_to_properties("\x01x\x02y\x01\x02ok\x01v\x02ok\x01w") == {"ok": "w"}
    assert string_to_properties("") == {}


@pytest.mark.parametrize("host", [("127.0.0.1", 10911), ("fd00::2", 20911)])
def test_offset_msg_id_roundtrip(host):
    from common.message import create_offset_msg_id

    mid = create_offset_msg_id(host, 123456789)
    assert len(mid) == (32 if "." in host[0] else 56) and mid == mid.upper()
    assert decode_offset_msg_id(mid) == (host, 123456789)
    with pytest.raises(ValueError):
        decode_offset_msg_id("ABC")


def test_store_fills_its_own_host_when_the_message_has_none(tmp_path):
    from store.default_message_store import DefaultMessageStore

    store = DefaultMessageStore(small_config(tmp_path), store_host=("fd00::9", 30911))
    assert store.load()
    m = make_msg(body=b"h")
    m.store_host = None
    r = store.put_message(m)
    assert r.is_ok()
    got = store.look_message_by_offset(r.append_result.wrote_offset)
    assert got.store_host == ("fd00::9", 30911)
    assert got.sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6
    assert decode_offset_msg_id(r.append_result.msg_id) == (("fd00::9", 30911), r.append_result.wrote_offset)
    store.shutdown_sync()


def test_properties_that_could_not_be_recovered_are_refused(tmp_path):
    store = open_store(small_config(tmp_path))
    end = store.get_max_phy_offset()
    assert store.put_message(make_msg(props={"a": "x\x00y"})).status is PutMessageStatus.MESSAGE_ILLEGAL
    nul = encode_batch_body([BatchEntry(body=b"b", properties={"a": "x\x00y"})])
    assert store.put_messages(MessageExtBatch(topic="B", body=nul)).status is PutMessageStatus.MESSAGE_ILLEGAL
    # hand-made batch entry whose properties are not UTF-8
    bad_utf8 = struct.pack(">iiiii", 20 + 1 + 2 + 4, 0, 0, 0, 1) + b"b" + struct.pack(">h", 4) + b"a\x01\xff\xfe"
    r = store.put_messages(MessageExtBatch(topic="B", body=bad_utf8))
    assert r.status is PutMessageStatus.MESSAGE_ILLEGAL and "UTF-8" in r.remark
    assert store.get_max_phy_offset() == end
    store.shutdown_sync()


def test_batch_body_and_pull_body_codecs_roundtrip(tmp_path):
    from common.message import MessageDecodeError, decode_batch_body, decode_messages

    entries = [BatchEntry(body=os.urandom(i * 3), flag=i, properties={"k": f"v{i}", "UNIQ_KEY": f"U{i}"})
               for i in range(5)]
    raw = encode_batch_body(entries)
    back = decode_batch_body(raw)
    assert [(e.body, e.flag, e.properties) for e in back] == [(e.body, e.flag, e.properties) for e in entries]
    for cut in (1, 7, len(raw) - 1):
        with pytest.raises(MessageDecodeError):
            decode_batch_body(raw[:cut])
    store = open_store(small_config(tmp_path))
    for i in range(4):
        store.put_message(make_msg(body=b"m%d" % i))
    store.dispatch_pending()
    pulled = store.get_message("g", "TopicA", 0, 0, 32)
    msgs = decode_messages(pulled.body())
    assert [m.body for m in msgs] == [b"m0", b"m1", b"m2", b"m3"]
    assert [m.queue_offset for m in msgs] == pulled.queue_offsets
    store.shutdown_sync()

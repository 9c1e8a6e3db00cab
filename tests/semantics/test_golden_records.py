"""Records the real RocketMQ 4.9.7 broker re-wrote (golden store) are rebuilt byte for byte by our code.

For each broker-written kind we take its source record from the golden commit
log, run our transformation and compare with what Java stored: delayed
delivery, commit, check-back copy, op marker, send-back retry and dead letter,
plus delayOffset.json.
"""

from __future__ import annotations

import json
import shutil

import pytest

from broker.processor.send_back_processor import build_send_back_message
from broker.schedule_message_service import DelayOffsetManager, message_timeup, rewrite_delayed_message
from broker.transaction.transactional_message_bridge import TransactionalMessageBridge
from broker.transaction.transactional_message_service import (
    TransactionalMessageService,
    end_message_transaction,
)
from broker.transaction.transactional_message_util import java_properties_string, parse_op_body
from common.message import MessageConst, MessageExtBrokerInner, decode_message, decode_offset_msg_id
from common.util import java_string_hash
from tests.support import GOLDEN_STORE

GOLDEN = GOLDEN_STORE

pytestmark = pytest.mark.skipif(not GOLDEN.exists(), reason="golden RocketMQ 4.9.7 store not available")


@pytest.fixture(scope="module")
def golden():
    with open(GOLDEN / "manifest.jsonl", encoding="utf-8") as f:
        recs = [json.loads(line) for line in f if line.strip()]
    with open(GOLDEN / "consumequeue.jsonl", encoding="utf-8") as f:
        units = [json.loads(line) for line in f if line.strip()]
    cache: dict[str, bytes] = {}

    def record(r):
        path = GOLDEN / "store" / r["file"]
        data = cache.get(r["file"]) or cache.setdefault(r["file"], path.read_bytes())
        return decode_message(data, r["filePosition"])

    by_offset = {r["physicalOffset"]: r for r in recs}
    tags_by_offset = {u["commitLogOffset"]: u["tagsCode"] for u in units}
    return recs, record, by_offset, tags_by_offset


def _kind(recs, kind):
    out = [r for r in recs if r.get("kind") == kind]
    assert out, kind
    return out


def test_delay_delivered_records(golden):
    recs, record, _, tags = golden
    scheduled = {r["uniqKey"]: r for r in _kind(recs, "delay-scheduled")}
    for r in _kind(recs, "delay-delivered"):
        src = record(scheduled[r["uniqKey"]])
        inner = message_timeup(src)
        assert inner.topic == r["topic"] and inner.queue_id == r["queueId"]
        assert inner.properties_string == r["propertiesRaw"]
        assert (inner.flag, inner.sys_flag, inner.born_timestamp, inner.reconsume_times) == (
            r["flag"], r["sysFlag"], r["bornTimestamp"], r["reconsumeTimes"])
        assert inner.tags_code == tags[r["physicalOffset"]]
        assert MessageConst.DELAY not in inner.properties  # no second delay
        # a delivered record is not delayed again by the rewrite
        assert rewrite_delayed_message(inner, 18).topic == r["topic"]


def test_delay_rewrite_order_matches_java(golden):
    recs, record, _, _ = golden
    for r in _kind(recs, "delay-scheduled"):
        ext = record(r)
        props = dict(ext.properties)
        del props[MessageConst.REAL_TOPIC], props[MessageConst.REAL_QID]
        msg = MessageExtBrokerInner(topic=ext.properties[MessageConst.REAL_TOPIC],
                                    queue_id=int(ext.properties[MessageConst.REAL_QID]), properties=props)
        out = rewrite_delayed_message(msg, 18)
        assert out.topic == "SCHEDULE_TOPIC_XXXX" and out.queue_id == r["queueId"]
        assert out.properties_string == r["propertiesRaw"]


def test_committed_records(golden):
    recs, record, by_offset, tags = golden
    halves = _kind(recs, "tx-half") + _kind(recs, "tx-half-checkback-copy")
    for r in _kind(recs, "tx-committed"):
        half_rec = by_offset[r["preparedTransactionOffset"]]
        assert half_rec in halves
        inner = end_message_transaction(record(half_rec), r["preparedTransactionOffset"])
        assert (inner.topic, inner.queue_id, inner.sys_flag, inner.prepared_transaction_offset) == (
            r["topic"], r["queueId"], r["sysFlag"], r["preparedTransactionOffset"])
        assert inner.properties_string == r["propertiesRaw"]
        assert inner.tags_code == tags[r["physicalOffset"]]


def test_check_back_copies_and_op_markers(golden):
    recs, record, _, _ = golden
    originals = {}
    for r in _kind(recs, "tx-half"):
        originals.setdefault(r["uniqKey"], r)
    svc = TransactionalMessageService(bridge=None)  # type: ignore[arg-type]
    for r in _kind(recs, "tx-half-checkback-copy"):
        ext = record(originals[r["uniqKey"]])
        assert not svc._need_discard(ext, 15)  # the first check: TRANSACTION_CHECK_TIMES=1
        inner = TransactionalMessageBridge.renew_half_message_inner(ext)
        assert inner.properties_string == r["propertiesRaw"]
        assert (inner.topic, inner.queue_id, inner.sys_flag) == (r["topic"], r["queueId"], r["sysFlag"])
    half_offsets = {r["queueOffset"] for r in _kind(recs, "tx-half") + _kind(recs, "tx-half-checkback-copy")}
    for r in _kind(recs, "tx-op"):
        op = record(r)
        assert parse_op_body(op.body) in half_offsets
        assert java_properties_string({MessageConst.TAGS: "d", MessageConst.WAIT: "true"}) == r["propertiesRaw"]
        assert op.queue_id == 0


def test_send_back_retry_and_dead_letter(golden):
    recs, record, by_offset, tags = golden
    for r in _kind(recs, "retry-scheduled"):
        ext = record(r)
        _, origin_off = decode_offset_msg_id(ext.properties[MessageConst.ORIGIN_MESSAGE_ID])
        src = record(by_offset[origin_off])
        msg = build_send_back_message(src, "%RETRY%golden-retry-group", 0, 0, dead_letter=False)
        msg = rewrite_delayed_message(msg, 18)
        assert (msg.topic, msg.queue_id, msg.reconsume_times) == ("SCHEDULE_TOPIC_XXXX", 2, 1)
        assert msg.properties_string == r["propertiesRaw"]
        assert msg.tags_code == (java_string_hash(src.properties["TAGS"]) if "TAGS" in src.properties else 0)
    (d,) = _kind(recs, "dlq")
    dead = record(d)
    retried = [r for r in _kind(recs, "retry-delivered") if r["uniqKey"] == d["uniqKey"]]
    src = record(retried[0])
    msg = build_send_back_message(src, "%DLQ%golden-retry-group", 0, 0, dead_letter=True)
    assert msg.properties_string == d["propertiesRaw"] and msg.reconsume_times == dead.reconsume_times
    assert rewrite_delayed_message(msg, 18).topic == "%DLQ%golden-retry-group"  # DELAY=0: not delayed
    assert msg.tags_code == tags[d["physicalOffset"]]


def test_delay_offset_file_round_trip(tmp_path):
    shutil.copy(GOLDEN / "store" / "config" / "delayOffset.json", tmp_path / "delayOffset.json")
    m = DelayOffsetManager(str(tmp_path / "delayOffset.json"))
    assert m.load() and m.table == {1: 11, 2: 8, 3: 5}
    assert m.encode().encode() == (GOLDEN / "store" / "config" / "delayOffset.json").read_bytes()
    m.table[4] = 2
    m.persist()
    again = DelayOffsetManager(str(tmp_path / "delayOffset.json"))
    assert again.load() and again.table == {1: 11, 2: 8, 3: 5, 4: 2}
    assert (tmp_path / "delayOffset.json.bak").exists()

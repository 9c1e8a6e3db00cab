"""ExpressionMessageFilter: tag hash codes per consume-queue unit, SQL92 on CommitLog records.

Records come from the store written by the real RocketMQ 4.9.7 broker
(read-only; copied to tmp_path when a store is opened on it).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from broker.filter import (
    BloomFilter,
    CommitLogDispatcherCalcBitMap,
    ConsumerFilterManager,
    ExpressionForRetryMessageFilter,
    ExpressionMessageFilter,
    FilterNotSupportedError,
    FilterParseError,
    build_message_filter,
    compile_expression,
    decode_record_properties,
    parse_pull_subscription,
)
from broker.filter.bloom_filter import all_bits_set
from common.filter import SubscriptionData, build_subscription_data
from common.util import java_string_hash
from tests.support import GOLDEN_STORE

GOLDEN = GOLDEN_STORE
needs_golden = pytest.mark.skipif(not GOLDEN.exists(), reason="golden RocketMQ 4.9.7 store not available")


def tag_filter(sub_string):
    return build_message_filter(build_subscription_data("T", sub_string))


def sql_filter(expression, *, group="g", topic="T", manager=None, retry=False):
    manager = manager or ConsumerFilterManager(None)
    assert manager.register_topic(topic, group, expression, "SQL92", 1)
    sub = build_subscription_data(topic, expression, "SQL92")
    return build_message_filter(
        sub,
        manager.get(topic, group),
        enable_property_filter=True,
        filter_support_retry=retry,
        consumer_filter_manager=manager,
    )


# -- TAG ----------------------------------------------------------------------------------


def test_tag_star_matches_every_code():
    f = tag_filter("*")
    for code in (0, java_string_hash("TagA"), -1, 2**31 - 1, None):
        assert f.is_matched_by_consume_queue(code)
    assert f.is_matched_by_commit_log(None, None)


def test_tag_filter_by_hash_code():
    f = tag_filter(" TagA ||TagB ")
    assert f.is_matched_by_consume_queue(java_string_hash("TagA"))
    assert f.is_matched_by_consume_queue(java_string_hash("TagB"))
    assert not f.is_matched_by_consume_queue(java_string_hash("TagC"))
    assert not f.is_matched_by_consume_queue(0)  # a message without tags
    # the broker never compares strings: the second pass always passes
    assert f.is_matched_by_commit_log(b"", {"TAGS": "TagC"})


def test_tag_missing_or_illegal_code_matches():
    f = tag_filter("TagA")
    assert f.is_matched_by_consume_queue(None)
    # an unresolved consume-queue ext address is not a tag hash
    assert f.is_matched_by_consume_queue(-(2**63) + 100)


def test_tag_hash_collisions_pass_the_broker():
    assert java_string_hash("Aa") == java_string_hash("BB")
    assert tag_filter("Aa").is_matched_by_consume_queue(java_string_hash("BB"))
    # a tag whose hash is 0 also takes untagged messages (code 0)
    assert java_string_hash("pollinating sandboxes") == 0
    assert tag_filter("pollinating sandboxes").is_matched_by_consume_queue(0)


def test_no_subscription_or_class_filter_matches_all():
    f = ExpressionMessageFilter(None)
    assert f.is_matched_by_consume_queue(123) and f.is_matched_by_commit_log(None, {})
    sub = build_subscription_data("T", "TagA")
    sub.classFilterMode = True
    f = ExpressionMessageFilter(sub)
    assert f.is_matched_by_consume_queue(java_string_hash("Other"))


# -- SQL92 ------------------------------------------------------------------------------------


def test_sql_filter_passes_consume_queue_and_evaluates_properties():
    f = sql_filter("a > 5 AND color IN ('red', 'blue')")
    assert f.is_matched_by_consume_queue(java_string_hash("anything"))
    assert f.is_matched_by_consume_queue(None)
    assert f.is_matched_by_commit_log(None, {"a": "6", "color": "red"})
    assert not f.is_matched_by_commit_log(None, {"a": "5", "color": "red"})
    assert not f.is_matched_by_commit_log(None, {"a": "x", "color": "red"})  # evaluation error
    assert not f.is_matched_by_commit_log(None, {"color": "red"})  # null: not TRUE


def test_sql_requires_enable_property_filter():
    sub = build_subscription_data("T", "a > 5", "SQL92")
    with pytest.raises(FilterNotSupportedError, match="does not support consumer to filter message by SQL92"):
        build_message_filter(sub, None, enable_property_filter=False)
    # TAG subscriptions do not need it
    assert isinstance(build_message_filter(build_subscription_data("T", "TagA")), ExpressionMessageFilter)


def test_sql_without_filter_data_compiles_the_subscription():
    sub = build_subscription_data("T", "a > 5", "SQL92")
    f = build_message_filter(sub, None, enable_property_filter=True)
    assert not f.is_matched_by_commit_log(None, {"a": "1"})
    assert f.is_matched_by_commit_log(None, {"a": "6"})
    with pytest.raises(FilterParseError, match="unexpected end of expression"):
        build_message_filter(build_subscription_data("T", "a >", "SQL92"), None, enable_property_filter=True)


def test_sql_with_filter_data_without_expression_matches():
    # RocketMQ: filter data that has no compiled expression filters nothing
    from broker.filter import ConsumerFilterData

    sub = build_subscription_data("T", "a > 5", "SQL92")
    data = ConsumerFilterData(consumerGroup="g", topic="T", expression=None, expressionType="SQL92")
    f = build_message_filter(sub, data, enable_property_filter=True)
    assert f.is_matched_by_commit_log(None, {"a": "1"})


def test_parse_pull_subscription():
    sub, data = parse_pull_subscription("T", "g", "TagA || TagB", "TAG", 7)
    assert data is None and sub.codeSet == [java_string_hash("TagA"), java_string_hash("TagB")]
    sub, data = parse_pull_subscription("T", "g", "a BETWEEN 1 AND 3", "SQL92", 7)
    assert sub.expressionType == "SQL92" and data.clientVersion == 7 and data.consumerGroup == "g"
    assert data.compiledExpression.evaluate({"a": "2"})
    with pytest.raises(FilterParseError, match="Invalid MessageSelector"):
        parse_pull_subscription("T", "g", "a BETWEEN", "SQL92", 7)
    with pytest.raises(FilterParseError):
        parse_pull_subscription("T", "g", "", "SQL92", 7)
    with pytest.raises(FilterParseError, match="split error"):
        parse_pull_subscription("T", "g", "||", "TAG", 7)


# -- retry topic (filterSupportRetry) -----------------------------------------------------------


def test_retry_topic_uses_original_topic_filter():
    manager = ConsumerFilterManager(None)
    assert manager.register_topic("T", "g", "a > 5", "SQL92", 1)
    retry_sub = build_subscription_data("%RETRY%g", "*")
    f = build_message_filter(retry_sub, None, filter_support_retry=True, consumer_filter_manager=manager)
    assert isinstance(f, ExpressionForRetryMessageFilter)
    assert f.is_matched_by_consume_queue(java_string_hash("x"))
    assert f.is_matched_by_commit_log(None, {"RETRY_TOPIC": "T", "a": "6"})
    assert not f.is_matched_by_commit_log(None, {"RETRY_TOPIC": "T", "a": "4"})
    # no original topic, or no filter for it: nothing to apply
    assert f.is_matched_by_commit_log(None, {"a": "4"})
    assert f.is_matched_by_commit_log(None, {"RETRY_TOPIC": "Other", "a": "4"})
    # without filterSupportRetry retry messages are not filtered
    plain = build_message_filter(retry_sub, None, consumer_filter_manager=manager)
    assert plain.is_matched_by_commit_log(None, {"RETRY_TOPIC": "T", "a": "4"})


def test_retry_filter_still_filters_normal_topics():
    f = sql_filter("a > 5", retry=True)
    assert isinstance(f, ExpressionForRetryMessageFilter)
    assert f.is_matched_by_commit_log(None, {"a": "6"})
    assert not f.is_matched_by_commit_log(None, {"a": "1"})


# -- bloom bitmaps (enableCalcFilterBitMap) ------------------------------------------------------


def test_bitmap_dispatch_and_pre_filter():
    clock = [1_000]
    manager = ConsumerFilterManager(None, bloom_filter=BloomFilter(20, 32), clock=lambda: clock[0])
    manager.register_topic("T", "g1", "a > 5", "SQL92", 1)
    manager.register_topic("T", "g2", "a < 5", "SQL92", 1)
    d1, d2 = manager.get("T", "g1"), manager.get("T", "g2")
    assert not set(d1.bloomFilterData.bitPos) & set(d2.bloomFilterData.bitPos)  # no shared bits
    dispatcher = CommitLogDispatcherCalcBitMap(True, manager)

    req = SimpleNamespace(topic="T", properties={"a": "7"}, bit_map=None)
    dispatcher.dispatch(req)
    assert len(req.bit_map) * 8 == manager.bloom_filter.m == 112
    assert all_bits_set(req.bit_map, d1.bloomFilterData.bitPos)
    assert not all_bits_set(req.bit_map, d2.bloomFilterData.bitPos)

    sub1 = build_subscription_data("T", "a > 5", "SQL92")
    sub2 = build_subscription_data("T", "a < 5", "SQL92")
    f1 = build_message_filter(sub1, d1, enable_property_filter=True, consumer_filter_manager=manager)
    f2 = build_message_filter(sub2, d2, enable_property_filter=True, consumer_filter_manager=manager)
    unit = SimpleNamespace(msg_store_time=2_000, filter_bit_map=req.bit_map)
    assert f1.is_matched_by_consume_queue(0, unit)
    assert not f2.is_matched_by_consume_queue(0, unit)
    # stored before the filter was registered: no bits were computed, so it passes
    assert f2.is_matched_by_consume_queue(0, SimpleNamespace(msg_store_time=500, filter_bit_map=req.bit_map))
    # no ext unit, or a bitmap of another size: cannot tell, passes
    assert f2.is_matched_by_consume_queue(0, None)
    assert f2.is_matched_by_consume_queue(0, SimpleNamespace(msg_store_time=2_000, filter_bit_map=b"\0" * 4))


def test_bitmap_dispatch_skips_other_topics_and_when_disabled():
    manager = ConsumerFilterManager(None)
    manager.register_topic("T", "g", "a > 5", "SQL92", 1)
    req = SimpleNamespace(topic="Other", properties={"a": "7"}, bit_map=None)
    CommitLogDispatcherCalcBitMap(True, manager).dispatch(req)
    assert req.bit_map is None
    req = SimpleNamespace(topic="T", properties={"a": "7"}, bit_map=None)
    CommitLogDispatcherCalcBitMap(False, manager).dispatch(req)
    assert req.bit_map is None


# -- real CommitLog records ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def manifest():
    with open(GOLDEN / "manifest.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _record(r) -> memoryview:
    with open(GOLDEN / "store" / r["file"], "rb") as f:
        f.seek(r["filePosition"])
        return memoryview(f.read(r["totalSize"]))


@needs_golden
def test_properties_decoded_from_every_golden_record(manifest):
    files = {}
    for r in manifest:
        data = files.get(r["file"])
        if data is None:
            data = files[r["file"]] = memoryview((GOLDEN / "store" / r["file"]).read_bytes())
        assert decode_record_properties(data, r["filePosition"]) == r["properties"]


@needs_golden
def test_sql_on_golden_records(manifest):
    by_offset = {r["physicalOffset"]: r for r in manifest}
    blue = _record(by_offset[859])  # color=blue, TAGS=order-paid, IPv4 hosts
    ordered = _record(by_offset[1106])  # orderStep=0, KEYS=ordId-0
    v6 = _record(by_offset[891671])  # IPv6 born host, city=Zürich

    def match(expression, buf):
        return sql_filter(expression).is_matched_by_commit_log(buf, None)

    assert match("color = 'blue' AND TAGS = 'order-paid'", blue)
    assert match("CLUSTER = 'GoldenCluster' AND gseq = 'A-1'", blue)
    assert not match("color = 'red'", blue)
    assert match("orderStep = 0 AND KEYS = 'ordId-0'", ordered)
    assert match("orderStep BETWEEN 0 AND 3", ordered)
    assert not match("orderStep > 0", ordered)
    assert not match("color IS NOT NULL", ordered)
    assert match("city = 'Zürich' AND gk = 'v6:json'", v6)
    assert match("color = 'blue' AND TAGS IN ('order-paid', 'TagA')", v6)


@needs_golden
def test_sql_over_all_golden_records_agrees_with_manifest(manifest):
    expression = "(color IN ('blue', 'red') AND TAGS IS NOT NULL) OR orderStep >= 2 OR gk = 'v6:json'"
    f = sql_filter(expression)
    compiled = compile_expression("SQL92", expression)
    files = {}
    matched = 0
    for r in manifest:
        data = files.get(r["file"])
        if data is None:
            data = files[r["file"]] = (GOLDEN / "store" / r["file"]).read_bytes()
        buf = memoryview(data)[r["filePosition"] : r["filePosition"] + r["totalSize"]]
        got = f.is_matched_by_commit_log(buf, None)
        assert got == compiled.evaluate(r["properties"]), r["physicalOffset"]
        matched += got
    assert 0 < matched < len(manifest)


def _copy_store(tmp_path: Path) -> Path:
    dst = tmp_path / "store"
    shutil.copytree(GOLDEN / "store", dst)
    for root, dirs, files in os.walk(dst):
        for n in dirs + files:
            p = os.path.join(root, n)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR)
    return dst


@needs_golden
def test_store_pull_with_filters(tmp_path, manifest):
    """Pull a queue of the golden store through the real DefaultMessageStore with TAG and SQL92 filters."""
    from store.config import FlushDiskType, MessageStoreConfig
    from store.default_message_store import DefaultMessageStore
    from store.message_store import GetMessageStatus

    root = _copy_store(tmp_path)
    cfg = MessageStoreConfig(
        storePathRootDir=str(root),
        storePathCommitLog=str(root / "commitlog"),
        mappedFileSizeCommitLog=262144,
        mappedFileSizeConsumeQueue=6000,
        maxIndexNum=400,
        maxHashSlotNum=100,
        flushDiskType=FlushDiskType.SYNC_FLUSH,
        fileReservedTime=720,
    )
    store = DefaultMessageStore(cfg, store_host=("127.0.0.1", 20911))
    assert store.load()
    try:
        queue = sorted(
            (r for r in manifest if r["topic"] == "GoldenOrders" and r["queueId"] == 0 and (r["sysFlag"] & 0xC) in (0, 8)),
            key=lambda r: r["queueOffset"],
        )

        def pull_all(message_filter):
            offsets, offset = [], 0
            for _ in range(10_000):
                res = store.get_message("g", "GoldenOrders", 0, offset, 32, message_filter)
                if res.status is GetMessageStatus.FOUND:
                    offsets.extend(res.queue_offsets)
                elif res.status is not GetMessageStatus.NO_MATCHED_MESSAGE:
                    break
                offset = res.next_begin_offset
            return offsets

        tags = pull_all(tag_filter("TagB || TagC"))
        assert tags == [r["queueOffset"] for r in queue if r["properties"].get("TAGS") in ("TagB", "TagC")]
        assert tags

        expression = "color = 'blue' OR (city = 'Zürich' AND TAGS IS NULL)"
        sql = pull_all(sql_filter(expression, topic="GoldenOrders"))
        compiled = compile_expression("SQL92", expression)
        assert sql == [r["queueOffset"] for r in queue if compiled.evaluate(r["properties"])]
        assert sql
    finally:
        store.shutdown_sync()


def test_subscription_data_type_is_the_shared_one():
    # the filter reads the same SubscriptionData the heartbeat path stores
    sub = SubscriptionData.from_json('{"topic":"T","subString":"TagA","tagsSet":["TagA"],"codeSet":[2598919]}')
    assert build_message_filter(sub).is_matched_by_consume_queue(2598919)

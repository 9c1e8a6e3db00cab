"""The "rocketmq-store" source over the store written by real RocketMQ 4.9.7 (every record of its manifest)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from tests.support import GOLDEN_STORE

GOLDEN = GOLDEN_STORE if (GOLDEN_STORE / "manifest.jsonl").exists() else None
pytestmark = pytest.mark.skipif(GOLDEN is None, reason="the RocketMQ 4.9.7 golden store set is not on this machine")


@pytest.fixture(scope="module")
def manifest():
    with open(GOLDEN / "manifest.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_every_record_of_the_manifest(spark, manifest):
    df = spark.read.format("rocketmq-store").option("brokerName", "golden-a").load(str(GOLDEN / "store"))
    assert df.rdd.getNumPartitions() == 6  # one per CommitLog file
    rows = {r.physicalOffset: r for r in df.collect()}
    assert len(rows) == len(manifest) == 1488
    for rec in manifest:
        r = rows[rec["physicalOffset"]]
        where = f"record at {rec['physicalOffset']}"
        assert (r.topic, r.queueId, r.queueOffset, r.sysFlag) == (
            rec["topic"], rec["queueId"], rec["queueOffset"], rec["sysFlag"]), where
        assert r.bodyCRC == rec["bodyCRC"] and r.crcOk, where
        assert r.broker == "golden-a" and r.reconsumeTimes == rec["reconsumeTimes"]
        assert r.tags == rec["tags"] and r.properties == rec["properties"], where
        assert r.keys == ([k for k in rec["keys"].split(" ") if k] if rec["keys"] is not None else None), where
        if rec["compressed"]:
            assert hashlib.sha256(r.body).hexdigest() == rec["uncompressedBodySha256"], where
        else:
            assert r.body == base64.b64decode(rec["body"]), where
        assert r.msgId == (rec["uniqKey"] or rec["msgId"]), where
        assert int(r.storeTimestamp.timestamp() * 1000) == rec["storeTimestamp"], where


def test_topic_filter_and_offset_bounds(spark, manifest):
    root = str(GOLDEN / "store")
    txn = spark.read.format("rocketmq-store").option("topic", "GoldenTxn").load(root).collect()
    assert sorted(r.physicalOffset for r in txn) == sorted(
        m["physicalOffset"] for m in manifest if m["topic"] == "GoldenTxn")
    lo, hi = manifest[100]["physicalOffset"], manifest[900]["physicalOffset"]
    part = spark.read.format("rocketmq-store").option("fromOffset", str(lo)).option("toOffset", str(hi)).load(root)
    assert sorted(r.physicalOffset for r in part.collect()) == [m["physicalOffset"] for m in manifest[100:900]]
    filtered = spark.read.format("rocketmq-store").load(root).where("topic = 'GoldenEvents'").count()
    assert filtered == sum(1 for m in manifest if m["topic"] == "GoldenEvents")


def test_missing_store_root_is_a_clear_error(spark, tmp_path):
    with pytest.raises(Exception, match="load path"):
        spark.read.format("rocketmq-store").load(str(tmp_path / "nowhere")).collect()

"""Golden compatibility: a store written by the real RocketMQ 4.9.7 broker opens and reads back byte for byte.

The shared golden set is read-only; every test works on a copy in tmp_path.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import struct
from collections import defaultdict
from pathlib import Path

import pytest

from common.message import decode_message
from store.config import FlushDiskType, MessageStoreConfig
from store.default_message_store import DefaultMessageStore
from store.message_store import GetMessageStatus
from store.store_checkpoint import StoreCheckpoint
from tests.support import GOLDEN_STORE

GOLDEN = GOLDEN_STORE

pytestmark = pytest.mark.skipif(not GOLDEN.exists(), reason="golden RocketMQ 4.9.7 store not available")


def _jsonl(name: str) -> list[dict]:
    with open(GOLDEN / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def manifest() -> list[dict]:
    return _jsonl("manifest.jsonl")


@pytest.fixture(scope="module")
def cq_units() -> list[dict]:
    return _jsonl("consumequeue.jsonl")


def copy_store(tmp_path: Path) -> Path:
    dst = tmp_path / "store"
    shutil.copytree(GOLDEN / "store", dst)
    for root, dirs, files in os.walk(dst):
        for n in dirs + files:
            p = os.path.join(root, n)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR)
    return dst


def golden_config(root: Path) -> MessageStoreConfig:
    # the broker.conf of the golden run (README "How it was produced")
    return MessageStoreConfig(
        storePathRootDir=str(root),
        storePathCommitLog=str(root / "commitlog"),
        mappedFileSizeCommitLog=262144,
        mappedFileSizeConsumeQueue=6000,
        maxIndexNum=400,
        maxHashSlotNum=100,
        flushDiskType=FlushDiskType.SYNC_FLUSH,
        fileReservedTime=720,
    )


def open_store(root: Path) -> DefaultMessageStore:
    store = DefaultMessageStore(golden_config(root), store_host=("127.0.0.1", 20911))
    assert store.load()
    return store


def test_every_record_by_offset_is_byte_identical(tmp_path, manifest):
    root = copy_store(tmp_path)
    raw = {}
    store = open_store(root)
    try:
        assert store.last_exit_ok
        assert store.get_max_phy_offset() == 1377968
        assert store.get_min_phy_offset() == 0
        for r in manifest:
            f = raw.get(r["file"])
            if f is None:
                f = raw[r["file"]] = (GOLDEN / "store" / r["file"]).read_bytes()
            expected = f[r["filePosition"] : r["filePosition"] + r["totalSize"]]
            mv = store.select_one_message_by_offset(r["physicalOffset"])
            assert mv is not None and bytes(mv) == expected
            m = store.look_message_by_offset(r["physicalOffset"])
            assert m is not None
            assert m.topic == r["topic"] and m.queue_id == r["queueId"] and m.queue_offset == r["queueOffset"]
            assert m.body == base64.b64decode(r["body"])
            assert m.properties_string == r["propertiesRaw"]
            assert m.msg_id == r["msgId"]
            assert m.sys_flag == r["sysFlag"] and m.flag == r["flag"]
            assert m.store_timestamp == r["storeTimestamp"] and m.born_timestamp == r["bornTimestamp"]
            assert m.body_crc == r["bodyCRC"] and m.reconsume_times == r["reconsumeTimes"]
            assert m.prepared_transaction_offset == r["preparedTransactionOffset"]
            host = f"[{m.born_host[0]}]:{m.born_host[1]}" if ":" in m.born_host[0] else f"{m.born_host[0]}:{m.born_host[1]}"
            assert host == r["bornHost"]
    finally:
        store.shutdown_sync()


def test_get_message_per_queue_returns_every_record(tmp_path, manifest):
    root = copy_store(tmp_path)
    by_queue: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for r in manifest:
        if (r["sysFlag"] & 0xC) in (0, 8):
            by_queue[(r["topic"], r["queueId"])].append(r)
    raw = {n: (GOLDEN / "store" / n).read_bytes() for n in {r["file"] for r in manifest}}
    store = open_store(root)
    try:
        for (topic, qid), records in by_queue.items():
            records.sort(key=lambda r: r["queueOffset"])
            got: list[bytes] = []
            offsets: list[int] = []
            offset = 0
            while True:
                res = store.get_message("golden-test", topic, qid, offset, 32)
                if res.status is not GetMessageStatus.FOUND:
                    assert res.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
                    assert res.next_begin_offset == offset
                    break
                got.extend(bytes(b) for b in res.buffers)
                offsets.extend(res.queue_offsets)
                assert res.next_begin_offset > offset
                offset = res.next_begin_offset
            assert offsets == [r["queueOffset"] for r in records] == list(range(len(records)))
            for b, r in zip(got, records, strict=True):
                assert b == raw[r["file"]][r["filePosition"] : r["filePosition"] + r["totalSize"]]
            assert store.get_max_offset_in_queue(topic, qid) == len(records)
            assert store.get_min_offset_in_queue(topic, qid) == 0
    finally:
        store.shutdown_sync()


def test_consume_queues_offsets_and_checkpoint_match(tmp_path, cq_units):
    root = copy_store(tmp_path)
    ckpt_expected = json.loads((GOLDEN / "checkpoint.json").read_text())
    ck = StoreCheckpoint(str(root / "checkpoint"))
    assert (ck.physic_msg_timestamp, ck.logics_msg_timestamp, ck.index_msg_timestamp) == (
        ckpt_expected["physicMsgTimestamp"], ckpt_expected["logicsMsgTimestamp"], ckpt_expected["indexMsgTimestamp"])
    ck.shutdown()
    stats = json.loads((GOLDEN / "broker-stats.json").read_text())
    store = open_store(root)
    try:
        for u in cq_units:
            cq = store.consume_queues.find(u["topic"], u["queueId"])
            assert cq is not None
            assert cq.get_unit(u["index"]) == (u["commitLogOffset"], u["size"], u["tagsCode"])
            assert store.get_commit_log_offset_in_queue(u["topic"], u["queueId"], u["index"]) == u["commitLogOffset"]
        for topic, queues in stats["topics"].items():
            for q in queues:
                assert store.get_max_offset_in_queue(topic, q["queueId"]) == q["maxOffset"], (topic, q)
                assert store.get_min_offset_in_queue(topic, q["queueId"]) == q["minOffset"]
        # queue offset table rebuilt from the consume queues: the next append continues each queue
        assert store.commit_log.topic_queue_table["GoldenOrders-1"] == 518
    finally:
        store.shutdown_sync()


def test_abnormal_recovery_rebuilds_consume_queues_byte_identical(tmp_path):
    """Drop every consume queue, zero the checkpoint, leave an abort file: recovery re-dispatches
    the whole CommitLog and must produce the broker's consume-queue files byte for byte
    (including SCHEDULE_TOPIC_XXXX delivery-time tag codes)."""
    root = copy_store(tmp_path)
    shutil.rmtree(root / "consumequeue")
    shutil.rmtree(root / "index")
    with open(root / "checkpoint", "r+b") as f:
        f.write(bytes(24))
    (root / "abort").write_bytes(b"")
    store = open_store(root)
    try:
        assert not store.last_exit_ok
        golden_cq = GOLDEN / "store" / "consumequeue"
        n = 0
        for dirpath, _dirs, files in os.walk(golden_cq):
            for name in files:
                rel = os.path.relpath(os.path.join(dirpath, name), golden_cq)
                ours = root / "consumequeue" / rel
                assert ours.read_bytes() == (golden_cq / rel).read_bytes(), rel
                n += 1
        assert n == 21
        assert store.get_max_phy_offset() == 1377968
    finally:
        store.shutdown_sync()


def test_normal_restart_keeps_files_and_appends_after_golden_data(tmp_path, manifest):
    """Open the golden store, append, restart: golden bytes unchanged, new record decodes."""
    from common.message import MessageExtBrokerInner

    root = copy_store(tmp_path)
    store = open_store(root)
    msg = MessageExtBrokerInner(topic="GoldenOrders", queue_id=1, body=b"after-golden",
                                properties={"TAGS": "TagA", "KEYS": "k-after"}, born_timestamp=1,
                                born_host=("127.0.0.1", 5555), store_host=("127.0.0.1", 20911))
    res = store.put_message(msg)
    assert res.is_ok()
    assert res.append_result.wrote_offset == 1377968
    assert res.append_result.logics_offset == 518
    store.dispatch_pending()
    store.shutdown_sync()
    assert not (root / "abort").exists()
    store = open_store(root)
    try:
        assert store.get_max_offset_in_queue("GoldenOrders", 1) == 519
        m = store.look_message_by_offset(1377968)
        assert m.body == b"after-golden" and m.queue_offset == 518
        last = (root / "commitlog" / "00000000000001310720").read_bytes()
        gold = (GOLDEN / "store" / "commitlog" / "00000000000001310720").read_bytes()
        assert last[:67248] == gold[:67248]
        q = store.query_message("GoldenOrders", "k-after", 32, 0, 2**63 - 1)
        assert [decode_message(b).commit_log_offset for b in q.buffers] == [1377968]
    finally:
        store.shutdown_sync()


def test_independent_struct_reader_agrees_on_golden_file():
    """Sanity of the test's own reader (used on files we write) against the golden manifest."""
    from tests.store.record_reader import read_records

    recs = read_records((GOLDEN / "store" / "commitlog" / "00000000000000000000").read_bytes(), 0)
    first = _jsonl("manifest.jsonl")[0]
    assert recs[0]["totalSize"] == first["totalSize"] and recs[0]["topic"] == first["topic"]
    assert len(recs) == 264
    assert struct.unpack(">i", (GOLDEN / "store" / "commitlog" / "00000000000000000000").read_bytes()[
        257439 + 4 : 257439 + 8])[0] == -875286124

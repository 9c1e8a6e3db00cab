"""IndexFile / IndexService against RocketMQ 4.9.7's own index files and an independent reader.

The golden files live in the shared testdata; they are copied to tmp_path first.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest

from common.util import java_string_hash
from store.config import MessageStoreConfig
from store.index_file import IndexFile, IndexFileError, index_file_name, index_file_size, index_key_hash
from store.index_service import IndexService
from tests.support import GOLDEN_STORE

GOLDEN = GOLDEN_STORE
LONG_MAX = 2**63 - 1

needs_golden = pytest.mark.skipif(not (GOLDEN / "index.jsonl").exists(), reason="golden store not available")


def make_config(**kw):
    """The store's MessageStoreConfig with the given overrides."""
    cfg = MessageStoreConfig()
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


@dataclass
class Req:
    """The DispatchRequest fields the index reads."""

    topic: str
    commit_log_offset: int
    store_timestamp: int
    keys: str = ""
    uniq_key: str | None = None
    sys_flag: int = 0


class Checkpoint:
    def __init__(self, ts: int = 0):
        self.index_msg_timestamp = ts
        self.flushes = 0

    def flush(self):
        self.flushes += 1


def golden_index_objects():
    files, lookups = [], []
    with open(GOLDEN / "index.jsonl", encoding="utf-8") as fh:
        for line in fh:
            o = json.loads(line)
            (files if o["type"] == "file" else lookups).append(o)
    return files, lookups


def golden_manifest():
    with open(GOLDEN / "manifest.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture
def golden_index_dir(tmp_path):
    d = tmp_path / "index"
    shutil.copytree(GOLDEN / "store" / "index", d)
    for p in d.iterdir():
        os.chmod(p, 0o644)
    os.chmod(d, 0o755)
    return d


# -- an independent reader, written from the spec's table -----------------


def spec_read(path: Path, slots: int, entries: int) -> dict:
    data = path.read_bytes()
    assert len(data) == 40 + slots * 4 + entries * 20
    bt, et, bp, ep, hsc, ic = struct.unpack(">qqqqii", data[:40])
    slot_vals = [(i, struct.unpack(">i", data[40 + 4 * i : 44 + 4 * i])[0]) for i in range(slots)]
    base = 40 + slots * 4
    ents = []
    for n in range(1, max(ic, 1)):
        kh, off, td, prev = struct.unpack(">iqii", data[base + 20 * n : base + 20 * n + 20])
        ents.append([n, kh, off, td, prev])
    return {
        "beginTimestamp": bt,
        "endTimestamp": et,
        "beginPhyOffset": bp,
        "endPhyOffset": ep,
        "hashSlotCount": hsc,
        "indexCount": ic,
        "slots": [[i, v] for i, v in slot_vals if v],
        "entries": ents,
    }


# -- golden ----------------------------------------------------------------


@needs_golden
def test_golden_files_decode_entry_by_entry(golden_index_dir):
    files, _ = golden_index_objects()
    assert len(files) == 8
    for o in files:
        f = IndexFile(str(golden_index_dir / Path(o["file"]).name), 100, 400)
        f.load()
        assert f.file_size == o["fileSize"] == 8440
        assert f.header.as_dict() == {k: o[k] for k in f.header.as_dict()}
        assert [list(s) for s in f.iter_slots()] == o["slots"]
        assert [list(e) for e in f.iter_entries()] == o["entries"]
        assert f.is_write_full() == (o["indexCount"] >= 400)
        f.close()


@needs_golden
def test_golden_queries_match_rocketmq(golden_index_dir):
    files, lookups = golden_index_objects()
    manifest = {r["physicalOffset"]: r for r in golden_manifest()}
    svc = IndexService(make_config(maxHashSlotNum=100, maxIndexNum=400), str(golden_index_dir))
    assert svc.load(True)
    assert [f.file_name for f in svc.index_files] == [Path(o["file"]).name for o in files]
    assert len(lookups) == 1420
    for lk in lookups:
        assert lk["keyHash"] == index_key_hash(lk["indexKey"])
        assert lk["javaHashCode"] == java_string_hash(lk["indexKey"])
        offsets, ts, phy = svc.query_offset(lk["topic"], lk["key"], lk["maxNum"], lk["begin"], lk["end"])
        assert offsets == lk["phyOffsets"], lk["indexKey"]
        assert (ts, phy) == (files[-1]["endTimestamp"], files[-1]["endPhyOffset"])
        # the client-side filter (topic + key on the record) gives the manifest's answer
        matching = [
            off
            for off in offsets
            if manifest[off]["topic"] == lk["topic"]
            and (manifest[off]["uniqKey"] == lk["key"] or lk["key"] in (manifest[off]["keys"] or "").split(" "))
        ]
        assert matching == lk["matchingPhyOffsets"]
    svc.shutdown()


@needs_golden
def test_golden_special_keys(golden_index_dir):
    svc = IndexService(make_config(maxHashSlotNum=100, maxIndexNum=400), str(golden_index_dir))
    svc.load(True)
    _, lookups = golden_index_objects()
    by_key = {lk["indexKey"]: lk for lk in lookups}
    hot = by_key["GoldenOrders#hot-key"]
    assert len(svc.query_offset("GoldenOrders", "hot-key", 64, 0, LONG_MAX).phy_offsets) == 64
    assert len(hot["manifestOffsets"]) == 92
    # maxMsgsNumBatch caps larger requests
    assert len(svc.query_offset("GoldenOrders", "hot-key", 1000, 0, LONG_MAX).phy_offsets) == 64
    coll = [k for k in by_key if k.startswith("GoldenOrders#ord-coll-")]
    assert len(coll) == 4
    assert len({index_key_hash(k) for k in coll}) == 1
    got = svc.query_offset("GoldenOrders", coll[0].split("#", 1)[1], 64, 0, LONG_MAX).phy_offsets
    assert sorted(got) == sorted(o for k in coll for o in by_key[k]["manifestOffsets"])
    minhash = [k for k in by_key if k.startswith("GoldenOrders#minhash-")][0]
    assert java_string_hash(minhash) == -(2**31) and index_key_hash(minhash) == 0
    assert svc.query_offset("GoldenOrders", minhash.split("#", 1)[1], 64, 0, LONG_MAX).phy_offsets == by_key[minhash]["phyOffsets"]
    svc.shutdown()


@needs_golden
def test_rebuild_from_manifest_is_byte_identical(tmp_path):
    """Dispatching the golden records in CommitLog order writes the same index bytes."""
    files, _ = golden_index_objects()
    cp = Checkpoint()
    clock = iter(range(1_700_000_000_000, 1_700_000_000_000 + 1000)).__next__
    svc = IndexService(make_config(maxHashSlotNum=100, maxIndexNum=400), str(tmp_path / "index"), cp, clock=clock)
    assert svc.load(True)
    for r in golden_manifest():
        svc.build_index(
            Req(
                topic=r["topic"],
                commit_log_offset=r["physicalOffset"],
                store_timestamp=r["storeTimestamp"],
                keys=r["keys"] or "",
                uniq_key=r["uniqKey"],
                sys_flag=r["sysFlag"],
            )
        )
    svc.shutdown()
    assert len(svc.index_files) == len(files)
    for mine, o in zip(svc.index_files, files, strict=True):
        golden_bytes = (GOLDEN / "store" / o["file"]).read_bytes()
        assert Path(mine.path).read_bytes() == golden_bytes, o["file"]
    # the checkpoint got the end timestamp of the last full file, as the real broker's did
    golden_cp = json.loads((GOLDEN / "checkpoint.json").read_text())
    assert cp.index_msg_timestamp == golden_cp["indexMsgTimestamp"]


@needs_golden
def test_golden_abnormal_load_drops_files_newer_than_checkpoint(golden_index_dir, tmp_path):
    cp = json.loads((GOLDEN / "checkpoint.json").read_text())
    checkpoint = Checkpoint(cp["indexMsgTimestamp"])
    try:  # the store's own reader of the golden checkpoint file, when it exists
        from store.store_checkpoint import StoreCheckpoint

        shutil.copy(GOLDEN / "store" / "checkpoint", tmp_path / "checkpoint")
        os.chmod(tmp_path / "checkpoint", 0o644)
        checkpoint = StoreCheckpoint(str(tmp_path / "checkpoint"))
        assert checkpoint.index_msg_timestamp == cp["indexMsgTimestamp"]
    except ImportError:
        pass
    svc = IndexService(make_config(maxHashSlotNum=100, maxIndexNum=400), str(golden_index_dir), checkpoint)
    assert svc.load(False)
    assert svc.file_count == 7
    assert sorted(os.listdir(golden_index_dir))[-1] == "20261122035352952"
    svc.shutdown()


# -- written files ---------------------------------------------------------


def test_written_file_decodes_with_independent_reader(tmp_path):
    svc = IndexService(make_config(maxHashSlotNum=7, maxIndexNum=100), str(tmp_path / "index"))
    svc.load(True)
    t0 = 1_800_000_000_000
    for i in range(20):
        svc.build_index(Req("T", 1000 + 100 * i, t0 + 1500 * i, keys=f"k{i % 5} shared", uniq_key=f"U{i:04d}"))
    svc.flush()
    [f] = svc.index_files
    d = spec_read(Path(f.path), 7, 100)
    assert d["indexCount"] == 61  # 20 records x 3 keys, entry 0 unused
    assert (d["beginTimestamp"], d["endTimestamp"]) == (t0, t0 + 1500 * 19)
    assert (d["beginPhyOffset"], d["endPhyOffset"]) == (1000, 1000 + 100 * 19)
    assert d["hashSlotCount"] == len(d["slots"])
    expected = []
    n = 1
    for i in range(20):
        for key in (f"T#U{i:04d}", f"T#k{i % 5}", "T#shared"):
            expected.append((n, index_key_hash(key), 1000 + 100 * i, (1500 * i) // 1000))
            n += 1
    assert [tuple(e[:4]) for e in d["entries"]] == expected
    # every chain link points at the previous entry of the same slot
    last_in_slot: dict[int, int] = {}
    for n, kh, _off, _td, prev in d["entries"]:
        assert prev == last_in_slot.get(kh % 7, 0)
        last_in_slot[kh % 7] = n
    assert sorted(d["slots"]) == sorted([s, n] for s, n in last_in_slot.items())
    # query through the service
    got = svc.query_offset("T", "shared", 64, 0, LONG_MAX).phy_offsets
    assert got == [1000 + 100 * i for i in reversed(range(20))]
    assert svc.query_offset("T", "k3", 64, 0, LONG_MAX).phy_offsets == [1000 + 100 * i for i in (18, 13, 8, 3)]
    assert svc.query_offset("T", "U0007", 64, 0, LONG_MAX).phy_offsets == [1700]
    assert svc.query_offset("Other", "shared", 64, 0, LONG_MAX).phy_offsets == []
    svc.shutdown()


def test_file_name_and_geometry(tmp_path):
    assert index_file_size(5_000_000, 20_000_000) == 420_000_040
    name = index_file_name(1_795_319_616_549)
    assert len(name) == 17 and name.isdigit() and name.endswith("549")
    p = tmp_path / "x"
    p.write_bytes(b"\0" * 100)
    with pytest.raises(IndexFileError, match="expected 8440"):
        IndexFile(str(p), 100, 400)


def test_roll_over_when_full(tmp_path):
    cp = Checkpoint()
    svc = IndexService(make_config(maxHashSlotNum=4, maxIndexNum=5), str(tmp_path / "index"), cp)
    svc.load(True)
    t0 = 1_800_000_000_000
    for i in range(10):
        svc.build_index(Req("T", 100 * i, t0 + 1000 * i, keys=f"a{i} b{i}"))
    # 4 entries per file (indexCount 1..5), 20 keys -> 5 files
    assert svc.file_count == 5
    names = [f.file_name for f in svc.index_files]
    assert names == sorted(names) and len(set(names)) == 5
    first, second = svc.index_files[0], svc.index_files[1]
    assert first.is_write_full() and first.index_count == 5
    # a full file was flushed and its end time recorded
    assert cp.index_msg_timestamp == svc.index_files[-2].end_timestamp and cp.flushes == 4
    # file 1's begin fields were pre-set to file 0's end, then set by its first entry
    assert first.end_phy_offset == 100 and second.begin_phy_offset == 200
    for i in range(10):
        assert svc.query_offset("T", f"a{i}", 64, 0, LONG_MAX).phy_offsets == [100 * i]
        assert svc.query_offset("T", f"b{i}", 64, 0, LONG_MAX).phy_offsets == [100 * i]
    # re-dispatch after recovery does not index records before the last file's end twice
    for i in range(9):
        svc.build_index(Req("T", 100 * i, t0 + 1000 * i, keys=f"a{i} b{i}"))
    # (as in RocketMQ, the full last file is rolled before the offset check: one empty file more)
    assert svc.file_count == 6 and svc.index_files[-1].index_count == 1
    assert svc.query_offset("T", "a8", 64, 0, LONG_MAX).phy_offsets == [800]
    svc.shutdown()
    # reload sees the same
    svc2 = IndexService(make_config(maxHashSlotNum=4, maxIndexNum=5), str(tmp_path / "index"))
    assert svc2.load(True) and svc2.file_count == 6
    assert svc2.query_offset("T", "b4", 64, 0, LONG_MAX).phy_offsets == [400]
    svc2.shutdown()


def test_hash_collisions_chain_and_caller_filters(tmp_path):
    # "AaAa" and "BBBB" have the same Java hash, so do the prefixed keys
    assert java_string_hash("T#AaAa") == java_string_hash("T#BBBB")
    svc = IndexService(make_config(maxHashSlotNum=1, maxIndexNum=100), str(tmp_path / "index"))
    svc.load(True)
    t0 = 1_800_000_000_000
    svc.build_index(Req("T", 10, t0, keys="AaAa"))
    svc.build_index(Req("T", 20, t0, keys="other"))  # same (single) slot, other hash
    svc.build_index(Req("T", 30, t0, keys="BBBB"))
    [f] = svc.index_files
    assert f.hash_slot_count == 1 and f.read_slot(0) == 3
    assert [e[4] for e in f.iter_entries()] == [0, 1, 2]
    assert svc.query_offset("T", "AaAa", 64, 0, LONG_MAX).phy_offsets == [30, 10]
    assert svc.query_offset("T", "BBBB", 64, 0, LONG_MAX).phy_offsets == [30, 10]
    assert svc.query_offset("T", "other", 64, 0, LONG_MAX).phy_offsets == [20]
    assert svc.query_offset("T", "AaAa", 1, 0, LONG_MAX).phy_offsets == [30]
    svc.shutdown()


def test_time_range_filter(tmp_path):
    svc = IndexService(make_config(maxHashSlotNum=16, maxIndexNum=6), str(tmp_path / "index"))
    svc.load(True)
    t0 = 1_800_000_000_000
    for i in range(12):  # 5 entries per file -> 3 files
        svc.build_index(Req("T", 1000 * i, t0 + 10_000 * i, keys="k"))
    assert svc.file_count == 3
    q = svc.query_offset
    assert q("T", "k", 64, 0, LONG_MAX).phy_offsets == [1000 * i for i in reversed(range(12))]
    assert q("T", "k", 64, t0 + 30_000, t0 + 70_000).phy_offsets == [7000, 6000, 5000, 4000, 3000]
    assert q("T", "k", 64, t0 + 65_000, t0 + 65_500).phy_offsets == []
    assert q("T", "k", 64, t0 + 111_000, LONG_MAX).phy_offsets == []
    # RocketMQ quirk kept for byte compatibility: a rolled file's first entry has its time diff
    # taken against the previous file's end (the pre-set begin), then begin moves to the entry.
    # Entry 10 (t0+100s) was written with diff 10 s and so reads as t0+110s.
    assert q("T", "k", 64, t0 + 105_000, LONG_MAX).phy_offsets == [11000, 10000]
    assert svc.index_files[-1].read_entry(1)[2] == 10
    assert q("T", "k", 64, 0, t0 - 1).phy_offsets == []
    svc.shutdown()


def test_rollback_skipped_prepared_indexed(tmp_path):
    svc = IndexService(make_config(maxHashSlotNum=16, maxIndexNum=100), str(tmp_path / "index"))
    svc.load(True)
    t0 = 1_800_000_000_000
    svc.build_index(Req("T", 10, t0, keys="rb", sys_flag=0xC))
    svc.build_index(Req("T", 20, t0, keys="pr", sys_flag=0x4))
    svc.build_index(Req("T", 30, t0, keys="cm", sys_flag=0x8, uniq_key="U1"))
    svc.dispatch(Req("T", 40, t0, keys=" x  y "))
    assert svc.query_offset("T", "rb", 64, 0, LONG_MAX).phy_offsets == []
    assert svc.query_offset("T", "pr", 64, 0, LONG_MAX).phy_offsets == [20]
    assert svc.query_offset("T", "U1", 64, 0, LONG_MAX).phy_offsets == [30]
    assert svc.query_offset("T", "y", 64, 0, LONG_MAX).phy_offsets == [40]
    assert svc.index_files[0].index_count == 6  # pr, U1, cm, x, y + unused entry 0
    svc.shutdown()
    off = IndexService(make_config(maxHashSlotNum=16, maxIndexNum=100, messageIndexEnable=False), str(tmp_path / "i2"))
    off.load(True)
    off.dispatch(Req("T", 40, t0, keys="x"))
    assert off.file_count == 0


def test_abnormal_load_and_delete_expired(tmp_path):
    cp = Checkpoint()
    cfg = make_config(maxHashSlotNum=4, maxIndexNum=3)
    svc = IndexService(cfg, str(tmp_path / "index"), cp)
    svc.load(True)
    t0 = 1_800_000_000_000
    for i in range(7):  # 2 entries per file -> 4 files, last has 1
        svc.build_index(Req("T", 100 * i, t0 + 1000 * i, keys=f"k{i}"))
    assert svc.file_count == 4
    svc.shutdown()
    assert cp.index_msg_timestamp == t0 + 5000
    again = IndexService(cfg, str(tmp_path / "index"), cp)
    assert again.load(True) and again.file_count == 4
    again.shutdown()
    # abnormal exit with the checkpoint saying only file 1 was safely written
    cp.index_msg_timestamp = t0 + 1000
    svc = IndexService(cfg, str(tmp_path / "index"), cp)
    assert svc.load(False) and svc.file_count == 1
    assert len(os.listdir(tmp_path / "index")) == 1
    for i in range(2, 7):
        svc.build_index(Req("T", 100 * i, t0 + 1000 * i, keys=f"k{i}"))
    assert svc.file_count == 4
    assert svc.query_offset("T", "k1", 64, 0, LONG_MAX).phy_offsets == [100]
    # CommitLog min offset moved past files 1 and 2 (ends 100, 300); the last file is never deleted
    assert svc.delete_expired_file(0) == 0
    assert svc.delete_expired_file(350) == 2
    assert svc.file_count == 2 and len(os.listdir(tmp_path / "index")) == 2
    assert svc.query_offset("T", "k1", 64, 0, LONG_MAX).phy_offsets == []
    assert svc.delete_expired_file(10_000) == 1
    assert svc.file_count == 1
    assert svc.query_offset("T", "k6", 64, 0, LONG_MAX).phy_offsets == [600]
    svc.shutdown()


def test_fed_by_the_store_dispatcher(tmp_path):
    dispatch = pytest.importorskip("store.dispatch")
    svc = IndexService(make_config(maxHashSlotNum=16, maxIndexNum=100), str(tmp_path / "index"))
    svc.load(True)
    d = dispatch.CommitLogDispatcherBuildIndex(svc, lambda: True)
    d.dispatch(dispatch.DispatchRequest(topic="T", commit_log_offset=77, store_timestamp=1_800_000_000_000,
                                        keys="a b", uniq_key="ABC", properties={"KEYS": "a b"}))
    for k in ("a", "b", "ABC"):
        assert svc.query_offset("T", k, 64, 0, LONG_MAX).phy_offsets == [77]
    svc.shutdown()


def test_key_hash_equals_java_string_hash():
    import random

    from store.index_file import _java_hash

    rnd = random.Random(5)
    alphabet = [chr(c) for c in range(32, 127)] + ["é", "键", "😀", "\u05d0", "\uffff"]
    for _ in range(3000):
        s = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 80)))
        assert _java_hash(s) == java_string_hash(s), s
    long = "x" * 5000 + "😀"
    assert _java_hash(long) == java_string_hash(long)
    assert index_key_hash("") == 0


@needs_golden
def test_store_recovery_dispatch_rebuilds_golden_index(tmp_path):
    """The store's own CommitLog walk (abnormal recovery re-dispatch) over the golden files
    drives IndexService to RocketMQ's exact index bytes."""
    commit_log = pytest.importorskip("store.commit_log")
    root = tmp_path / "store"
    shutil.copytree(GOLDEN / "store" / "commitlog", root / "commitlog")
    for p in (root / "commitlog").iterdir():
        os.chmod(p, 0o644)
    cfg = make_config(storePathRootDir=str(root), mappedFileSizeCommitLog=262144, maxHashSlotNum=100, maxIndexNum=400)
    cl = commit_log.CommitLog(cfg)
    assert cl.load()
    svc = IndexService(cfg, str(root / "index"))
    svc.load(True)
    end = cl.recover_abnormally(0, 0, svc.dispatch, lambda _off: None, lambda: None)
    assert end == 1377968
    svc.shutdown()
    cl.shutdown()
    files, _ = golden_index_objects()
    assert [Path(f.path).read_bytes() for f in svc.index_files] == [
        (GOLDEN / "store" / o["file"]).read_bytes() for o in files
    ]


@needs_golden
def test_golden_store_abnormal_recovery_keeps_every_key_findable(tmp_path):
    """A copy of the golden store with an ``abort`` file: the store drops the index file newer
    than the checkpoint, re-dispatches the tail of the CommitLog, and every key is found again."""
    dms = pytest.importorskip("store.default_message_store")
    root = tmp_path / "store"
    shutil.copytree(GOLDEN / "store", root)
    for dirpath, _dirs, files in os.walk(root):
        os.chmod(dirpath, 0o755)
        for n in files:
            os.chmod(os.path.join(dirpath, n), 0o644)
    (root / "abort").write_bytes(b"")
    cfg = make_config(
        storePathRootDir=str(root),
        mappedFileSizeCommitLog=262144,
        mappedFileSizeConsumeQueue=6000,
        maxHashSlotNum=100,
        maxIndexNum=400,
    )
    store = dms.DefaultMessageStore(cfg, store_host=("127.0.0.1", 20911))
    assert store.load()
    try:
        store.dispatch_pending()
        names = [f.file_name for f in store.index_service.index_files]
        assert "20261122035358109" not in names and "20261122035352952" in names
        _, lookups = golden_index_objects()
        for lk in lookups:
            want = lk["manifestOffsets"]
            if len(want) > 32:
                continue  # hot-key: capped at 64 hash matches
            got = store.index_service.query_offset(lk["topic"], lk["key"], 64, 0, LONG_MAX).phy_offsets
            assert set(want) <= set(got), lk["indexKey"]
    finally:
        store.shutdown_sync()

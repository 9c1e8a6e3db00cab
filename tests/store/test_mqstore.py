"""bin/mqstore run as a real process against a copy of the RocketMQ 4.9.7 golden store."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.support import BIN, GOLDEN_STORE

GOLDEN = GOLDEN_STORE
pytestmark = pytest.mark.skipif(not (GOLDEN / "manifest.jsonl").exists(), reason="golden store not available")


def mqstore(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "mqstore"), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "store"
    shutil.copytree(GOLDEN / "store", root)
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for n in filenames:
            os.chmod(os.path.join(dirpath, n), 0o644)
    return root


def manifest():
    with open(GOLDEN / "manifest.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def patch(path: Path, pos: int, data: bytes) -> None:
    with open(path, "r+b") as fh:
        fh.seek(pos)
        fh.write(data)


def test_check_passes_on_golden_store(store):
    r = mqstore("check", str(store))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "OK: 1488 records, 1488 consume-queue units, 8 index files checked"
    assert "PROBLEM" not in r.stdout


def test_check_fails_on_corrupted_body_byte(store):
    rec = next(m for m in manifest() if m["bodyLength"] > 100 and m["file"].endswith("262144"))
    body_pos = rec["filePosition"] + 88 + (12 if rec["sysFlag"] & 0x10 else 0) + 10
    path = store / rec["file"]
    b = path.read_bytes()[body_pos]
    patch(path, body_pos, bytes([b ^ 0x01]))
    r = mqstore("check", str(store))
    assert r.returncode == 1
    err = r.stderr.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("FAILED: 1 problem(s)")
    assert f"commitlog @{rec['physicalOffset']}: body CRC mismatch (stored {rec['bodyCRC']}" in err[0]


def test_check_fails_on_consume_queue_mismatch(store):
    cq = store / "consumequeue" / "GoldenOrders" / "1" / "00000000000000006000"
    off, size, tags = struct.unpack(">qiq", cq.read_bytes()[20 * 5 : 20 * 6])
    patch(cq, 20 * 5 + 8, struct.pack(">i", size + 1))
    r = mqstore("check", str(store))
    assert r.returncode == 1
    assert f"consumequeue/GoldenOrders/1 unit 305 -> @{off}: record has size {size} (unit says {size + 1})" in r.stderr


def test_check_fails_on_broken_magic(store):
    rec = manifest()[300]
    patch(store / rec["file"], rec["filePosition"] + 4, b"\0\0\0\0")
    r = mqstore("check", str(store))
    assert r.returncode == 1
    assert f"commitlog @{rec['physicalOffset']}: bad magic 0x00000000" in r.stderr
    # the unreadable rest of that file shows up as dangling consume-queue units too
    assert "is not at a record start" in r.stdout


def test_commitlog_listing_and_verify(store):
    r = mqstore("commitlog", str(store / "commitlog"), "--verify")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()[1:]
    recs = [ln for ln in lines if "BLANK" not in ln]
    assert len(recs) == 1488 and sum("BLANK" in ln for ln in lines) == 5
    m = manifest()
    for ln, rec in zip(recs, m, strict=True):
        cols = ln.split()
        assert int(cols[0]) == rec["physicalOffset"] and int(cols[1]) == rec["totalSize"]
        assert int(cols[2]) == rec["queueOffset"] and int(cols[3]) == rec["queueId"]
        assert " ok " in ln and rec["topic"] in ln
    # all lines have the same column layout
    assert len({ln.index(" ok ") for ln in recs}) == 1
    r = mqstore("commitlog", str(store / "commitlog"), "--from", str(m[10]["physicalOffset"]), "--count", "3")
    assert [int(ln.split()[0]) for ln in r.stdout.splitlines()[1:]] == [x["physicalOffset"] for x in m[10:13]]


def test_consumequeue_listing(store):
    r = mqstore("consumequeue", str(store / "consumequeue" / "GoldenOrders" / "1"))
    assert r.returncode == 0
    rows = [ln.split() for ln in r.stdout.splitlines()[1:]]
    with open(GOLDEN / "consumequeue.jsonl", encoding="utf-8") as fh:
        units = [json.loads(x) for x in fh]
    want = [u for u in units if u["topic"] == "GoldenOrders" and u["queueId"] == 1]
    assert len(rows) == len(want) == 518
    assert [(int(a), int(b), int(c), int(d)) for a, b, c, d, _ in rows] == [
        (u["index"], u["commitLogOffset"], u["size"], u["tagsCode"]) for u in want
    ]


def test_index_listing_infers_geometry(store):
    with open(GOLDEN / "index.jsonl", encoding="utf-8") as fh:
        files = [json.loads(x) for x in fh if '"type": "file"' in x]
    o = files[-1]
    r = mqstore("index", str(store / o["file"]))
    assert r.returncode == 0, r.stderr
    assert "hashSlotNum=100 indexNum=400" in r.stdout
    assert f"hashSlotCount={o['hashSlotCount']}  indexCount={o['indexCount']}" in r.stdout
    rows = [ln.split() for ln in r.stdout.splitlines() if ln[:10].strip().isdigit()]
    assert [[int(c[0]), int(c[1]), int(c[3]), int(c[4]), int(c[5])] for c in rows] == o["entries"]
    bad = mqstore("index", str(store / o["file"]), "--hash-slots", "100")
    assert bad.returncode == 2 and "give both" in bad.stderr


def test_check_fails_on_index_entry_with_foreign_key_hash(store):
    path = store / "index" / "20261122035336558"
    entry = 40 + 100 * 4 + 7 * 20
    patch(path, entry, struct.pack(">i", 12345))
    r = mqstore("check", str(store))
    assert r.returncode == 1
    assert "index/20261122035336558 entry 7: keyHash 12345 is none of the keys of the record @1106" in r.stderr


def test_check_with_broker_conf(store, tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"brokerClusterName=GoldenCluster\nstorePathRootDir={store}\nmappedFileSizeCommitLog=262144\n"
        "maxIndexNum=400\nmaxHashSlotNum=100\n"
    )
    r = mqstore("check", "-c", str(conf))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK: 1488 records, 1488 consume-queue units, 8 index files checked" in r.stdout
    # a wrong delay table changes the expected tags code of SCHEDULE_TOPIC_XXXX units
    conf.write_text(conf.read_text() + "messageDelayLevel=2s 5s 10s 30s\n")
    r = mqstore("check", "-c", str(conf))
    assert r.returncode == 1 and "consumequeue/SCHEDULE_TOPIC_XXXX/0 unit 0" in r.stderr
    r = mqstore("check")
    assert r.returncode == 2 and "no store root" in r.stderr

"""Prepared dispatch: the reput takes the DispatchRequests the appends left, or parses the records.

Either way the consume queues and the index files must come out byte for byte the
same: one store dispatches from prepared requests, the other parses every record
back (prepared dispatch off, a full prepared queue, a restart, a slave's
replicated bytes), with the same store clock.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
from pathlib import Path

import pytest

import store.commit_log as commit_log_module
from common.message import BatchEntry, MessageExtBatch, MessageSysFlag, encode_batch_body
from store.commit_log import SCHEDULE_TOPIC
from store.config import BrokerRole
from store.message_store import PutMessageStatus
from tests.store.store_helpers import make_msg, open_store, small_config


@pytest.fixture
def fixed_clock(monkeypatch):
    """The CommitLog's store time: a counter, so two stores write identical records."""
    ticks = itertools.count(1_800_000_000_000, 7)
    monkeypatch.setattr(commit_log_module, "now_ms", lambda: next(ticks))

    def reset() -> None:
        nonlocal ticks
        ticks = itertools.count(1_800_000_000_000, 7)
        monkeypatch.setattr(commit_log_module, "now_ms", lambda: next(ticks))

    return reset


def _messages(seed: int = 3) -> list:
    """A mix: tags/keys/uniq keys (or none), spaces in KEYS, delays, transactions, IPv6, non-ASCII, batches."""
    rnd = random.Random(seed)
    out: list = []
    for i in range(400):
        kind = i % 10
        props = {"UNIQ_KEY": f"7F000001{i:024X}"} if i % 3 else {}
        if kind == 1:
            props["city"] = "Zürich 東京"
        topic = f"T{i % 3}"
        sys_flag = 0
        keys = f"k{i} k{i + 1}  x{i % 5}" if i % 4 == 0 else (f"k{i}" if i % 4 == 1 else None)
        tags = None if kind == 2 else f"tag{i % 6}"
        born = ("::1", 5000) if kind == 3 else ("10.0.0.1", 5000 + i)
        store_host = ("fd00::7", 10911) if kind == 4 else ("127.0.0.1", 10911)
        if kind == 5:
            topic = SCHEDULE_TOPIC
            props["DELAY"] = str(1 + i % 20)  # past the last level too
            props["REAL_TOPIC"] = "T0"
        elif kind == 6:
            sys_flag = (MessageSysFlag.TRANSACTION_PREPARED_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE,
                        MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)[i % 3]
        if kind == 7 and i % 20 == 7:
            out.append(MessageExtBatch(
                topic="TB", queue_id=i % 2, born_host=("10.0.0.2", 1), store_host=("127.0.0.1", 10911),
                properties={"CLUSTER": "c"}, born_timestamp=1,
                body=encode_batch_body([BatchEntry(body=os.urandom(rnd.randrange(1, 200)),
                                                   properties={"KEYS": f"b{i}-{j}", "TAGS": "bt",
                                                               "UNIQ_KEY": f"B{i:04d}{j:04d}"})
                                        for j in range(rnd.randrange(1, 6))])))
            continue
        out.append(make_msg(topic, i % 4, os.urandom(rnd.randrange(0, 700)), tags=tags, keys=keys, props=props,
                            born_host=born, store_host=store_host, sys_flag=sys_flag))
    return out


def _put_all(store, msgs) -> None:
    for m in msgs:
        r = store.put_messages(m) if isinstance(m, MessageExtBatch) else store.put_message(m)
        assert r.status is PutMessageStatus.PUT_OK, r


def _files(root: Path, sub: str) -> dict[str, bytes]:
    """Relative path -> bytes of every file under ``root/sub`` (index files by order: names are times)."""
    base = root / sub
    out = {}
    paths = sorted(p for p in base.rglob("*") if p.is_file())
    for n, p in enumerate(paths):
        key = f"index#{n}" if sub == "index" else str(p.relative_to(base))
        out[key] = p.read_bytes()
    return out


def _snapshot(root: Path) -> tuple[dict, dict, dict]:
    return _files(root, "commitlog"), _files(root, "consumequeue"), _files(root, "index")


def _config(root: Path, **kw):
    return small_config(root, mappedFileSizeCommitLog=32 * 1024, maxIndexNum=300, maxHashSlotNum=101, **kw)


def _counting_parser(store) -> list[int]:
    """Count the records the reput parses back (the instance attribute shadows the method)."""
    calls = [0]
    check = store.commit_log.check_message_and_return_size

    def counted(*a, **kw):
        calls[0] += 1
        return check(*a, **kw)

    store.commit_log.check_message_and_return_size = counted
    return calls


def test_prepared_and_parsed_dispatch_write_identical_files(tmp_path, fixed_clock):
    msgs = _messages()
    a = open_store(_config(tmp_path / "a"))
    assert a.commit_log.prepared is not None  # the store turns it on for its reput
    parsed_a = _counting_parser(a)
    _put_all(a, msgs[:150])
    a.dispatch_pending()
    _put_all(a, msgs[150:])
    a.dispatch_pending()
    # only the BLANK ends of full files were read back; every record came prepared
    blanks = len(os.listdir(a.config.commit_log_dir)) - 1
    assert parsed_a[0] == blanks
    assert not a.commit_log.prepared
    a.shutdown_sync()

    fixed_clock()
    b = open_store(_config(tmp_path / "b"))
    b.commit_log.prepared = None  # parse every record
    parsed_b = _counting_parser(b)
    _put_all(b, msgs)
    b.dispatch_pending()
    assert parsed_b[0] > len(msgs)
    b.shutdown_sync()

    cl_a, cq_a, idx_a = _snapshot(tmp_path / "a")
    cl_b, cq_b, idx_b = _snapshot(tmp_path / "b")
    assert cl_a == cl_b and len(cl_a) > 3
    assert cq_a == cq_b and len(cq_a) > 10
    assert idx_a == idx_b and len(idx_a) >= 2


def test_full_prepared_queue_falls_back_to_parsing(tmp_path, fixed_clock):
    msgs = _messages(seed=11)
    a = open_store(_config(tmp_path / "a"))
    a.commit_log.prepared_capacity = 7  # the rest of each pass is parsed
    parsed = _counting_parser(a)
    for i in range(0, len(msgs), 50):
        _put_all(a, msgs[i : i + 50])
        assert len(a.commit_log.prepared) == 7
        a.dispatch_pending()
    assert parsed[0] > len(msgs) // 2
    a.shutdown_sync()

    fixed_clock()
    b = open_store(_config(tmp_path / "b"))
    b.commit_log.prepared = None
    _put_all(b, msgs)
    b.dispatch_pending()
    b.shutdown_sync()
    assert _snapshot(tmp_path / "a") == _snapshot(tmp_path / "b")


def test_restart_rebuilds_by_parsing_what_was_built_from_prepared_requests(tmp_path, fixed_clock):
    root = tmp_path / "s"
    s = open_store(_config(root))
    _put_all(s, _messages(seed=5))
    s.dispatch_pending()
    max_before = s.get_max_offset_in_queue("T0", 0)
    assert max_before > 10
    s.shutdown_sync()
    _cl, cq_before, idx_before = _snapshot(root)
    # a restart with the consume queues and index gone: the reput parses the whole log
    shutil.rmtree(root / "consumequeue")
    shutil.rmtree(root / "index")
    s = open_store(_config(root))
    assert not s.commit_log.prepared
    parsed = _counting_parser(s)
    s.dispatch_pending()
    assert parsed[0] > 300
    # new appends after the restart go the prepared way again, after the parsed ones
    assert s.put_message(make_msg("T0", 0, b"after restart", keys="late")).is_ok()
    assert len(s.commit_log.prepared) == 1
    before = parsed[0]
    s.dispatch_pending()
    assert parsed[0] == before and not s.commit_log.prepared
    assert s.get_max_offset_in_queue("T0", 0) == max_before + 1
    s.shutdown_sync()
    _cl, cq_after, idx_after = _snapshot(root)
    # everything but the new message is as before
    assert {k: v for k, v in cq_after.items() if not k.startswith("T0/0/")} == {
        k: v for k, v in cq_before.items() if not k.startswith("T0/0/")}
    assert len(idx_after) == len(idx_before)


def test_slave_append_data_is_parsed_into_the_masters_files(tmp_path, fixed_clock):
    master = open_store(_config(tmp_path / "m"))
    slave = open_store(_config(tmp_path / "s", brokerRole=BrokerRole.SLAVE))
    _put_all(master, _messages(seed=8))
    master.dispatch_pending()
    parsed = _counting_parser(slave)
    offset = 0
    rnd = random.Random(2)
    end = master.get_max_phy_offset()
    while offset < end:
        mv = master.get_commit_log_data(offset)
        data = bytes(mv)
        mv.release()
        while data:
            # odd chunk sizes: records arrive split, the reput waits for their tails
            chunk = data[: rnd.randrange(1, 3000)]
            data = data[len(chunk):]
            assert slave.append_to_commit_log(offset, chunk)
            offset += len(chunk)
            slave.dispatch_pending()
    assert not slave.commit_log.prepared
    assert parsed[0] > 300
    master.shutdown_sync()
    slave.shutdown_sync()
    assert _snapshot(tmp_path / "m") == _snapshot(tmp_path / "s")


def test_arriving_listener_gets_properties_parsed_only_when_read(tmp_path):
    from collections.abc import Mapping

    from common.message import string_to_properties

    arrived = []
    s = open_store(_config(tmp_path / "l"), arriving_listener=lambda *a: arrived.append(a))
    msgs = [make_msg("T0", 0, b"x", tags="tg", keys="a b", props={"color": "red", "é": "ü"}) for _ in range(3)]
    _put_all(s, msgs[:2])
    s.dispatch_pending()  # prepared requests
    s.commit_log.prepared = None
    _put_all(s, msgs[2:])
    s.dispatch_pending()  # parsed from the log
    assert [a[2] for a in arrived] == [1, 2, 3]  # next queue offsets
    for a in arrived:
        props = a[5]
        assert isinstance(props, Mapping)
        assert props.get("color") == "red" and props["é"] == "ü" and "TAGS" in props
        assert dict(props) == string_to_properties(msgs[0].properties_string)
        assert props.get("missing", "d") == "d" and len(props) == 4
    s.shutdown_sync()


def test_arrivals_listener_gets_each_run_once_in_order(tmp_path):
    runs = []
    s = open_store(_config(tmp_path / "r"), arrivals_listener=lambda run: runs.append(list(run)))
    batch = MessageExtBatch(topic="T1", queue_id=1, body=encode_batch_body(
        [BatchEntry(body=b"b%d" % i, properties={"TAGS": "t"}) for i in range(4)]))
    _put_all(s, [make_msg("T0", 0, b"x", tags="a") for _ in range(3)] + [batch])
    s.dispatch_pending()
    assert len(runs) == 1  # one call for everything readable, not one per record
    assert [(r.topic, r.queue_id, r.consume_queue_offset) for r in runs[0]] == \
        [("T0", 0, 0), ("T0", 0, 1), ("T0", 0, 2), ("T1", 1, 0), ("T1", 1, 1), ("T1", 1, 2), ("T1", 1, 3)]
    _put_all(s, [make_msg("T0", 0, b"y")])
    s.dispatch_pending()
    assert len(runs) == 2 and [(r.topic, r.consume_queue_offset) for r in runs[1]] == [("T0", 3)]
    s.shutdown_sync()

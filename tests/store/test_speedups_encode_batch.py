"""common.speedups.encode_batch: a client batch stored in one call, both twins.

Each result is checked three ways: against records built by hand the way RocketMQ
lays them out (tests/store/test_speedups.py's encode_record, independent of the
codec), against the five separate steps it fuses (split_batch, batch_properties,
encode_records, msg_ids, dispatch_requests), and the compiled twin against the
pure one on random batches: same bytes, same answers, same requests.
"""

from __future__ import annotations

import random
import struct

import pytest

from common import speedups
from store.dispatch import DispatchRequest
from tests.store.test_speedups import TWINS, V4, V6, batch_entry, encode_record, needs_compiled, ref_java_hash

PREFIX = "7F0000010000" + "2A9F"
FIELDS = ("topic", "queue_id", "commit_log_offset", "msg_size", "tags_code", "store_timestamp",
          "consume_queue_offset", "keys", "uniq_key", "sys_flag", "prepared_transaction_offset", "success",
          "bit_map", "properties_string")


def call(twin, buf, src, batch_props=b"", *, pos=100, limit=1 << 30, born_v6=False, store_v6=False, qoff=77,
         file_base=4096, cls=DispatchRequest, topic="TopicA"):
    """encode_batch with encode_record()'s fixed header fields (queue 3, prepared offset 9, ...)."""
    sys_flag = (0x10 if born_v6 else 0) | (0x20 if store_v6 else 0)
    return twin.encode_batch(buf, pos, limit, src, batch_props, topic.encode(), 3, qoff, file_base, sys_flag,
                             1_700_000_000_000, bytes(16) if born_v6 else V4, 4000, 1_700_000_000_123,
                             V6 if store_v6 else V4, 10911, 0, 9, PREFIX, cls, topic)


def fields_of(req) -> tuple:
    return tuple(getattr(req, f) for f in FIELDS)


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("born_v6", [False, True])
@pytest.mark.parametrize("store_v6", [False, True])
@pytest.mark.parametrize("batch_props", [b"", b"WAIT\x01true\x02CLUSTER\x01c"])
def test_writes_what_rocketmq_writes_with_ids_and_requests(twin, born_v6, store_v6, batch_props):
    parts = [(b"hello", b"KEYS\x01k1 k2\x02TAGS\x01t\x02UNIQ_KEY\x01U1", 5), (b"", b"", 5),
             (bytes(range(256)) * 4, "x\x01y\x02TAGS\x01\u00e9t\u00e9".encode(), 5)]
    src = b"".join(batch_entry(*p) for p in parts)
    buf = bytearray(9000)
    status, end, n, ids, reqs = call(twin, buf, src, batch_props, born_v6=born_v6, store_v6=store_v6)
    assert status == 0 and n == 3
    expected, positions, texts = b"", [], []
    for i, (body, props, flag) in enumerate(parts):
        full = props + b"\x02" + batch_props if props and batch_props else props or batch_props
        positions.append(100 + len(expected))
        texts.append(full.decode())
        expected += encode_record(body=body, raw_props=full, born_v6=born_v6, store_v6=store_v6, qoff=77 + i,
                                  phys=4096 + positions[-1], flag=flag, sys_flag=0)
    assert end == 100 + len(expected)
    assert bytes(buf[100:end]) == expected
    assert buf[:100] == bytes(100) and buf[end:] == bytes(len(buf) - end)
    assert ids == ",".join(f"{PREFIX}{4096 + p:016X}" for p in positions)
    nexts = [*positions[1:], end]
    sys_flag = (0x10 if born_v6 else 0) | (0x20 if store_v6 else 0)
    tags = ["t", None, "\u00e9t\u00e9"]
    want = [("TopicA", 3, 4096 + p, nx - p, ref_java_hash(t) if t else 0, 1_700_000_000_123, 77 + i,
             "k1 k2" if i == 0 else "", "U1" if i == 0 else None, sys_flag, 9, True, None, texts[i])
            for i, (p, nx, t) in enumerate(zip(positions, nexts, tags, strict=True))]
    assert [fields_of(r) for r in reqs] == want
    assert all(type(r) is DispatchRequest for r in reqs)
    assert reqs[0].properties["TAGS"] == "t"  # parsed lazily from the stored text
    assert reqs[1].properties == ({} if not batch_props else {"WAIT": "true", "CLUSTER": "c"})


@pytest.mark.parametrize("twin", TWINS)
def test_without_a_class_no_requests(twin):
    buf = bytearray(4000)
    status, end, n, ids, reqs = call(twin, buf, batch_entry(b"abc", b"TAGS\x01x"), cls=None)
    assert (status, n, reqs) == (0, 1, None) and end > 100 and ids.startswith(PREFIX)


def garbled_bodies() -> list[tuple[bytes, str]]:
    good = batch_entry(b"abc", b"K\x01v")
    return [
        (good[:21], "bad batch body: truncated batch entry at 0"),
        (good + good[:10], f"bad batch body: truncated batch entry at {len(good)}"),
        (struct.pack(">iiiii", 30, 0, 0, 0, 99) + bytes(10), "bad batch body: bad body length in batch entry at 0"),
        (struct.pack(">i", len(good) + 1) + good[4:], "bad batch body: bad size in batch entry at 0"),
        (b"", "empty batch"),
    ]


@pytest.mark.parametrize("twin", TWINS)
def test_refusals_write_nothing(twin):
    cases = [(body, b"", (1, text)) for body, text in garbled_bodies()]
    good = batch_entry(b"abc", b"K\x01v")
    cases += [
        (good, b"A\x01\x00", (1, "properties contain NUL")),
        (good + batch_entry(b"x", b"K\x01\x00"), b"", (1, "batch properties contain NUL")),
        (good + batch_entry(b"x", b"K\x01\xff"), b"", (1, "batch properties not UTF-8")),
        (good + batch_entry(b"x", b"K\x01" + b"v" * 32766), b"", (2, "properties of a batch message exceed 32767 bytes")),
        # entry order: the first entry's fault is the answer
        (batch_entry(b"x", b"K\x01\xff") + batch_entry(b"x", b"K\x01\x00"), b"", (1, "batch properties not UTF-8")),
        # one byte too many once the batch's own properties are appended
        (batch_entry(b"x", b"K\x01" + b"v" * 32760), b"C\x01ccc", (2, "properties of a batch message exceed 32767 bytes")),
    ]
    for body, bp, answer in cases:
        buf = bytearray(80_000)
        assert call(twin, buf, body, bp) == answer, answer
        assert buf == bytes(len(buf))


@pytest.mark.parametrize("twin", TWINS)
def test_too_little_room_gives_the_size_and_writes_nothing(twin):
    src = batch_entry(b"a" * 100, b"TAGS\x01t") + batch_entry(b"b" * 50, b"")
    buf = bytearray(4000)
    status, end, *_ = call(twin, bytearray(4000), src, b"C\x01c")
    need = end - 100
    assert call(twin, buf, src, b"C\x01c", limit=need - 1) == (3, need)
    assert call(twin, buf, src, b"C\x01c", limit=-1) == (3, need)
    assert call(twin, buf, src, b"C\x01c", pos=4000 - need + 1) == (3, need)  # the buffer's end limits too
    assert buf == bytes(4000)
    assert call(twin, buf, src, b"C\x01c", limit=need)[0] == 0


@pytest.mark.parametrize("twin", TWINS)
def test_bad_arguments_raise_before_anything(twin):
    src = batch_entry(b"abc", b"")
    buf = bytearray(1000)
    with pytest.raises(ValueError):
        call(twin, buf, src, topic="")
    with pytest.raises(ValueError):
        twin.encode_batch(buf, 0, 1000, src, b"", b"T", 0, 0, 0, 0x10, 0, V4, 0, 0, V4, 0, 0, 0, PREFIX, None, "T")
    with pytest.raises(IndexError):
        call(twin, buf, src, pos=1001)
    with pytest.raises(OverflowError):
        twin.encode_batch(buf, 0, 1000, src, b"", b"T", 1 << 31, 0, 0, 0, 0, V4, 0, 0, V4, 0, 0, 0, PREFIX, None, "T")
    with pytest.raises(ValueError):
        twin.encode_batch(buf, 0, 1000, src, b"", b"T", 0, 0, 0, 0, 0, V4, 0, 0, V4, 0, 0, 0, "\u00e9", None, "T")
    assert buf == bytes(1000)


def random_batch(rnd: random.Random) -> tuple[bytes, bytes]:
    names = ["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "WAIT", "a"]
    entries = []
    for _ in range(rnd.randint(1, 20)):
        props = "\x02".join(f"{rnd.choice(names)}\x01{rnd.choice(['', 'v', 'k1 k2', 'é', '日本', str(rnd.random())])}"
                            for _ in range(rnd.randint(0, 4)))
        entries.append(batch_entry(rnd.randbytes(rnd.randint(0, 3000)), props.encode(), rnd.randint(-5, 5)))
    bp = rnd.choice([b"", b"CLUSTER\x01c", b"TAGS\x01bt\x02WAIT\x01true"])
    return b"".join(entries), bp


def steps(twin, buf, src, bp, pos, base, qoff, cls):
    """The five calls encode_batch replaces, as commit_log made them."""
    items = twin.split_batch(src)
    fields, var = twin.batch_properties(src, items, bp)
    end, positions = twin.encode_records(buf, pos, src, items, bp, b"TopicA", 3, qoff, base, 0, 1_700_000_000_000,
                                         V4, 4000, 1_700_000_000_123, V4, 10911, 0, 9)
    reqs = twin.dispatch_requests(cls, "TopicA", 3, base, positions, end, 1_700_000_000_123, qoff, 0, 9, fields)
    return end, len(positions), twin.msg_ids(PREFIX, base, positions), reqs


@pytest.mark.parametrize("twin", TWINS)
def test_same_as_the_five_steps_on_random_batches(twin):
    rnd = random.Random(19)
    for _ in range(60):
        src, bp = random_batch(rnd)
        pos, base, qoff = rnd.randint(0, 500), rnd.randint(0, 1 << 40), rnd.randint(0, 1 << 30)
        a, b = bytearray(70_000), bytearray(70_000)
        got = call(twin, a, src, bp, pos=pos, file_base=base, qoff=qoff)
        want = steps(twin, b, src, bp, pos, base, qoff, DispatchRequest)
        assert got[:4] == (0, *want[:3])
        assert [fields_of(r) for r in got[4]] == [fields_of(r) for r in want[3]]
        assert a == b


@needs_compiled
def test_twins_agree_on_random_and_garbled_batches():
    rnd = random.Random(7)
    for i in range(300):
        src, bp = random_batch(rnd)
        if i % 3 == 0:  # garble: a flipped byte, a cut, or NUL / invalid UTF-8 in the batch's properties
            k = rnd.randrange(len(src))
            src = rnd.choice([src[:k] + bytes([src[k] ^ 0xFF]) + src[k + 1:], src[:k], src])
            bp = rnd.choice([bp, b"A\x01\x00", b"A\x01\xfe"])
        limit = rnd.choice([1 << 30, rnd.randint(-1, 40_000)])
        pos, base = rnd.randint(0, 300), rnd.randint(0, 1 << 40)
        a, b = bytearray(70_000), bytearray(70_000)
        got_c = call(speedups.compiled, a, src, bp, pos=pos, limit=limit, file_base=base)
        got_p = call(speedups.pure, b, src, bp, pos=pos, limit=limit, file_base=base)
        if got_c[0] == 0:
            assert got_p[:4] == got_c[:4]
            assert [fields_of(r) for r in got_p[4]] == [fields_of(r) for r in got_c[4]]
        else:
            assert got_p == got_c
        assert a == b


# -- CommitLog.put_messages through encode_batch -------------------------------------------------------


def test_commit_log_batches_roll_over_and_leave_the_requests_the_reput_would_parse(tmp_path):
    """Batches that do not fit the last file's room (or its warmed part) go whole into the next file
    after a BLANK record; each prepared request equals the one parsed back from its record."""
    from common.message import MessageExtBatch
    from store.commit_log import CommitLog
    from store.config import MessageStoreConfig

    cfg = MessageStoreConfig(storePathRootDir=str(tmp_path), storePathCommitLog=str(tmp_path / "commitlog"),
                             mappedFileSizeCommitLog=64 * 1024)
    cl = CommitLog(cfg)
    assert cl.load()
    cl.enable_prepared_dispatch()
    rnd = random.Random(11)
    qoff = 0
    for i in range(40):
        n = rnd.randint(1, 12)
        body = b"".join(batch_entry(rnd.randbytes(rnd.randint(0, 900)), f"UNIQ_KEY\x01U{i}_{j}\x02TAGS\x01t{j % 3}".encode())
                        for j in range(n))
        b = MessageExtBatch(topic="RollT", queue_id=2, body=body, properties_string="CLUSTER\x01c",
                            born_host=("127.0.0.1", 4000), store_host=("127.0.0.1", 10911))
        r = cl.put_messages(b)
        assert r.is_ok() and r.append_result.msg_num == n and r.append_result.logics_offset == qoff
        start = r.append_result.wrote_offset
        assert start // cfg.mappedFileSizeCommitLog == (start + r.append_result.wrote_bytes - 1) // cfg.mappedFileSizeCommitLog
        qoff += n
    files = cl.mapped_file_queue.mapped_files
    assert len(files) >= 3
    reqs = list(cl.prepared)
    assert len(reqs) == qoff
    for req in reqs:
        mf = cl.mapped_file_queue.find_mapped_file_by_offset(req.commit_log_offset)
        parsed = cl.check_message_and_return_size(memoryview(mf.mm), req.commit_log_offset - mf.file_from_offset,
                                                  mf.file_from_offset, check_crc=True)
        assert fields_of(parsed) == fields_of(req)
    # one entry larger than a whole file: refused, nothing written
    end = cl.get_max_offset()
    huge = MessageExtBatch(topic="RollT", queue_id=2, body=batch_entry(bytes(70_000), b""),
                           born_host=("127.0.0.1", 4000), store_host=("127.0.0.1", 10911))
    r = cl.put_messages(huge)
    assert (r.status.name, r.remark) == ("MESSAGE_ILLEGAL", "batch larger than a commit-log file")
    assert cl.get_max_offset() == end
    cl.shutdown()

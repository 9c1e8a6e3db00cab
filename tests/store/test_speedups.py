"""common.speedups: the pure-Python and the compiled twin give identical results.

Every function is run through both twins (the compiled one when it was built) on
random and edge inputs, and each result is checked against an independent
reference: a straight Java-style hash loop, hand-built records and batch bodies
and the golden RocketMQ 4.9.7 CommitLog (the record parser's reference decoder is in
test_record_codec.py).
"""

from __future__ import annotations

import base64
import json
import mmap
import os
import random
import struct
import sys
import zlib

import pytest

from common import speedups
from common.message import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, string_to_properties
from tests.support import GOLDEN_STORE

TWINS = [pytest.param(speedups.pure, id="pure")]
if speedups.compiled is not None:
    TWINS.append(pytest.param(speedups.compiled, id="compiled"))
needs_compiled = pytest.mark.skipif(speedups.compiled is None, reason="common._speedups not built")

GOLDEN = GOLDEN_STORE


def test_reports_which_twin_loaded():
    """Print the twin in use; on CI (Linux) the compiled twin must have been built by the install."""
    forced_pure = os.environ.get("ROCKETMQ_PY_PURE") == "1"
    print(f"common.speedups: IS_COMPILED={speedups.IS_COMPILED} (compiled twin "
          f"{'built' if speedups.compiled is not None else 'missing'}, ROCKETMQ_PY_PURE={forced_pure})")
    assert speedups.IS_COMPILED == (speedups.compiled is not None and not forced_pure)
    impl = speedups.compiled if speedups.IS_COMPILED else speedups.pure
    assert speedups.java_hash is impl.java_hash and speedups.parse_record is impl.parse_record
    if os.environ.get("CI") == "true" and sys.platform.startswith("linux"):
        assert speedups.compiled is not None, "common._speedups did not build: is a C compiler installed?"


# -- java_hash -----------------------------------------------------------------------------


def ref_java_hash(s: str) -> int:
    """String.hashCode() the way Java spells it: one code unit at a time."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def random_text(rnd: random.Random, n: int) -> str:
    pools = [(0x20, 0x7E), (0xA0, 0xFF), (0x100, 0x7FF), (0x4E00, 0x9FFF), (0xD800, 0xDFFF),
             (0xE000, 0xFFFF), (0x10000, 0x10FFFF)]
    out = []
    for _ in range(n):
        lo, hi = rnd.choice(pools)
        out.append(chr(rnd.randint(lo, hi)))
    return "".join(out)


@pytest.mark.parametrize("twin", TWINS)
def test_java_hash_known_values(twin):
    # values of String.hashCode() as Java prints them
    assert twin.java_hash("") == 0
    assert twin.java_hash("a") == 97
    assert twin.java_hash("hello") == 99162322
    assert twin.java_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE
    assert twin.java_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # a surrogate pair, two units
    assert twin.java_hash("\ud800") == 0xD800  # a lone surrogate is one unit
    assert twin.java_hash("é") == 0xE9
    assert twin.java_hash("TopicA#key") == ref_java_hash("TopicA#key")


@pytest.mark.parametrize("twin", TWINS)
def test_java_hash_random_strings(twin):
    rnd = random.Random(1)
    for n in [0, 1, 2, 5, 31, 32, 100, 1023, 1024, 1025, 5000]:
        for _ in range(5):
            s = random_text(rnd, n)
            assert twin.java_hash(s) == ref_java_hash(s), repr(s[:20])
            a = "".join(chr(rnd.randint(32, 126)) for _ in range(n))
            assert twin.java_hash(a) == ref_java_hash(a)


@pytest.mark.parametrize("twin", TWINS)
def test_java_hash_rejects_non_str(twin):
    for bad in (b"abc", 1, None):
        with pytest.raises(TypeError):
            twin.java_hash(bad)


def test_java_string_hash_delegates():
    from common.util import java_string_hash

    assert java_string_hash("\U0001F600x") == ref_java_hash("\U0001F600x")
    assert java_string_hash("polygenelubricants") == -(2**31)


# -- index_put / index_put_keys --------------------------------------------------------------

SLOTS, ENTRIES = 16, 12
SIZE = 40 + SLOTS * 4 + ENTRIES * 20


def read_slot(buf, i):
    return struct.unpack_from(">i", buf, 40 + i * 4)[0]


def read_entry(buf, n):
    return struct.unpack_from(">iqii", buf, 40 + SLOTS * 4 + n * 20)


def abs_hash(h: int) -> int:
    h &= 0xFFFFFFFF
    s = h - (1 << 32) if h >= 1 << 31 else h
    return 0 if s == -(2**31) else abs(s)


@pytest.mark.parametrize("twin", TWINS)
def test_index_put_layout_and_chain(twin):
    buf = bytearray(SIZE)
    assert twin.index_put(buf, SLOTS, 1, 5, 100, 0) is True
    assert twin.index_put(buf, SLOTS, 2, 21, 200, 3) is False  # 21 % 16 == 5: chained behind entry 1
    assert twin.index_put(buf, SLOTS, 3, -5, 300, 4) is False  # abs(-5) == 5
    assert read_slot(buf, 5) == 3
    assert read_entry(buf, 1) == (5, 100, 0, 0)
    assert read_entry(buf, 2) == (21, 200, 3, 1)
    assert read_entry(buf, 3) == (5, 300, 4, 2)
    # Integer.MIN_VALUE (signed or unsigned spelling) -> keyHash 0, slot 0
    assert twin.index_put(buf, SLOTS, 4, -(2**31), 400, 0) is True
    assert twin.index_put(buf, SLOTS, 5, 0x80000000, 500, 0) is False
    assert read_slot(buf, 0) == 5 and read_entry(buf, 5) == (0, 500, 0, 4)
    # 0xFFFFFFFF is -1: keyHash 1
    twin.index_put(buf, SLOTS, 6, 0xFFFFFFFF, 600, 0)
    assert read_entry(buf, 6)[0] == 1 and read_slot(buf, 1) == 6
    # a slot value beyond index_count (stale garbage) counts as empty
    struct.pack_into(">i", buf, 40 + 7 * 4, 99)
    assert twin.index_put(buf, SLOTS, 7, 7, 700, 0) is True
    assert read_entry(buf, 7) == (7, 700, 0, 0)
    struct.pack_into(">i", buf, 40 + 8 * 4, -3)
    assert twin.index_put(buf, SLOTS, 8, 8, 800, 0) is True


@pytest.mark.parametrize("twin", TWINS)
def test_index_put_bad_arguments_raise_and_write_nothing(twin):
    buf = bytearray(SIZE)
    before = bytes(buf)
    with pytest.raises(IndexError):
        twin.index_put(buf, SLOTS, ENTRIES, 1, 1, 0)  # one past the last entry
    with pytest.raises(IndexError):
        twin.index_put(buf, 10**9, 1, 1, 1, 0)  # slot table larger than the buffer
    with pytest.raises(IndexError):
        twin.index_put(buf, 2**61, 1, 1, 1, 0)
    with pytest.raises(IndexError):
        twin.index_put(bytearray(10), 1, 0, 1, 1, 0)
    with pytest.raises(ValueError):
        twin.index_put(buf, 0, 1, 1, 1, 0)
    with pytest.raises(ValueError):
        twin.index_put(buf, SLOTS, -1, 1, 1, 0)
    with pytest.raises(ValueError):
        twin.index_put(buf, SLOTS, 1, 2**32, 1, 0)
    with pytest.raises(ValueError):
        twin.index_put(buf, SLOTS, 1, -(2**31) - 1, 1, 0)
    with pytest.raises(OverflowError):
        twin.index_put(buf, SLOTS, 1, 1, 2**63, 0)
    with pytest.raises(OverflowError):
        twin.index_put(buf, SLOTS, 1, 1, 1, 2**31)
    with pytest.raises(TypeError):
        twin.index_put(bytes(SIZE), SLOTS, 1, 1, 1, 0)  # read-only
    assert bytes(buf) == before
    twin.index_put(buf, SLOTS, ENTRIES - 1, 1, 1, 0)  # the last entry fits exactly
    assert read_entry(buf, ENTRIES - 1) == (1, 1, 0, 0)


@pytest.mark.parametrize("twin", TWINS)
def test_index_put_keys_is_index_put_of_each_hash(twin):
    rnd = random.Random(2)
    a, b = bytearray(SIZE), bytearray(SIZE)
    count, slots_a, slots_b = 1, 0, 0
    while count < ENTRIES:
        keys = [f"T#{random_text(rnd, rnd.randint(0, 12))}" for _ in range(rnd.randint(1, 4))]
        td = rnd.randint(0, 50)
        done, new = twin.index_put_keys(a, SLOTS, count, ENTRIES, keys, 1000 + count, td)
        assert done == min(len(keys), ENTRIES - count)
        slots_a += new
        for i, k in enumerate(keys[:done]):
            n = count + i
            slots_b += twin.index_put(b, SLOTS, n, ref_java_hash(k), 1000 + count, td)
            if n <= 1:
                td = 0
        count += done
    assert a == b and slots_a == slots_b
    assert twin.index_put_keys(a, SLOTS, ENTRIES, ENTRIES, ["x"], 1, 0) == (0, 0)  # full
    assert twin.index_put_keys(a, SLOTS, 3, ENTRIES, [], 1, 0) == (0, 0)
    assert twin.index_put_keys(a, SLOTS, 3, -(2**63), ["x"], 1, 0) == (0, 0)
    assert twin.index_put_keys(a, SLOTS, 3, 2, ["x"], 1, 0) == (0, 0)
    assert a == b


@pytest.mark.parametrize("twin", TWINS)
def test_index_put_keys_first_entry_zeroes_the_following_time_diffs(twin):
    buf = bytearray(SIZE)
    assert twin.index_put_keys(buf, SLOTS, 1, ENTRIES, ["a", "b", "c"], 7, 9) == (3, 3)
    assert [read_entry(buf, n)[2] for n in (1, 2, 3)] == [9, 0, 0]
    assert twin.index_put_keys(buf, SLOTS, 4, ENTRIES, ["d", "e"], 8, 5)[0] == 2
    assert [read_entry(buf, n)[2] for n in (4, 5)] == [5, 5]


@pytest.mark.parametrize("twin", TWINS)
def test_index_put_keys_checks_everything_before_writing(twin):
    buf = bytearray(SIZE)
    with pytest.raises(TypeError):
        twin.index_put_keys(buf, SLOTS, 1, ENTRIES, ["ok", b"bytes"], 1, 0)
    with pytest.raises(IndexError):  # max_index beyond the buffer's entries
        twin.index_put_keys(buf, SLOTS, ENTRIES - 1, ENTRIES + 5, ["a", "b"], 1, 0)
    with pytest.raises(ValueError):
        twin.index_put_keys(buf, 0, 1, ENTRIES, ["a"], 1, 0)
    with pytest.raises(ValueError):
        twin.index_put_keys(buf, SLOTS, -1, ENTRIES, ["a"], 1, 0)
    with pytest.raises(OverflowError):
        twin.index_put_keys(buf, SLOTS, 1, ENTRIES, ["a"], 1, -(2**31) - 1)
    assert buf == bytearray(SIZE)


@pytest.mark.parametrize("twin", TWINS)
def test_index_put_keys_min_value_and_unicode(twin):
    buf = bytearray(SIZE)
    keys = ["polygenelubricants", "", "ключ", "\U0001F600#k", "\udfff"]
    assert twin.index_put_keys(buf, SLOTS, 1, ENTRIES, keys, 5, 0)[0] == 5
    for i, k in enumerate(keys):
        h = abs_hash(ref_java_hash(k))
        assert read_entry(buf, 1 + i)[0] == h
    assert read_entry(buf, 1)[0] == 0


@needs_compiled
def test_index_twins_write_identical_bytes_on_a_real_mmap(tmp_path):
    rnd = random.Random(3)
    files = []
    for name in ("pure", "compiled"):
        p = tmp_path / name
        p.write_bytes(bytes(SIZE))
        fh = open(p, "r+b")
        files.append((fh, mmap.mmap(fh.fileno(), SIZE)))
    keys_by_record = [[random_text(rnd, rnd.randint(0, 30)) for _ in range(rnd.randint(0, 3))] for _ in range(10)]
    try:
        for twin, (_fh, mm) in zip((speedups.pure, speedups.compiled), files, strict=True):
            count = 1
            for i, keys in enumerate(keys_by_record):
                count += twin.index_put_keys(mm, SLOTS, count, ENTRIES, keys, i * 100, i)[0]
            twin.index_put(mm, SLOTS, 0, 12345, 1, 2)
        assert files[0][1][:] == files[1][1][:]
    finally:
        for fh, mm in files:
            mm.close()
            fh.close()


# -- split_batch ---------------------------------------------------------------------------------


def batch_entry(body: bytes, props: bytes, flag: int = 0) -> bytes:
    """One entry of a client batch body (MessageDecoder.encodeMessages)."""
    total = 20 + len(body) + 2 + len(props)
    return (struct.pack(">iiiii", total, 0, zlib.crc32(body) & 0x7FFFFFFF, flag, len(body)) + body
            + struct.pack(">H", len(props)) + props)


def ref_split_batch(body: bytes):
    """The batch body format read entry by entry (remoting-protocol.md §13.3), with the twins' error texts."""
    out, pos = [], 0
    while pos < len(body):
        if len(body) - pos < 22:
            return f"truncated batch entry at {pos}"
        total, _magic, _crc, flag, blen = struct.unpack_from(">iiiii", body, pos)
        if blen < 0 or pos + 20 + blen + 2 > len(body):
            return f"bad body length in batch entry at {pos}"
        (plen,) = struct.unpack_from(">H", body, pos + 20 + blen)
        if total != 20 + blen + 2 + plen or pos + total > len(body):
            return f"bad size in batch entry at {pos}"
        out.append((pos + 20, blen, pos + 22 + blen, plen, flag))
        pos += total
    return out


@pytest.mark.parametrize("twin", TWINS)
def test_split_batch_well_formed(twin):
    parts = [(b"hello", b"KEYS\x01a\x02TAGS\x01t", 1), (b"", b"", 0), (bytes(300), b"x\x01y", -7)]
    body = b"".join(batch_entry(*p) for p in parts)
    got = twin.split_batch(body)
    assert [(body[s : s + n], body[ps : ps + pn], f) for s, n, ps, pn, f in got] == parts
    assert twin.split_batch(b"") == []
    assert twin.split_batch(bytearray(body)) == got
    assert twin.split_batch(memoryview(body)) == got
    assert got == ref_split_batch(body)


@pytest.mark.parametrize("twin", TWINS)
def test_split_batch_error_texts(twin):
    good = batch_entry(b"abc", b"k\x01v")
    assert twin.split_batch(good[:21]) == "truncated batch entry at 0"
    assert twin.split_batch(good + good[:10]) == f"truncated batch entry at {len(good)}"
    assert twin.split_batch(good[:16] + struct.pack(">i", -1) + good[20:]) == "bad body length in batch entry at 0"
    assert twin.split_batch(good[:16] + struct.pack(">i", 10**6) + good[20:]) == "bad body length in batch entry at 0"
    assert twin.split_batch(struct.pack(">i", 99) + good[4:]) == "bad size in batch entry at 0"
    assert twin.split_batch(good[:-1]) == "bad size in batch entry at 0"
    assert twin.split_batch(good + b"\x00" * 22) == f"bad size in batch entry at {len(good)}"


@pytest.mark.parametrize("twin", TWINS)
def test_split_batch_garbled_agrees_with_the_reference(twin):
    rnd = random.Random(4)
    for _ in range(400):
        body = bytearray(b"".join(batch_entry(rnd.randbytes(rnd.randint(0, 40)), rnd.randbytes(rnd.randint(0, 20)))
                                  for _ in range(rnd.randint(1, 4))))
        for _ in range(rnd.randint(0, 3)):
            body[rnd.randrange(len(body))] = rnd.randrange(256)
        if rnd.random() < 0.3:
            body = body[: rnd.randrange(len(body) + 1)]
        b = bytes(body)
        assert twin.split_batch(b) == ref_split_batch(b)


@needs_compiled
def test_split_batch_twins_agree_on_random_bytes():
    rnd = random.Random(5)
    for _ in range(2000):
        b = rnd.randbytes(rnd.randint(0, 64))
        assert speedups.compiled.split_batch(b) == speedups.pure.split_batch(b)


# -- parse_record ---------------------------------------------------------------------------------


def encode_record(topic: str = "TopicA", body: bytes = b"hello", props: str = "TAGS\x01TagA", *,
                  v2: bool = False, born_v6: bool = False, store_v6: bool = False, qid: int = 3, flag: int = 5,
                  qoff: int = 77, phys: int = 1234, sys_flag: int = 0, born_ts: int = 1_700_000_000_000,
                  store_ts: int = 1_700_000_000_123, prepared: int = 9, raw_topic: bytes | None = None,
                  raw_props: bytes | None = None) -> bytes:
    """A CommitLog record as RocketMQ writes it (independent of store/commit_log.py)."""
    tb = raw_topic if raw_topic is not None else topic.encode()
    pb = raw_props if raw_props is not None else props.encode()
    sys_flag |= (0x10 if born_v6 else 0) | (0x20 if store_v6 else 0)
    born = (bytes(16) if born_v6 else b"\x7f\x00\x00\x01") + struct.pack(">i", 4000)
    store = (bytes(15) + b"\x01" if store_v6 else b"\x7f\x00\x00\x01") + struct.pack(">i", 10911)
    tail = body + (struct.pack(">h", len(tb)) if v2 else bytes([len(tb)])) + tb + struct.pack(">H", len(pb)) + pb
    head_rest = (struct.pack(">iiqqiq", qid, flag, qoff, phys, sys_flag, born_ts) + born
                 + struct.pack(">q", store_ts) + store + struct.pack(">iqi", 0, prepared, len(body)))
    total = 12 + len(head_rest) + len(tail)
    magic = MESSAGE_MAGIC_CODE_V2 if v2 else MESSAGE_MAGIC_CODE
    return struct.pack(">iii", total, magic, zlib.crc32(body) & 0x7FFFFFFF) + head_rest + tail


def expected_tuple(rec: bytes, pos: int, topic: str, body: bytes, props: str, *, v2=False, born_v6=False,
                   store_v6=False):
    """What parse_record must return for a record built by encode_record (defaults for the rest)."""
    total = len(rec)
    pstart = pos + total - len(props.encode())
    bstart = pos + 48 + (20 if born_v6 else 8) + 8 + (20 if store_v6 else 8) + 16
    d = string_to_properties(props) if props else {}
    sys_flag = (0x10 if born_v6 else 0) | (0x20 if store_v6 else 0)
    return (total, MESSAGE_MAGIC_CODE_V2 if v2 else MESSAGE_MAGIC_CODE, zlib.crc32(body) & 0x7FFFFFFF, 3, 5, 77,
            1234, sys_flag, 1_700_000_000_000, 1_700_000_000_123, 9, bstart, len(body), topic, pstart,
            len(props.encode()), d.get("TAGS") or None, d.get("KEYS") or None, d.get("UNIQ_KEY") or None,
            d.get("DELAY") or None)


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("born_v6", [False, True])
@pytest.mark.parametrize("store_v6", [False, True])
def test_parse_record_layouts(twin, v2, born_v6, store_v6):
    props = "KEYS\x01k1 k2\x02UNIQ_KEY\x01ABC\x02TAGS\x01TagA\x02DELAY\x013\x02x\x01y"
    for topic, body in [("TopicA", b"hello"), ("主题", bytes(1000)), ("T" * 127, b"")]:
        rec = encode_record(topic, body, props, v2=v2, born_v6=born_v6, store_v6=store_v6)
        for pad_before, pad_after in [(0, 0), (13, 0), (5, 100)]:
            buf = bytes(pad_before) + rec + bytes(pad_after)
            got = twin.parse_record(buf, pad_before)
            assert got == expected_tuple(rec, pad_before, topic, body, props, v2=v2, born_v6=born_v6,
                                         store_v6=store_v6)
            assert buf[got[11] : got[11] + got[12]] == body


@pytest.mark.parametrize("twin", TWINS)
def test_parse_record_properties(twin):
    cases = {
        "": (None, None, None, None),
        "TAGS\x01": (None, None, None, None),  # empty value counts as absent
        "TAGS\x01a\x02TAGS\x01b": ("b", None, None, None),  # last entry wins
        "XTAGS\x01no\x02KEYS\x01 a  b ": (None, " a  b ", None, None),  # names match whole entries only
        "KEYS\x01TAGS\x01x": (None, "TAGS\x01x", None, None),
        "UNIQ_KEY\x01u\x02DELAY\x0118\x02TAGS\x01t\x02": ("t", None, "u", "18"),
        "\x02\x02TAGS\x01x\x02": ("x", None, None, None),
        "TAGS\x01ключ\x02KEYS\x01\U0001F600": ("ключ", "\U0001F600", None, None),
    }
    for props, want in cases.items():
        rec = encode_record(props=props)
        assert twin.parse_record(rec, 0)[16:] == want, repr(props)
    # invalid UTF-8 in properties is replaced, never an error (dispatch must go on)
    rec = encode_record(raw_props=b"TAGS\x01a\xff\xfeb\x02KEYS\x01\xe4\xb8")
    got = twin.parse_record(rec, 0)
    assert got[16:18] == ("a\ufffd\ufffdb", "\ufffd")


@pytest.mark.parametrize("twin", TWINS)
def test_parse_record_blank_short_and_invalid(twin):
    blank = struct.pack(">ii", 4096, BLANK_MAGIC_CODE)
    assert twin.parse_record(blank, 0)[:2] == (4096, BLANK_MAGIC_CODE)
    assert twin.parse_record(blank + bytes(200), 0)[:2] == (4096, BLANK_MAGIC_CODE)
    assert twin.parse_record(bytes(7) + blank, 7)[:2] == (4096, BLANK_MAGIC_CODE)
    assert twin.parse_record(blank[:7], 0) is None
    assert twin.parse_record(b"", 0) is None
    assert twin.parse_record(bytes(100), 100) is None  # at the very end
    assert twin.parse_record(bytes(300), 0) is None  # zeros: no magic
    rec = encode_record()
    assert twin.parse_record(rec[:-1], 0) is None  # last byte missing
    assert twin.parse_record(rec[:87], 0) is None
    assert twin.parse_record(encode_record(topic=""), 0) is None
    assert twin.parse_record(encode_record(raw_topic=b"\xff\xfe"), 0) is None  # topic not UTF-8
    nul = encode_record(raw_props=b"TAGS\x01a\x00b")
    assert twin.parse_record(nul, 0) is not None
    assert twin.parse_record(nul, 0, strict=True) is None
    assert twin.parse_record(encode_record(raw_topic=b"a\x00"), 0, strict=True) is None
    assert twin.parse_record(encode_record(), 0, strict=True) is not None
    with pytest.raises(IndexError):
        twin.parse_record(rec, -1)
    with pytest.raises(IndexError):
        twin.parse_record(rec, len(rec) + 1)
    with pytest.raises(TypeError):
        twin.parse_record("text", 0)


# the garbled-record check against an independent reference: tests/store/test_record_codec.py


@needs_compiled
def test_parse_record_twins_agree_on_random_and_garbled_bytes():
    rnd = random.Random(7)
    c, p = speedups.compiled, speedups.pure
    for i in range(3000):
        if i % 3 == 0:
            buf = rnd.randbytes(rnd.randint(0, 200))
        else:
            rec = bytearray(encode_record(random_text(rnd, 5).encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
                                          rnd.randbytes(rnd.randint(0, 30)),
                                          rnd.choice(["TAGS\x01a", "KEYS\x01x\x02UNIQ_KEY\x01y"]),
                                          v2=rnd.random() < 0.3, born_v6=rnd.random() < 0.3,
                                          store_v6=rnd.random() < 0.3))
            for _ in range(rnd.randint(1, 4)):
                rec[rnd.randrange(len(rec))] = rnd.randrange(256)
            buf = bytes(rec) if i % 3 == 1 else bytes(rec[: rnd.randrange(len(rec) + 1)])
        pos = rnd.randint(0, len(buf))
        for strict in (False, True):
            assert c.parse_record(buf, pos, strict) == p.parse_record(buf, pos, strict), (buf, pos)


@pytest.mark.skipif(not (GOLDEN / "manifest.jsonl").exists(), reason="golden store not available")
@pytest.mark.parametrize("twin", TWINS)
def test_parse_record_reads_every_golden_record(twin):
    """Walk the real 4.9.7 CommitLog files record by record, as the reput does."""
    with open(GOLDEN / "manifest.jsonl", encoding="utf-8") as fh:
        manifest = {r["physicalOffset"]: r for r in map(json.loads, fh)}
    seen = 0
    for f in sorted((GOLDEN / "store" / "commitlog").iterdir()):
        data = f.read_bytes()
        base = int(f.name)
        pos = 0
        while pos < len(data):
            t = twin.parse_record(data, pos, strict=True)
            if t is None or t[1] == BLANK_MAGIC_CODE:
                break
            r = manifest[base + pos]
            props = r["properties"]
            assert t[:13] == (r["totalSize"], r["magicCode"], r["bodyCRC"], r["queueId"], r["flag"], r["queueOffset"],
                              r["storedPhysicalOffset"], r["sysFlag"], r["bornTimestamp"], r["storeTimestamp"],
                              r["preparedTransactionOffset"], t[11], r["bodyLength"])
            assert data[t[11] : t[11] + t[12]] == base64.b64decode(r["body"])
            assert t[13] == r["topic"] and t[15] == r["propertiesLength"]
            assert data[t[14] : t[14] + t[15]].decode() == r["propertiesRaw"]
            assert t[16:] == (props.get("TAGS") or None, props.get("KEYS") or None, props.get("UNIQ_KEY") or None,
                              props.get("DELAY") or None)
            seen += 1
            pos += t[0]
    assert seen == len(manifest)


# -- encode_records --------------------------------------------------------------------------------

V4, V6 = b"\x7f\x00\x00\x01", bytes(15) + b"\x01"


def encode_args(src, items, batch_props=b"", topic=b"TopicA", *, born_v6=False, store_v6=False,
                qoff=77, file_base=0):
    """encode_records arguments matching encode_record()'s fixed header fields."""
    sys_flag = (0x10 if born_v6 else 0) | (0x20 if store_v6 else 0)
    born = bytes(16) if born_v6 else V4
    return (src, items, batch_props, topic, 3, qoff, file_base, sys_flag, 1_700_000_000_000, born, 4000,
            1_700_000_000_123, V6 if store_v6 else V4, 10911, 0, 9)


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("born_v6", [False, True])
@pytest.mark.parametrize("store_v6", [False, True])
@pytest.mark.parametrize("batch_props", [b"", b"WAIT\x01true\x02CLUSTER\x01c"])
def test_encode_records_writes_what_rocketmq_writes(twin, born_v6, store_v6, batch_props):
    parts = [(b"hello", b"KEYS\x01k1\x02TAGS\x01t", 5), (b"", b"", 5), (bytes(range(256)) * 4, b"x\x01y", 5)]
    src = batch_entry(*parts[0]) + batch_entry(*parts[1]) + batch_entry(*parts[2])
    items = twin.split_batch(src)
    buf = bytearray(9000)
    end, positions = twin.encode_records(buf, 100, *encode_args(src, items, batch_props, born_v6=born_v6,
                                                                 store_v6=store_v6, file_base=4096))
    expected = b""
    for i, (body, props, _flag) in enumerate(parts):
        full = props + b"\x02" + batch_props if props and batch_props else props or batch_props
        assert positions[i] == 100 + len(expected)
        expected += encode_record(body=body, raw_props=full, born_v6=born_v6, store_v6=store_v6, qoff=77 + i,
                                  phys=4096 + positions[i])
    assert end == 100 + len(expected)
    assert bytes(buf[100:end]) == expected
    assert buf[:100] == bytes(100) and buf[end:] == bytes(len(buf) - end)


@pytest.mark.parametrize("twin", TWINS)
def test_encode_records_single_put_and_round_trip(twin):
    body, props = b"payload" * 100, "TAGS\x01TagA\x02KEYS\x01a b\x02UNIQ_KEY\x01U1"
    src = body + props.encode()
    buf = bytearray(2000)
    end, (p,) = twin.encode_records(buf, 0, *encode_args(src, [(0, len(body), len(body), len(src) - len(body), 0)]))
    t = twin.parse_record(buf, p)
    assert t[0] == end and t[13] == "TopicA" and buf[t[11] : t[11] + t[12]] == body
    assert t[2] == zlib.crc32(body) & 0x7FFFFFFF
    assert t[16:19] == ("TagA", "a b", "U1")
    assert twin.encode_records(buf, end, *encode_args(src, [])) == (end, [])


@pytest.mark.parametrize("twin", TWINS)
def test_encode_records_bad_input_raises_and_writes_nothing(twin):
    src = batch_entry(b"abc", b"k\x01v")
    items = twin.split_batch(src)
    buf = bytearray(500)
    good = encode_args(src, items)

    def call(args, b=buf, pos=0):
        return twin.encode_records(b, pos, *args)

    def replace(i, v):
        a = list(good)
        a[i] = v
        return tuple(a)

    with pytest.raises(IndexError):
        call(good, pos=501)
    with pytest.raises(IndexError):
        call(good, pos=-1)
    with pytest.raises(IndexError):
        call(good, pos=450)  # does not fit
    with pytest.raises(IndexError):
        call(good, b=bytearray(90))
    with pytest.raises(IndexError):
        call(replace(1, [(0, 10, 0, 100, 0)]))  # props outside src
    with pytest.raises(IndexError):
        call(replace(1, [(-1, 2, 0, 0, 0)]))
    with pytest.raises(ValueError):
        call(replace(3, b""))
    with pytest.raises(ValueError):
        call(replace(3, b"t" * 128))
    with pytest.raises(ValueError):
        call(replace(9, b"\x01\x02"))  # born address length
    with pytest.raises(ValueError):
        call(replace(7, 0x10))  # IPv6 bit for an IPv4 address
    with pytest.raises(ValueError):
        call(replace(2, b"x" * 70000))
    with pytest.raises(OverflowError):
        call(replace(4, 2**31))
    with pytest.raises(TypeError):
        call(replace(1, [[0, 1, 0, 0, 0]]))
    with pytest.raises(TypeError):
        call(good, b=bytes(500))
    assert buf == bytearray(500)


@needs_compiled
def test_encode_records_twins_agree_on_random_batches(tmp_path):
    rnd = random.Random(8)
    path = tmp_path / "cl"
    path.write_bytes(bytes(1 << 16))
    with open(path, "r+b") as fh, mmap.mmap(fh.fileno(), 1 << 16) as mm:
        for _ in range(200):
            src = b"".join(batch_entry(rnd.randbytes(rnd.randint(0, 300)),
                                       rnd.choice([b"", b"KEYS\x01k", "TAGS\x01ключ".encode()]), rnd.randint(-5, 5))
                           for _ in range(rnd.randint(0, 6)))
            items = speedups.pure.split_batch(src)
            args = encode_args(src, items, rnd.choice([b"", b"A\x01b"]), "主题".encode(),
                               born_v6=rnd.random() < 0.5, store_v6=rnd.random() < 0.5,
                               qoff=rnd.randint(0, 2**40), file_base=rnd.randint(0, 2**40))
            pos = rnd.randint(0, 100)
            a = bytearray(8000)
            ra = speedups.pure.encode_records(a, pos, *args)
            mm[:8000] = bytes(8000)
            rb = speedups.compiled.encode_records(mm, pos, *args)
            assert ra == rb and bytes(a) == mm[:8000]
            p = pos
            for (bs, bl, _ps, _pl, flag), at in zip(items, ra[1], strict=True):
                t = speedups.compiled.parse_record(mm, at)
                assert at == p and t[4] == flag and mm[t[11] : t[11] + t[12]] == src[bs : bs + bl]
                p += t[0]
            assert p == ra[0]


# -- dispatch_props ------------------------------------------------------------------------------


DP_NAMES = ("TAGS", "KEYS", "UNIQ_KEY", "DELAY")


@pytest.mark.parametrize("twin", TWINS)
def test_dispatch_props_well_formed(twin):
    """Same values as the full properties parser for well-formed strings (non-empty values; the last entry
    wins). (An empty last value reads as absent here and in parse_record, while the full parser keeps an
    earlier entry: the prepared dispatch and the reput's parse both follow parse_record.)"""
    rnd = random.Random(7)
    names = list(DP_NAMES) + ["TAGSX", "XTAGS", "K", "CLUSTER", "WAIT"]
    for _ in range(400):
        entries = []
        for _ in range(rnd.randrange(0, 7)):
            value = rnd.choice(["v", "a b  c", "日本", "\U0001F600", "TAGS\x01x", random_text(rnd, 5)])
            value = value.replace("\x00", "").replace("\x02", "") or "v"
            entries.append(f"{rnd.choice(names)}\x01{value}")
        s = "\x02".join(entries)
        props = string_to_properties(s)
        assert twin.dispatch_props(s) == tuple(props.get(n) or None for n in DP_NAMES), repr(s)


@pytest.mark.parametrize("twin", TWINS)
def test_dispatch_props_matches_parse_record_and_refuses_nul(twin):
    props = "KEYS\x01k1 k2\x02TAGS\x01TagA\x02UNIQ_KEY\x01U1\x02DELAY\x013\x02TAGS\x01TagB"
    rec = encode_record(props=props)
    assert twin.dispatch_props(props) == twin.parse_record(rec, 0)[16:20] == ("TagB", "k1 k2", "U1", "3")
    assert twin.dispatch_props("") == (None, None, None, None)
    assert twin.dispatch_props("TAGS\x01a\x00") is None
    assert twin.dispatch_props("日\x00") is None
    with pytest.raises(TypeError):
        twin.dispatch_props(b"TAGS\x01a")


def test_dispatch_props_twins_agree_on_random_strings():
    if speedups.compiled is None:
        pytest.skip("common._speedups not built")
    rnd = random.Random(11)
    alphabet = ["TAGS\x01", "KEYS\x01", "UNIQ_KEY\x01", "DELAY\x01", "\x01", "\x02", "a", " ", "é", "日", "\U0001F600",
                "\x00", "T", "S"]
    for _ in range(3000):
        s = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 12)))
        assert speedups.pure.dispatch_props(s) == speedups.compiled.dispatch_props(s), repr(s)


def ref_parse_properties(text: str) -> dict[str, str]:
    """string2messageProperties spelled out with indexes: each \x02-separated entry split at its first
    \x01, kept with a non-empty key and value, the last of a key winning."""
    out: dict[str, str] = {}
    start = 0
    while start <= len(text):
        end = text.find("\x02", start)
        if end < 0:
            end = len(text)
        eq = text.find("\x01", start, end)
        if start < eq < end - 1:
            out[text[start:eq]] = text[eq + 1 : end]
        start = end + 1
    return out


@pytest.mark.parametrize("twin", TWINS)
def test_parse_properties_edges(twin):
    assert twin.parse_properties(None) == {} and twin.parse_properties("") == {}
    assert twin.parse_properties("A\x01a\x02B\x01\x02\x01c\x02D\x02E\x01e\x01f\x02A\x01z\x02\x02") == {
        "A": "z", "E": "e\x01f"}
    got = twin.parse_properties("K\x01v\x02日\x01\U0001F600\x02UNIQ_KEY\x01U")
    assert got == {"K": "v", "日": "\U0001F600", "UNIQ_KEY": "U"} and list(got) == ["K", "日", "UNIQ_KEY"]
    with pytest.raises(TypeError):
        twin.parse_properties(b"A\x01a")


def test_parse_properties_twins_and_reference_agree_on_random_strings():
    if speedups.compiled is None:
        pytest.skip("common._speedups not built")
    rnd = random.Random(13)
    alphabet = ["TAGS\x01", "KEYS", "\x01", "\x02", "\x02\x02", "a", " ", "é", "日", "\U0001F600", "\x00", "T"]
    for _ in range(5000):
        s = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 14)))
        want = ref_parse_properties(s)
        assert speedups.pure.parse_properties(s) == want, repr(s)
        got = speedups.compiled.parse_properties(s)
        assert got == want and list(got) == list(want), repr(s)


# -- batch_properties / msg_ids ------------------------------------------------------------------


def ref_batch_properties(body: bytes, batch_props: str):
    """What CommitLog.put_messages stores per entry, spelled out with string operations."""
    out = []
    var = 0
    for _bstart, blen, pstart, plen, _flag in speedups.pure.split_batch(body):
        own = body[pstart : pstart + plen].decode("utf-8")
        text = own + ("\x02" + batch_props if own and batch_props else "") if own else batch_props
        out.append((text, *speedups.pure.dispatch_props(text)))
        var += blen + len(text.encode("utf-8"))
    return out, var


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("batch_props", ["", "CLUSTER\x01c", "TAGS\x01BatchTag\x02WAIT\x01true"])
def test_batch_properties_well_formed(twin, batch_props):
    rnd = random.Random(len(batch_props))
    entries = []
    for i in range(40):
        props = rnd.choice(["", f"UNIQ_KEY\x01U{i}\x02KEYS\x01k{i} x", "TAGS\x01日本\x02KEYS\x01\U0001F600",
                            f"TAGS\x01t{i}\x02DELAY\x012"])
        entries.append(batch_entry(os.urandom(rnd.randrange(0, 50)), props.encode()))
    body = b"".join(entries)
    items = speedups.pure.split_batch(body)
    got = twin.batch_properties(body, items, batch_props.encode())
    assert got == ref_batch_properties(body, batch_props)


@pytest.mark.parametrize("twin", TWINS)
def test_batch_properties_refusals_in_entry_order(twin):
    def run(*props, batch=b""):
        body = b"".join(batch_entry(b"b", p) for p in props)
        return twin.batch_properties(body, speedups.pure.split_batch(body), batch)

    assert run(b"A\x01x", b"K\x01\x00") == (1, "batch properties contain NUL")
    assert run(b"A\x01\xff\xfe") == (1, "batch properties not UTF-8")
    assert run(b"A\x01\xe6\x97") == (1, "batch properties not UTF-8")  # cut inside a character
    too_long = b"A\x01" + b"x" * 32765  # 32767 bytes alone: fits; with the batch's: too long
    assert run(too_long)[0] != 2
    assert run(too_long, batch=b"C\x01c") == (2, "properties of a batch message exceed 32767 bytes")
    assert run(too_long, b"K\x01\x00", batch=b"C\x01c")[0] == 2  # the first refusal wins
    assert run(b"", batch=b"C\x01" + b"y" * 32766)[0] == 2
    with pytest.raises(IndexError):
        twin.batch_properties(b"abc", [(0, 1, 2, 5, 0)], b"")


def test_batch_properties_twins_agree_on_random_bytes():
    if speedups.compiled is None:
        pytest.skip("common._speedups not built")
    rnd = random.Random(5)
    pool = [b"TAGS\x01", b"KEYS\x01", b"\x02", b"\x01", b"a", b" ", "é".encode(), b"\xe6", b"\x00", b"\xff"]
    for _ in range(1500):
        props = [b"".join(rnd.choice(pool) for _ in range(rnd.randrange(0, 6))) for _ in range(rnd.randrange(1, 5))]
        body = b"".join(batch_entry(b"x", p) for p in props)
        items = speedups.pure.split_batch(body)
        bp = rnd.choice([b"", b"C\x01c", b"TAGS\x01z"])
        assert speedups.pure.batch_properties(body, items, bp) == speedups.compiled.batch_properties(body, items, bp)


@pytest.mark.parametrize("twin", TWINS)
def test_msg_ids(twin):
    prefix = "7F00000100002A9F"
    assert twin.msg_ids(prefix, 1 << 30, [0, 130, 4096]) == ",".join(
        f"{prefix}{(1 << 30) + p:016X}" for p in (0, 130, 4096))
    assert twin.msg_ids(prefix, 0, []) == ""
    assert twin.msg_ids("", 0x7EDCBA9876543210 - 5, [5]) == "7EDCBA9876543210"


# -- cq_put_units ----------------------------------------------------------------------------------


class CqReq:
    __slots__ = ("commit_log_offset", "msg_size", "tags_code", "consume_queue_offset")

    def __init__(self, offset, size, tags, cqo):
        self.commit_log_offset, self.msg_size, self.tags_code, self.consume_queue_offset = offset, size, tags, cqo


@pytest.mark.parametrize("twin", TWINS)
def test_cq_put_units_fast_path_and_stops(twin):
    buf = bytearray(20 * 6)
    reqs = [CqReq(100, 50, -5, 10), CqReq(120, 20, 1, 11),  # second: already in the queue (120+20 <= 150)
            CqReq(150, 60, 1 << 40, 11), CqReq(210, 10, 0, 13)]  # last: a gap in queue offsets
    got = twin.cq_put_units(buf, 0, len(buf), 200, True, -1, reqs, 0)
    assert got == (3, 40, 210)
    assert bytes(buf[:40]) == struct.pack(">qiq", 100, 50, -5) + struct.pack(">qiq", 150, 60, 1 << 40)
    assert bytes(buf[40:]) == bytes(80)
    # position 0 of a file that did not start the queue goes to the general path
    assert twin.cq_put_units(bytearray(40), 0, 40, 200, False, -1, reqs, 0) == (0, 0, -1)
    # the end of the file stops the run
    assert twin.cq_put_units(bytearray(20), 0, 20, 200, True, -1, reqs, 0) == (2, 20, 150)
    assert twin.cq_put_units(buf, 40, len(buf), 200, True, 210, reqs, 4) == (4, 40, 210)
    with pytest.raises(IndexError):
        twin.cq_put_units(buf, 0, len(buf), 200, True, -1, reqs, 5)


def test_cq_put_units_twins_agree_on_random_runs():
    if speedups.compiled is None:
        pytest.skip("common._speedups not built")
    rnd = random.Random(3)
    for _ in range(300):
        reqs = []
        off, cqo = 0, rnd.randrange(0, 5)
        for _ in range(rnd.randrange(0, 30)):
            off += rnd.choice([-100, 0, 10, 200])
            cqo += rnd.choice([1, 1, 1, 0, 2])
            reqs.append(CqReq(max(off, 0), rnd.randrange(1, 300), rnd.randrange(-(1 << 63), 1 << 63), cqo))
        size = 20 * rnd.randrange(1, 40)
        args = (rnd.choice([0, 20, 40]), size, rnd.choice([0, 20 * 2]), rnd.random() < 0.8, rnd.choice([-1, 50]))
        start = rnd.randrange(0, len(reqs) + 1)
        a, b = bytearray(size), bytearray(size)
        assert speedups.pure.cq_put_units(a, *args, reqs, start) == speedups.compiled.cq_put_units(b, *args, reqs, start)
        assert a == b


# -- write_record ----------------------------------------------------------------------------------


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("born_v6", [False, True])
@pytest.mark.parametrize("store_v6", [False, True])
def test_write_record_is_encode_records_of_one_item(twin, born_v6, store_v6):
    """Same bytes as encode_records for one item (and as the hand-built reference record)."""
    body = os.urandom(300)
    props = b"TAGS\x01TagA\x02KEYS\x01k1 k2"
    src, items, bp, topic, qid, qoff, base, sys_flag, born_ts, born, born_port, store_ts, store_a, store_port, \
        recon, prep = encode_args(body, [(0, len(body), 0, 0, 5)], props, born_v6=born_v6, store_v6=store_v6,
                                  file_base=1 << 33)
    ref = bytearray(2048)
    end_ref, _ = twin.encode_records(ref, 100, src, items, bp, topic, qid, qoff, base, sys_flag, born_ts, born,
                                     born_port, store_ts, store_a, store_port, recon, prep)
    got = bytearray(2048)
    end = twin.write_record(got, 100, body, topic, props, qid, 5, qoff, base + 100, sys_flag, born_ts, born,
                            born_port, store_ts, store_a, store_port, recon, prep, -1)
    assert end == end_ref and got == ref
    # a given CRC is stored as given
    twin.write_record(got, 100, body, topic, props, qid, 5, qoff, base + 100, sys_flag, born_ts, born, born_port,
                      store_ts, store_a, store_port, recon, prep, 12345)
    assert struct.unpack_from(">i", got, 108)[0] == 12345 and got[:108] == ref[:108] and got[112:] == ref[112:]


@pytest.mark.parametrize("twin", TWINS)
def test_write_record_bad_input_raises_and_writes_nothing(twin):
    buf = bytearray(600)
    ok = dict(body=b"b" * 100, topic=b"T", props=b"", sys_flag=0, born=V4, store=V4, pos=0, crc=-1)

    def call(**kw):
        a = {**ok, **kw}
        return twin.write_record(buf, a["pos"], a["body"], a["topic"], a["props"], 1, 0, 0, 0, a["sys_flag"], 1,
                                 a["born"], 1, 2, a["store"], 3, 0, 0, a["crc"])

    for kw, exc in [(dict(topic=b""), ValueError), (dict(topic=b"t" * 128), ValueError),
                    (dict(props=b"p" * 32768), ValueError), (dict(born=b"abc"), ValueError),
                    (dict(sys_flag=0x10), ValueError), (dict(pos=500), IndexError), (dict(pos=601), IndexError),
                    (dict(body=b"b" * 600), IndexError), (dict(crc=1 << 31), OverflowError)]:
        with pytest.raises(exc):
            call(**kw)
        assert buf == bytearray(600), kw
    assert call() == 100 + 91 + 1


# -- dispatch_requests -----------------------------------------------------------------------------


def slots_of(req) -> dict:
    from store.dispatch import DispatchRequest

    return {name: getattr(req, name) for name in DispatchRequest.__slots__}


@pytest.mark.parametrize("twin", TWINS)
def test_dispatch_requests_equal_the_constructor(twin):
    """Every slot as DispatchRequest(...) sets it: tag code = Java hash of TAGS, keys "" when absent,
    properties lazy for a non-empty text and {} for an empty one."""
    from store.dispatch import DispatchRequest

    rnd = random.Random(9)
    fields = []
    for i in range(50):
        text = rnd.choice(["", f"TAGS\x01t{i}", "KEYS\x01a b\x02UNIQ_KEY\x01U", "TAGS\x01日本"])
        fields.append((text, *speedups.pure.dispatch_props(text)))
    positions = sorted(rnd.sample(range(0, 100_000), 50))
    got = twin.dispatch_requests(DispatchRequest, "主题T", 5, 1 << 32, positions, 200_000, 1_800_000_000_123, 77,
                                 0x10, 9, fields)
    nexts = positions[1:] + [200_000]
    for i, (r, f) in enumerate(zip(got, fields, strict=True)):
        text, tags, keys, uniq, _ = f
        want = DispatchRequest("主题T", 5, (1 << 32) + positions[i], nexts[i] - positions[i],
                               ref_java_hash(tags) if tags else 0, 1_800_000_000_123, 77 + i, keys or "", uniq, 0x10,
                               9, None, True, None, text)
        assert type(r) is DispatchRequest and slots_of(r) == slots_of(want)
        assert r.properties == string_to_properties(text)
    assert twin.dispatch_requests(DispatchRequest, "T", 0, 0, [], 0, 0, 0, 0, 0, []) == []
    with pytest.raises(ValueError):
        twin.dispatch_requests(DispatchRequest, "T", 0, 0, [0], 10, 0, 0, 0, 0, [])


@needs_compiled
def test_dispatch_requests_refuses_a_class_with_other_slots():
    from store.dispatch import DispatchRequest

    class More(DispatchRequest):
        __slots__ = ("extra",)

    for cls in (More, dict):
        with pytest.raises((TypeError, AttributeError)):
            speedups.compiled.dispatch_requests(cls, "T", 0, 0, [0], 10, 0, 0, 0, 0, [("", None, None, None, None)])


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("text", ["", "TAGS\x01a\x02KEYS\x01k"])
def test_new_dispatch_request_equals_the_constructor(twin, text):
    from store.dispatch import DispatchRequest

    args = ("T", 3, 1 << 40, 1200, -77, 1_800_000_000_000, 12, "k", None, 0x4, 99)
    got = twin.new_dispatch_request(DispatchRequest, *args, text)
    want = DispatchRequest(*args, None, True, None, text)
    assert type(got) is DispatchRequest and slots_of(got) == slots_of(want)
    assert got.properties == string_to_properties(text)
    # a fresh {} each time for an empty text (never shared between requests)
    if not text:
        assert twin.new_dispatch_request(DispatchRequest, *args, text)._properties is not got._properties


@needs_compiled
def test_compiled_dispatch_requests_are_left_to_reference_counting():
    """The compiled twin untracks the requests it makes from the cyclic collector (they hold only
    ints, strings, None and a dict of strings), so making one per message adds no collections."""
    import gc

    from store.dispatch import DispatchRequest

    c = speedups.compiled
    one = c.new_dispatch_request(DispatchRequest, "T", 0, 0, 100, 0, 1, 0, "", None, 0, 0, "")
    many = c.dispatch_requests(DispatchRequest, "T", 0, 0, [0, 50], 100, 1, 0, 0, 0,
                               [("", None, None, None, None)] * 2)
    assert not gc.is_tracked(one) and not any(gc.is_tracked(r) for r in many)
    assert gc.is_tracked(DispatchRequest())  # the pure constructor's objects are tracked as usual
    one._properties = {"A": "b"}  # still usable as before
    assert one.properties == {"A": "b"}


@needs_compiled
def test_compiled_module_state_is_visible_to_the_collector():
    """The class the compiled twin caches lives in its module state, which the collector traverses
    (m_traverse) and can clear, so a cycle through it is collectable and leaks are visible."""
    import gc

    from store.dispatch import DispatchRequest

    c = speedups.compiled
    c.new_dispatch_request(DispatchRequest, "T", 0, 0, 100, 0, 1, 0, "", None, 0, 0, "")
    assert DispatchRequest in gc.get_referents(c)  # c is the common._speedups module itself

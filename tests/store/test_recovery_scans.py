"""Recovery's compiled scans (speedups.walk_records, speedups.cq_scan): both twins agree.

walk_records is checked against an independent walk built on parse_record(strict=True)
plus the offset and CRC checks, on hand-built record runs, garbled runs and the golden
RocketMQ 4.9.7 CommitLog; cq_scan against hand-built ConsumeQueue units.
"""

from __future__ import annotations

import json
import random
import struct
import zlib

import pytest

from common import speedups
from common.message import BLANK_MAGIC_CODE
from tests.store.test_speedups import GOLDEN, TWINS, encode_record, needs_compiled


def run_of(records: list[tuple[str, bytes, str]], base: int, *, pad: int = 0, blank: bool = True) -> bytes:
    """Records written back to back as a CommitLog file starting at ``base`` (each with its own offset)."""
    out = bytearray()
    for topic, body, props in records:
        out += encode_record(topic, body, props, phys=base + len(out))
    if blank:
        out += struct.pack(">ii", 4096, BLANK_MAGIC_CODE)
    return bytes(out) + bytes(pad)


def ref_walk(buf, pos: int, base: int, check_crc: bool) -> tuple[int, int, bool]:
    """The contract spelled out with parse_record (the reference for both twins)."""
    count = 0
    while True:
        t = speedups.pure.parse_record(buf, pos, True)
        if t is None:
            return pos, count, False
        if t[1] == BLANK_MAGIC_CODE:
            return pos, count, True
        if t[6] != base + pos or (check_crc and zlib.crc32(buf[t[11] : t[11] + t[12]]) & 0x7FFFFFFF != t[2]):
            return pos, count, False
        count += 1
        pos += t[0]


@pytest.mark.parametrize("twin", TWINS)
def test_walk_records_passes_a_run_and_stops_at_blank(twin):
    recs = [("TopicA", b"x" * i, "TAGS\x01t") for i in range(20)] + [("ТопикБ", b"body", "")]
    buf = run_of(recs, 1 << 30, pad=100)
    end = len(buf) - 100 - 8
    assert twin.walk_records(buf, 0, 1 << 30, True) == (end, 21, True)
    # without a BLANK: the zero bytes after the last record stop the walk
    buf = run_of(recs, 0, pad=200, blank=False)
    assert twin.walk_records(buf, 0, 0, False) == (len(buf) - 200, 21, False)
    # starting at a later record
    first = len(encode_record("TopicA", b"", "TAGS\x01t"))
    assert twin.walk_records(buf, first, 0, True) == (len(buf) - 200, 20, False)


@pytest.mark.parametrize("twin", TWINS)
def test_walk_records_stops_at_each_invalid_record(twin):
    good = encode_record("T", b"abc", "", phys=0)
    n = len(good)
    # wrong PHYSICALOFFSET
    assert twin.walk_records(good + encode_record("T", b"abc", "", phys=5), 0, 0, False) == (n, 1, False)
    # body CRC: only with check_crc
    bad = bytearray(encode_record("T", b"abc", "", phys=n))
    bad[-7] ^= 1  # the first body byte (then 1-byte topic length, topic "T", 2-byte props length)
    assert twin.walk_records(good + bytes(bad), 0, 0, True) == (n, 1, False)
    assert twin.walk_records(good + bytes(bad), 0, 0, False) == (2 * n, 2, False)
    # NUL in the topic or the properties
    assert twin.walk_records(good + encode_record("T\x00", b"", "", phys=n), 0, 0, False) == (n, 1, False)
    assert twin.walk_records(good + encode_record("T", b"", "A\x01\x00", phys=n), 0, 0, False) == (n, 1, False)
    # a topic that is not UTF-8 (after a valid one, and as the first)
    nu = encode_record(raw_topic=b"\xff\xfe", phys=n)
    assert twin.walk_records(good + nu, 0, 0, False) == (n, 1, False)
    assert twin.walk_records(encode_record(raw_topic=b"\xc0\x80", phys=0), 0, 0, False) == (0, 0, False)
    # a torn record at every length
    two = good + encode_record("T", b"abc", "", phys=n)
    for cut in range(n, 2 * n):
        assert twin.walk_records(two[:cut] + b"\xff" * 3, 0, 0, True) == (n, 1, False), cut
    with pytest.raises(IndexError):
        twin.walk_records(good, len(good) + 1, 0, False)


@pytest.mark.parametrize("twin", TWINS)
def test_walk_records_agrees_with_reference_on_garbled_runs(twin):
    rnd = random.Random(11)
    for _ in range(300):
        recs = [(rnd.choice(["TopicA", "TopicB", "主题"]), rnd.randbytes(rnd.randint(0, 40)),
                 rnd.choice(["", "TAGS\x01a", "KEYS\x01k\x02UNIQ_KEY\x01u"])) for _ in range(rnd.randint(0, 6))]
        buf = bytearray(run_of(recs, 4096, pad=rnd.choice([0, 8, 100]), blank=rnd.random() < 0.5))
        for _ in range(rnd.randint(0, 3)):
            if buf:
                buf[rnd.randrange(len(buf))] = rnd.randrange(256)
        if rnd.random() < 0.3:
            buf = buf[: rnd.randrange(len(buf) + 1)]
        data = bytes(buf)
        for crc in (False, True):
            assert twin.walk_records(data, 0, 4096, crc) == ref_walk(data, 0, 4096, crc), data


@needs_compiled
def test_walk_records_twins_agree_on_an_mmap_like_buffer():
    recs = [("TopicA", bytes(range(256)) * 4, "TAGS\x01t\x02KEYS\x01k")] * 500
    buf = bytearray(run_of(recs, 0, pad=4096))
    view = memoryview(buf)
    assert speedups.compiled.walk_records(view, 0, 0, True) == speedups.pure.walk_records(view, 0, 0, True)
    assert speedups.compiled.walk_records(view, 0, 0, True)[1] == 500


@pytest.mark.skipif(not (GOLDEN / "manifest.jsonl").exists(), reason="golden store not available")
@pytest.mark.parametrize("twin", TWINS)
def test_walk_records_passes_every_golden_record(twin):
    with open(GOLDEN / "manifest.jsonl", encoding="utf-8") as fh:
        manifest = [json.loads(line) for line in fh]
    seen = 0
    for f in sorted((GOLDEN / "store" / "commitlog").iterdir()):
        data = f.read_bytes()
        end, count, _blank = twin.walk_records(data, 0, int(f.name), True)
        assert end == ref_walk(data, 0, int(f.name), True)[0]
        seen += count
    assert seen == len(manifest)


# -- cq_scan -----------------------------------------------------------------------------------

UNIT = struct.Struct(">qiq")


def units(*rows: tuple[int, int, int]) -> bytes:
    return b"".join(UNIT.pack(*r) for r in rows)


@pytest.mark.parametrize("twin", TWINS)
def test_cq_scan(twin):
    prefill = (0, 0x7FFFFFFF, 0)
    data = units(prefill, (100, 50, 7), (150, 60, -3)) + bytes(200)
    assert twin.cq_scan(data, 0, len(data)) == (60, 210)
    assert twin.cq_scan(data, 0, 40) == (40, 150)  # end bounds the scan
    assert twin.cq_scan(data, 0, 10_000) == (60, 210)  # end clamped to the buffer
    assert twin.cq_scan(units(prefill, prefill), 0, 40) == (40, -1)
    assert twin.cq_scan(units((5, 10, 0), (-1, 10, 0), (20, 10, 0)), 0, 60) == (20, 15)
    assert twin.cq_scan(units((5, 10, 0), (30, 0, 0)), 0, 40) == (20, 15)
    assert twin.cq_scan(units((5, 10, 0)) + b"\x00" * 7, 20, 27) == (20, -1)  # a partial unit is not read
    with pytest.raises(IndexError):
        twin.cq_scan(data, -20, len(data))


@needs_compiled
def test_cq_scan_twins_agree_on_random_units():
    rnd = random.Random(12)
    for _ in range(500):
        rows = [(rnd.choice([-1, 0, rnd.randrange(1 << 40)]), rnd.choice([0, -5, 0x7FFFFFFF, rnd.randrange(1, 5000)]),
                 rnd.randrange(-(1 << 63), 1 << 63)) for _ in range(rnd.randint(0, 8))]
        data = units(*rows) + rnd.randbytes(rnd.randint(0, 30))
        pos = rnd.choice([0, 20, 40])
        end = rnd.randint(0, len(data) + 20)
        assert speedups.compiled.cq_scan(data, pos, end) == speedups.pure.cq_scan(data, pos, end)

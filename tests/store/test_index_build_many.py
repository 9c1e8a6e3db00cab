"""IndexService.build_index_many / speedups.index_build_many: a run of records in one call.

The run path must write the same bytes as ``build_index`` record by record: same
entries, hash chains and header (hashSlotCount, indexCount, begin/end timestamps and
offsets), and the same files when the index fills up in the middle of a run or in
the middle of one record's keys. Both twins are compared with each other too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from common import speedups
from store.config import MessageStoreConfig
from store.index_file import index_file_name, index_file_size
from store.index_service import IndexService

TWINS = [pytest.param(speedups.pure, id="pure")]
if speedups.compiled is not None:
    TWINS.append(pytest.param(speedups.compiled, id="compiled"))

T0 = 1_800_000_000_000


@dataclass
class Req:
    """The DispatchRequest fields the index reads."""

    topic: str
    commit_log_offset: int
    store_timestamp: int
    keys: str | None = ""
    uniq_key: str | None = None
    sys_flag: int = 0


def random_requests(rnd: random.Random, n: int, start_ts: int = T0) -> list[Req]:
    """Records with every shape the index treats differently (skips, empty pieces, unicode, rollbacks)."""
    words = ["k", "key 1", "  a  b ", "", " ", "日本", "\U0001F600x", "x" * 40, "UNIQ", "a\tb"]
    out = []
    off = 0
    ts = start_ts
    for _ in range(n):
        shape = rnd.random()
        step = rnd.randrange(50, 500)
        if shape < 0.05 and off > 1000:
            o = off - rnd.randrange(1, 1000)  # behind the end: already indexed
        else:
            off += step
            o = off
        ts += rnd.choice([0, 1, 999, 1000, 123_456, 5_000_000])
        keys = " ".join(rnd.choice(words) for _ in range(rnd.randrange(0, 4)))
        uniq = rnd.choice([None, "", f"7F000001{rnd.randrange(1 << 40):016X}", "ü-uniq"])
        sys_flag = rnd.choice([0, 0, 0, 0x4, 0x8, 0xC])
        out.append(Req(rnd.choice(["TopicA", "T", "主题"]), o, ts, keys, uniq, sys_flag))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_twins_agree_and_match_index_put_keys(seed):
    """Both twins give the same bytes and header as the record-by-record reference."""
    rnd = random.Random(seed)
    slots, max_index = rnd.choice([(1, 40), (7, 300), (101, 2000)])
    reqs = random_requests(rnd, 300)
    header0 = (0, 0, 0, 0, 0, 1) if seed % 2 else (T0 - 7_000, T0 - 7_000, 50, 50, 0, 1)
    size = index_file_size(slots, max_index)

    # reference: the per-record rules spelled out with index_put_keys (pure)
    ref = bytearray(size)
    begin_ts, end_ts, begin_phy, end_phy, hsc, count = header0
    i = 0
    while i < len(reqs):
        r = reqs[i]
        if count >= max_index:
            break
        if r.commit_log_offset < end_phy or (r.sys_flag & 0xC) == 0xC:
            i += 1
            continue
        items = [k for k in (r.keys or "").split(" ") if k]
        if r.uniq_key:
            items.insert(0, r.uniq_key)
        if not items:
            i += 1
            continue
        if count + len(items) > max_index:
            break
        td = 0 if begin_ts <= 0 else max(0, (r.store_timestamp - begin_ts) // 1000)
        done, new = speedups.pure.index_put_keys(ref, slots, count, max_index, [f"{r.topic}#{k}" for k in items],
                                                 r.commit_log_offset, td)
        assert done == len(items)
        if count <= 1:
            begin_ts, begin_phy = r.store_timestamp, r.commit_log_offset
        count += done
        hsc += new
        end_ts, end_phy = r.store_timestamp, r.commit_log_offset
        i += 1
    expected = (i, (begin_ts, end_ts, begin_phy, end_phy, hsc, count))

    results = []
    for twin in (speedups.pure, speedups.compiled):
        if twin is None:
            continue
        buf = bytearray(size)
        # resume from every stop, as IndexService does after a roll (here: nothing rolls, so it stops for good)
        got = twin.index_build_many(buf, slots, max_index, reqs, 0, header0)
        assert got == expected
        assert buf == ref
        results.append((got, bytes(buf)))
    assert all(r == results[0] for r in results)


@pytest.mark.parametrize("twin", TWINS)
def test_start_and_stop_points(twin):
    """``start`` skips the records before it; a full file stops at once; a record that does not fit
    whole is left to the caller with nothing of it written."""
    slots, max_index = 5, 5
    reqs = [Req("T", 100, T0, "a b"), Req("T", 200, T0 + 2000, "c d e"), Req("T", 300, T0 + 3000, "f g")]
    buf = bytearray(index_file_size(slots, max_index))
    nxt, hdr = twin.index_build_many(buf, slots, max_index, reqs, 1, (0, 0, 0, 0, 0, 1))
    # entries 1..3 taken; "f g" needs entries 4..5 but 5 is maxIndexNum: left undone, nothing of it written
    assert nxt == 2 and hdr == (T0 + 2000, T0 + 2000, 200, 200, hdr[4], 4)
    snapshot = bytes(buf)
    assert twin.index_build_many(buf, slots, max_index, reqs, 2, hdr) == (2, hdr)
    assert bytes(buf) == snapshot
    nxt, hdr2 = twin.index_build_many(buf, slots, max_index, [Req("T", 400, T0 + 4000, "h")], 0, hdr)
    assert nxt == 1 and hdr2[5] == 5 and hdr2[1] == T0 + 4000 and hdr2[3] == 400 and hdr2[:1] == hdr[:1]
    # entry 4 (h) carries 2 s from beginTimestamp
    e4 = 40 + 4 * slots + 4 * 20
    assert int.from_bytes(buf[e4 + 12 : e4 + 16], "big") == 2
    # full at start: stops on the first record even if it would be skipped
    full = (T0, T0, 0, 10_000, 0, max_index)
    assert twin.index_build_many(buf, slots, max_index, [Req("T", 0, T0, "x")], 0, full) == (0, full)
    assert twin.index_build_many(buf, slots, max_index, [], 0, full) == (0, full)


@pytest.mark.parametrize("twin", TWINS)
def test_bad_arguments_raise_before_writing(twin):
    buf = bytearray(index_file_size(4, 10))
    reqs = [Req("T", 1, T0, "a")]
    with pytest.raises(IndexError):  # geometry larger than the buffer
        twin.index_build_many(buf, 4, 11, reqs, 0, (0, 0, 0, 0, 0, 1))
    with pytest.raises(ValueError):
        twin.index_build_many(buf, 0, 10, reqs, 0, (0, 0, 0, 0, 0, 1))
    with pytest.raises(IndexError):
        twin.index_build_many(buf, 4, 10, reqs, 2, (0, 0, 0, 0, 0, 1))
    assert buf == bytearray(len(buf))
    with pytest.raises(TypeError):
        twin.index_build_many(buf, 4, 10, [Req("T", 1, T0, keys=b"bytes")], 0, (0, 0, 0, 0, 0, 1))


class Clock:
    """File names from a counter: both services name their files alike."""

    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> int:
        self.t += 1
        return self.t


def build(path: Path, reqs: list[Req], runs: list[int], many: bool, slots: int, max_index: int) -> dict[str, bytes]:
    svc = IndexService(MessageStoreConfig(maxHashSlotNum=slots, maxIndexNum=max_index), str(path), clock=Clock())
    assert svc.load(True)
    i = 0
    for n in runs:
        run = reqs[i : i + n]
        i += n
        if many:
            svc.build_index_many(run)
        else:
            for r in run:
                svc.build_index(r)
        svc.sync_header()
    svc.shutdown()
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


@pytest.mark.parametrize("slots,max_index", [(3, 7), (17, 40), (64, 400)])
def test_service_run_path_writes_the_same_files_across_rolls(tmp_path, slots, max_index):
    """build_index_many over runs of any length == build_index record by record, files and headers
    included, when files fill up between records and in the middle of a record's keys."""
    rnd = random.Random(slots)
    reqs = random_requests(rnd, 600)
    runs = []
    left = len(reqs)
    while left:
        n = min(left, rnd.choice([1, 2, 5, 32, 100]))
        runs.append(n)
        left -= n
    one = build(tmp_path / "one", reqs, runs, False, slots, max_index)
    many = build(tmp_path / "many", reqs, runs, True, slots, max_index)
    assert len(one) > 2, "the geometry must make the index roll"
    assert list(one) == list(many)
    for name in one:
        assert one[name] == many[name], name
    assert list(one)[0] == index_file_name(T0 + 1)

"""EntryBatcher's cuts, without Spark or a broker: exact byte and count limits, lone big entries, carry-over."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")

from connectors.spark.entry_batcher import EntryBatcher  # noqa: E402
from connectors.spark.errors import ConnectorError  # noqa: E402


def _entries(sizes: list[int], first: int = 0):
    blobs = [bytes([65 + (first + i) % 26]) * s for i, s in enumerate(sizes)]
    return (pa.array(blobs, pa.large_binary()), pa.array([f"U{first + i}" for i in range(len(sizes))],
                                                           pa.large_string()), blobs)


def _cut(batcher: EntryBatcher, *groups: list[int]) -> tuple[list, list[bytes]]:
    out, blobs, first = [], [], 0
    for sizes in groups:
        entries, uniq, b = _entries(sizes, first)
        out.extend(batcher.add(entries, uniq, range(first, first + len(sizes))))
        blobs += b
        first += len(sizes)
    last = batcher.flush()
    if last is not None:
        out.append(last)
    return out, blobs


def test_batches_fill_up_to_exactly_the_byte_limit_and_never_past_it():
    # 40 + 60 = 100 fits exactly; one byte more does not
    out, blobs = _cut(EntryBatcher(100, 1000, 10_000), [40, 60, 40, 61, 1, 99, 1, 100])
    assert [(b.first_row, b.last_row, len(bytes(b.body))) for b in out] == [
        (0, 1, 100), (2, 2, 40), (3, 4, 62), (5, 6, 100), (7, 7, 100)]
    assert b"".join(bytes(b.body) for b in out) == b"".join(blobs)
    assert [k for b in out for k in b.uniq_keys] == [f"U{i}" for i in range(8)]


def test_the_count_limit_cuts_too():
    out, _ = _cut(EntryBatcher(10_000, 3, 10_000), [1] * 7)
    assert [(b.first_row, b.last_row, b.count) for b in out] == [(0, 2, 3), (3, 5, 3), (6, 6, 1)]


def test_an_entry_over_the_target_goes_alone_and_one_over_max_message_size_fails_naming_the_row():
    out, _ = _cut(EntryBatcher(100, 1000, 500), [30, 101, 30, 500, 30])
    assert [(b.first_row, b.last_row, len(bytes(b.body))) for b in out] == [
        (0, 0, 30), (1, 1, 101), (2, 2, 30), (3, 3, 500), (4, 4, 30)]
    with pytest.raises(ConnectorError, match=r"row 3: its message takes 501 bytes encoded, more than "
                                             r"maxMessageSize 500") as ei:
        _cut(EntryBatcher(100, 1000, 500), [30, 30, 30, 501])
    assert ei.value.code == 13


def test_the_byte_limit_is_capped_by_max_message_size():
    out, _ = _cut(EntryBatcher(1000, 1000, 100), [50, 50, 1])
    assert [(b.first_row, b.last_row) for b in out] == [(0, 1), (2, 2)]


def test_rows_left_at_a_chunk_end_join_the_next_chunk():
    out, blobs = _cut(EntryBatcher(100, 1000, 10_000), [30, 30], [30, 10, 50], [20])
    assert [(b.first_row, b.last_row, len(bytes(b.body))) for b in out] == [(0, 3, 100), (4, 5, 70)]
    assert b"".join(bytes(b.body) for b in out) == b"".join(blobs)


def test_sliced_and_taken_arrays_cut_by_their_own_offsets():
    entries, uniq, blobs = _entries([10, 20, 30, 40, 50])
    b = EntryBatcher(60, 1000, 10_000)
    out = list(b.add(entries.slice(1, 3), uniq.slice(1, 3), [1, 2, 3])) + [b.flush()]
    assert [bytes(x.body) for x in out] == [blobs[1] + blobs[2], blobs[3]]
    take = pa.array([4, 0], pa.int64())
    out = list(b.add(entries.take(take), uniq.take(take), [4, 0])) + [b.flush()]
    assert [bytes(x.body) for x in out] == [blobs[4] + blobs[0]] and out[0].uniq_keys == ["U4", "U0"]

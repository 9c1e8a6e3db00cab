"""Storage.append_run: a follower's pushed entries stored in one go, byte for byte as one append
each would store them, or declined (None, nothing written) outside the usual case."""

from __future__ import annotations

import pytest

from dledger.entry import DLedgerEntry
from dledger.mmap_file_store import DLedgerMmapFileStore
from dledger.storage import MemoryStorage

DATA = 4096
INDEX = 32 * 64


def _store(path) -> DLedgerMmapFileStore:
    return DLedgerMmapFileStore(str(path), data_file_size=DATA, index_file_size=INDEX)


def _leader_entries(tmp_path, n: int, size: int = 100) -> list[DLedgerEntry]:
    """Entries as a leader's store placed them (positions included), from a scratch store."""
    st = _store(tmp_path / "leader")
    out = [st.append(i, 2, bytes([i % 251]) * size) for i in range(n)]
    st.close()
    return [DLedgerEntry(e.index, e.term, e.body, e.pos) for e in out]


def _files(path) -> dict[str, bytes]:
    return {f"{d}/{f.name}": f.read_bytes() for d in ("data", "index") for f in sorted((path / d).iterdir())}


def test_run_stores_the_same_bytes_as_one_append_each(tmp_path):
    entries = _leader_entries(tmp_path, 20)  # 148 bytes each: 27 fit a 4 KiB file
    one, run = _store(tmp_path / "one"), _store(tmp_path / "run")
    for e in entries:
        one.append(e.index, e.term, e.body, pos=e.pos)
    assert run.append_run(entries[:1]) is None  # a single entry: append it
    run.append(0, 2, entries[0].body, pos=0)
    stored = run.append_run(entries[1:])
    assert stored == entries[1:]
    assert (run.ledger_end_index, run.ledger_end_term) == (19, 2)
    assert [run.get(i) for i in range(20)] == [one.get(i) for i in range(20)]
    one.close()
    run.close()
    assert _files(tmp_path / "run") == _files(tmp_path / "one")
    again = _store(tmp_path / "run")  # recovery finds them all
    assert again.ledger_end_index == 19 and again.get(19).body == entries[19].body
    again.close()


@pytest.mark.parametrize("case", ["gap", "pos", "file_end", "crc", "not_at_end"])
def test_run_declines_and_writes_nothing(tmp_path, case):
    entries = _leader_entries(tmp_path, 30)
    st = _store(tmp_path / "f")
    st.append(0, 2, entries[0].body, pos=0)
    run = entries[1:5]
    if case == "gap":
        run = [entries[1], entries[3]]
    elif case == "pos":
        run = [entries[1], DLedgerEntry(2, 2, entries[2].body, entries[2].pos + 1)]
    elif case == "file_end":
        run = entries[1:30]  # crosses into the second data file (a blank first)
    elif case == "crc":
        run = [entries[1], DLedgerEntry(2, 2, entries[2].body, entries[2].pos, chain_crc=7)]
    else:
        run = entries[2:5]
    assert st.append_run(run) is None
    assert st.ledger_end_index == 0 and st.get(1) is None
    st.close()


def test_memory_storage_run():
    st = MemoryStorage()
    es = [DLedgerEntry(i, 1, b"x" * i, sum(48 + k for k in range(i))) for i in range(5)]
    assert st.append_run(es[1:]) is None  # does not start at the end
    assert st.append_run(es) == es and st.ledger_end_index == 4
    assert st.append_run([DLedgerEntry(5, 1, b"", 0)]) is None  # wrong position

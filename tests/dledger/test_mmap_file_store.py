"""DLedgerMmapFileStore on real files: byte layout, blank-filled tails, recovery, truncation."""

from __future__ import annotations

import os
import struct

import pytest

from dledger.entry import DLedgerEntry
from dledger.mmap_file_store import DLedgerMmapFileStore
from dledger.protocol import DLedgerError

DATA = 4096
INDEX = 32 * 64


def open_store(path) -> DLedgerMmapFileStore:
    return DLedgerMmapFileStore(str(path), data_file_size=DATA, index_file_size=INDEX)


def fill(st, n, term=1, size=100, start=0):
    return [
        st.append(st.ledger_end_index + 1, term, bytes([i % 251]) * size) for i in range(start, start + n)
    ]


def test_entry_bytes_on_disk_follow_dledger_layout(tmp_path):
    st = open_store(tmp_path)
    e0 = st.append(0, 3, b"hello")
    e1 = st.append(1, 3, b"world!")
    st.flush()
    raw = (tmp_path / "data" / "00000000000000000000").read_bytes()
    assert len(raw) == DATA
    assert struct.unpack_from(">iiqqqiiii", raw, 0) == (1, 53, 0, 3, 0, 0, 0, 0, 5)
    assert raw[48:53] == b"hello"
    assert e1.pos == 53 and struct.unpack_from(">iiqqq", raw, 53) == (1, 54, 1, 3, 53)
    idx = (tmp_path / "index" / "00000000000000000000").read_bytes()
    assert struct.unpack_from(">iqiqq", idx, 32) == (1, 53, 54, 1, 3)
    assert st.get(0) == e0 and st.get(1).body == b"world!" and st.get(2) is None
    assert bytes(st.select_data(e1.pos + 48, 6)) == b"world!" and st.select_data(10 * DATA) is None
    st.close()


def test_entry_that_does_not_fit_starts_next_file_after_a_blank(tmp_path):
    st = open_store(tmp_path)
    entries = fill(st, 60, size=100)  # 148 bytes each: 27 per 4 KiB file
    st.flush()
    per_file = (DATA - 8) // 148
    first_in_second = entries[per_file]
    assert first_in_second.pos == DATA
    raw = (tmp_path / "data" / "00000000000000000000").read_bytes()
    tail = per_file * 148
    assert struct.unpack_from(">ii", raw, tail) == (-1, DATA - tail)
    assert sorted(os.listdir(tmp_path / "data"))[:2] == ["00000000000000000000", "00000000000000004096"]
    assert [st.get(e.index).pos for e in entries] == [e.pos for e in entries]
    st.close()


def test_reopen_recovers_end_term_and_committed_index(tmp_path):
    st = open_store(tmp_path)
    fill(st, 40, term=2)
    fill(st, 10, term=5, start=40)
    st.set_committed_index(44)
    st.close()
    st = open_store(tmp_path)
    assert (st.ledger_begin_index, st.ledger_end_index, st.ledger_end_term) == (0, 49, 5)
    assert st.committed_index == 44
    e = st.append(50, 5, b"next")
    assert st.get(49).pos + st.get(49).size == e.pos or e.pos % DATA == 0
    st.close()


def test_torn_tail_write_is_cut_on_recovery(tmp_path):
    st = open_store(tmp_path)
    entries = fill(st, 5)
    st.close()
    end = entries[-1].pos + entries[-1].size
    with open(tmp_path / "data" / "00000000000000000000", "r+b") as f:
        # A crash in the middle of the next entry's header (no CRC in 0.3.1.2: a torn
        # body behind a whole header is indistinguishable from data, as in DLedger).
        f.seek(end)
        f.write(DLedgerEntry(5, 1, b"x" * 300, pos=end).encode()[:30])
    st = open_store(tmp_path)
    assert st.ledger_end_index == 4
    e = st.append(5, 1, b"again")
    assert e.pos == end and st.get(5).body == b"again"
    st.close()
    st = open_store(tmp_path)
    assert st.ledger_end_index == 5 and st.get(5).body == b"again"
    st.close()


def test_lost_index_file_is_rebuilt_from_data(tmp_path):
    st = open_store(tmp_path)
    entries = fill(st, 50)
    st.close()
    for name in os.listdir(tmp_path / "index"):
        os.unlink(tmp_path / "index" / name)
    st = open_store(tmp_path)
    assert st.ledger_end_index == 49
    assert [st.get(i).body for i in range(50)] == [e.body for e in entries]
    st.close()


def test_truncate_keeps_equal_entry_and_rewrites_divergent_one(tmp_path):
    st = open_store(tmp_path)
    entries = fill(st, 40, term=1)
    # Same entry at 20: keep it, drop 21..
    st.truncate(entries[20])
    assert st.ledger_end_index == 20 and st.get(20) == entries[20]
    # Different entry at 10 (a newer leader's): cut at its position and write it there.
    new = DLedgerEntry(10, 4, b"leader's", pos=entries[10].pos)
    st.truncate(new)
    assert (st.ledger_end_index, st.ledger_end_term) == (10, 4)
    assert st.get(10).body == b"leader's" and st.get(11) is None
    st.close()
    st = open_store(tmp_path)  # cut entries must not come back
    assert (st.ledger_end_index, st.ledger_end_term) == (10, 4)
    assert st.get(10).body == b"leader's"
    fill(st, 3, term=4, start=11)
    st.close()
    st = open_store(tmp_path)
    assert st.ledger_end_index == 13
    st.close()


def test_follower_append_must_land_on_the_leaders_position(tmp_path):
    st = open_store(tmp_path)
    st.append(0, 1, b"a")
    with pytest.raises(DLedgerError):
        st.append(1, 1, b"b", pos=999)
    with pytest.raises(DLedgerError):
        st.append(5, 1, b"gap")
    assert st.ledger_end_index == 0
    st.close()


def test_truncate_onto_next_file_start_drops_stale_tail_of_previous_file(tmp_path):
    st = open_store(tmp_path)
    fill(st, 20, term=1, size=100)  # 148-byte entries: 27 per file, all in file 0
    # A newer leader's entry 5 is too big for the rest of file 0 and starts file 1.
    e4 = st.get(4)
    with pytest.raises(DLedgerError):  # not where our entry 4 ends, nor a file start
        st.truncate(DLedgerEntry(5, 2, b"x", pos=e4.pos + e4.size + 7))
    assert st.ledger_end_index == 19
    fill_end = e4.pos + e4.size
    st2 = DLedgerEntry(5, 2, b"B" * (DATA - fill_end - 48 - 4), pos=DATA)  # 4 bytes too big to fit
    st.truncate(st2)
    assert (st.ledger_end_index, st.ledger_end_term) == (5, 2) and st.get(5).pos == DATA
    raw = (tmp_path / "data" / "00000000000000000000").read_bytes()
    assert struct.unpack_from(">ii", raw, fill_end) == (-1, DATA - fill_end)
    assert not any(raw[fill_end + 8 :])  # stale entries 5..19 are gone from file 0
    st.close()
    st = open_store(tmp_path)
    assert st.ledger_end_index == 5 and st.get(5).body == st2.body
    st.close()


def test_append_hook_patches_body_with_final_position(tmp_path):
    st = open_store(tmp_path)
    fill(st, 27, size=100)  # file 0 is full: the next entry goes to 4096

    def hook(pos, body):
        struct.pack_into(">q", body, 0, pos + 48)  # as RocketMQ patches PHYSICALOFFSET

    e = st.append(27, 1, bytes(200), hook=hook)
    assert e.pos == DATA and struct.unpack_from(">q", st.get(27).body)[0] == DATA + 48
    with pytest.raises(DLedgerError):
        st.append(28, 1, b"abc", hook=lambda pos, body: body.extend(b"more"))
    assert st.ledger_end_index == 27
    st.close()
    st = open_store(tmp_path)
    assert struct.unpack_from(">q", st.get(27).body)[0] == DATA + 48
    st.close()


def test_delete_expired_files_keeps_uncommitted_and_moves_begin(tmp_path):
    st = open_store(tmp_path)
    fill(st, 100, size=100)  # 27 entries per 4 KiB file: 4 files
    st.set_committed_index(30)  # entries of file 0 (0..26) are committed, file 1 (27..53) is not
    assert st.delete_expired_files() == 1
    assert st.ledger_begin_index == 27 and st.get(26) is None and st.get(27).index == 27
    assert st.delete_expired_files() == 0  # file 1 holds uncommitted entries
    st.set_committed_index(99)
    assert st.delete_expired_files(expired_before_ms=0) == 0  # not old enough
    assert st.delete_expired_files() == 2  # never the last file
    assert st.ledger_begin_index == 81
    st.close()
    st = open_store(tmp_path)
    assert (st.ledger_begin_index, st.ledger_end_index) == (81, 99)
    assert [st.get(i).index for i in range(81, 100)] == list(range(81, 100))
    st.close()


def test_reset_restarts_the_log_mid_file_and_survives_reopen(tmp_path):
    st = open_store(tmp_path)
    fill(st, 10, term=1)
    leader_entry = DLedgerEntry(500, 3, b"from the leader", pos=5 * DATA + 1234)
    st.reset(leader_entry)
    assert (st.ledger_begin_index, st.ledger_end_index, st.ledger_end_term) == (500, 500, 3)
    st.append(501, 3, b"next")
    st.close()
    assert sorted(os.listdir(tmp_path / "data")) == [f"{5 * DATA:020d}"]
    st = open_store(tmp_path)
    assert (st.ledger_begin_index, st.ledger_end_index) == (500, 501)
    assert st.get(500).body == b"from the leader" and st.get(500).pos == 5 * DATA + 1234
    assert st.get(501).body == b"next"
    st.close()

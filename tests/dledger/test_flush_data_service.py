"""FileSyncer: the DLedger flush loop's background fdatasync of a file store's data and index files.

Real files under tmp_path; the worker (compiled, or the pure twin under ROCKETMQ_PY_PURE=1) really
syncs them. What a round covers is read from the worker's ``done`` offset.
"""

from __future__ import annotations

from dledger.entry import DLedgerEntry
from dledger.flush_data_service import FileSyncer
from dledger.mmap_file_store import DLedgerMmapFileStore
from tests.support import wait_until

DATA = 4096
INDEX = 32 * 64


def open_store(path) -> DLedgerMmapFileStore:
    return DLedgerMmapFileStore(str(path), data_file_size=DATA, index_file_size=INDEX)


def fill(st, n, term=1, size=100):
    return [st.append(st.ledger_end_index + 1, term, bytes([i % 251]) * size) for i in range(n)]


def written_end(q) -> int:
    last = q.mapped_files[-1]
    return last.file_from_offset + last.wrote_position


def test_every_written_byte_is_asked_across_file_rolls(tmp_path):
    st = open_store(tmp_path)
    data = FileSyncer(st.data, lambda: st.cuts)
    index = FileSyncer(st.index, lambda: st.cuts)
    try:
        fill(st, 10)
        assert data.request() and index.request()
        wait_until(lambda: data.worker.done >= written_end(st.data), 5, what="data synced")
        wait_until(lambda: index.worker.done >= written_end(st.index), 5, what="index synced")
        first_rounds = data.rounds
        assert first_rounds >= 1
        assert data.request()  # nothing new written: no further round asked
        fill(st, 60)  # 148-byte entries: the data log rolls into further 4 KiB files
        assert len(st.data.mapped_files) >= 3
        assert data.request() and index.request()
        wait_until(lambda: data.worker.done >= written_end(st.data), 5, what="rolled files synced")
        assert data.rounds > first_rounds
    finally:
        data.close()
        index.close()
        st.close()


def test_a_cut_is_declined_once_then_synced_by_a_fresh_worker(tmp_path):
    st = open_store(tmp_path)
    data = FileSyncer(st.data, lambda: st.cuts)
    try:
        entries = fill(st, 20)
        assert data.request()
        wait_until(lambda: data.worker.done >= written_end(st.data), 5, what="synced")
        # a new leader's entry replaces index 10: bytes below what the worker synced are rewritten
        old = entries[10]
        st.truncate(DLedgerEntry(index=10, term=2, body=b"replaced", pos=old.pos))
        assert not data.request()  # declined: the caller flushes this round itself
        assert data.worker is None
        fill(st, 3, term=2)
        assert data.request()
        wait_until(lambda: data.worker.done >= written_end(st.data), 5, what="synced after the cut")
    finally:
        data.close()
        st.close()

"""DLedgerMmapFileStore on a disk that fills up (issue #17, defect 3): a file (or the next step of
an index file) that finds no room is a DISK_FULL error, never a half-written entry; the log
continues once space returns."""

from __future__ import annotations

import pytest

from dledger.mmap_file_store import DLedgerMmapFileStore
from dledger.protocol import DLedgerError
from dledger.protocol import DLedgerResponseCode as C
from tests.tmpfs import SmallDisks, fill

DATA = 64 * 1024
INDEX = 32 * 64  # 64 units a file: index files roll more often than data files


@pytest.fixture
def small_disk(tmp_path):
    disks = SmallDisks(tmp_path)
    yield disks.mount
    disks.unmount_all()


CASES = {  # what runs out first: (data file size, index file size, body size)
    "index file": (DATA, INDEX, 10),
    "data file": (DATA, INDEX, 1000),
    "index step": (1024 * 1024, 32 * 8192, 10),  # the next 64 KiB of a big index file cannot be reserved
}


@pytest.mark.parametrize("first_to_fail", list(CASES))
def test_no_room_for_a_new_file_is_disk_full_and_leaves_no_orphan_entry(small_disk, first_to_fail):
    data_size, index_size, body_size = CASES[first_to_fail]
    disk = small_disk(2)
    st = DLedgerMmapFileStore(str(disk / "node"), data_file_size=data_size, index_file_size=index_size)
    body = b"e" * body_size
    st.append(0, 1, body)
    fill(disk / "filler")  # not one block left: the next file of either kind cannot be reserved
    with pytest.raises(DLedgerError) as info:
        for i in range(1, 10_000):  # bounded: some file must be needed long before
            st.append(i, 1, body)
    assert info.value.code == C.DISK_FULL, info.value
    end = st.ledger_end_index
    if first_to_fail == "index step":
        assert end == 64 * 1024 // 32 - 1  # exactly the units of the first reserved step
    assert [st.get(i).body for i in range(end + 1)] == [body] * (end + 1)
    (disk / "filler").unlink()
    st.append(end + 1, 1, body)  # the same index again: nothing half-appended is in the way
    st.flush()
    st.close()
    again = DLedgerMmapFileStore(str(disk / "node"), data_file_size=data_size, index_file_size=index_size)
    assert again.ledger_end_index == end + 1
    assert [again.get(i).body for i in range(end + 2)] == [body] * (end + 2)
    again.close()

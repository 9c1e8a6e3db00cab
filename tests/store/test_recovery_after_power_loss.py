"""Abnormal recovery over consume queues a power cut left behind (found by the fault suite's
power-loss rounds, tests/soak/test_powerloss.py): garbage past the durable end of a consume queue,
a last file with no valid unit, re-dispatched units that must be durable before new ones follow."""

from __future__ import annotations

import struct

from store.consume_queue import ConsumeQueue
from tests.store.store_helpers import make_msg, open_store, small_config

UNIT = struct.Struct(">qiq")


def test_empty_last_file_keeps_the_queue_end_of_the_file_before(tmp_path):
    cq = ConsumeQueue("T", 0, str(tmp_path), 200)  # 10 units per file
    for i in range(12):
        assert cq.put_message_position_info(i * 100, 100, 0, i)
    cq.flush()
    last = cq.queue.get_last_mapped_file()
    UNIT.pack_into(last.mm, 0, -5, -1, 0)  # the second file's first unit: garbage that reads invalid
    UNIT.pack_into(last.mm, 20, -5, -1, 0)
    cq.truncate_dirty_logic_files(10_000)
    assert cq.get_max_offset_in_queue() == 10
    assert cq.max_physic_offset == 10 * 100  # the end of unit 9, in the first file (was -1)
    # a re-dispatch of an indexed record is skipped, not written into the empty file's first slot
    assert cq.put_message_position_info(0, 100, 0, 0)
    assert cq.get_max_offset_in_queue() == 10
    assert cq.put_message_position_info(1000, 100, 0, 10)
    assert cq.get_unit(10) == (1000, 100, 0)
    cq.shutdown()


def _put(s, n: int) -> list[int]:
    offsets = []
    for i in range(n):
        r = s.put_message(make_msg("T", 0, b"m%04d" % i))
        assert r.is_ok()
        offsets.append(r.append_result.wrote_offset)
    s.dispatch_pending()
    return offsets


def test_garbage_units_past_the_commit_log_do_not_hide_records_from_the_re_dispatch(tmp_path):
    root = tmp_path / "s"
    s = open_store(small_config(root))
    offsets = _put(s, 250)  # 100 units per consume-queue file: three files
    s.shutdown_sync()
    (root / "abort").write_bytes(b"")  # as if killed
    cq_files = sorted((root / "consumequeue" / "T" / "0").iterdir())
    with open(cq_files[-1], "r+b") as f:  # the last file's units: garbage that looks valid
        f.write(b"".join(UNIT.pack((1 << 50) + i, 77, 0) for i in range(50)))
    s = open_store(small_config(root))
    try:
        cq = s.consume_queues.find("T", 0)
        assert cq.get_max_offset_in_queue() == 250
        assert [cq.get_unit(k)[0] for k in range(250)] == offsets
        # the re-dispatched units are durable before anything new follows them
        assert cq.queue.flushed_where == cq.queue.get_max_offset()
    finally:
        s.shutdown_sync()

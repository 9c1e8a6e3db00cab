"""Pure twin of the ConsumeQueue primitives of :mod:`common.speedups` (``cq_put_units``,
``queue_groups``, ``cq_scan``): the reference the compiled twin is tested against. Callers use
them through ``common.speedups``, which picks the twin."""

from __future__ import annotations

import struct

__all__ = ["cq_put_units", "queue_groups", "cq_scan"]

_CQ_UNIT = struct.Struct(">qiq")


def cq_put_units(buf, pos: int, file_size: int, file_from_offset: int, allow_at_zero: bool,
                 max_physic_offset: int, requests, start: int) -> tuple[int, int, int]:
    """ConsumeQueue units of a run of dispatched records appended at the end of one file."""
    n = len(requests)
    if not 0 <= start <= n or pos < 0:
        raise IndexError("start or pos out of range")
    file_size = min(file_size, len(buf))
    pack = _CQ_UNIT.pack_into
    i = start
    while i < n:
        r = requests[i]
        offset = r.commit_log_offset
        size = r.msg_size
        if offset + size <= max_physic_offset:
            i += 1
            continue
        if pos + 20 > file_size or file_from_offset + pos != r.consume_queue_offset * 20 or (pos == 0 and not allow_at_zero):
            break
        pack(buf, pos, offset, size, r.tags_code)
        pos += 20
        max_physic_offset = offset + size
        i += 1
    return i, pos, max_physic_offset


_TX_TYPE = 0xC  # MessageSysFlag.TRANSACTION_MASK; PREPARED 0x4 and ROLLBACK 0xC get no unit


def queue_groups(requests) -> list[tuple[str, int, list]]:
    """The dispatched records that get a consume-queue unit, grouped by queue."""
    groups: dict[tuple[str, int], list] = {}
    out = []
    for r in requests:
        tx = r.sys_flag & _TX_TYPE
        if tx != 0x4 and tx != 0xC:
            key = (r.topic, r.queue_id)
            g = groups.get(key)
            if g is None:
                g = groups[key] = [r]
                out.append((r.topic, r.queue_id, g))
            else:
                g.append(r)
    return out


_CQ_HEAD = struct.Struct(">qi")


def cq_scan(buf, pos: int, end: int) -> tuple[int, int]:
    """ConsumeQueue recovery over the 20-byte units of one file.

    From ``pos``, pass units (int64 CommitLog offset, int32 size, int64 tags code) until one
    has offset < 0 or size <= 0 or fewer than 20 bytes are left before ``end`` (clamped to
    ``len(buf)``). Returns ``(stop, max_physic_offset)``: the position of that unit and
    offset + size of the last passed unit that is not a pre-fill unit (offset 0, size
    0x7FFFFFFF), -1 when none. IndexError for a negative ``pos``.
    """
    if pos < 0:
        raise IndexError("unit position outside the buffer")
    end = min(end, len(buf))
    unpack = _CQ_HEAD.unpack_from
    max_phy = -1
    while pos + 20 <= end:
        off, sz = unpack(buf, pos)
        if off < 0 or sz <= 0:
            break
        if sz != 0x7FFFFFFF or off != 0:
            max_phy = off + sz
        pos += 20
    return pos, max_phy

"""CommitLog recovery (RocketMQ ``CommitLog.recoverNormally`` / ``recoverAbnormally``; spec §8).

After a clean shutdown the last three files are checked; after a crash every record from
the last file older than the checkpoint is validated and re-dispatched. Either way the log
is cut after the last valid record and the bytes after it are zeroed, so a torn append
never parses later.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from common import speedups
from common.mapped_file import MappedFile
from common.record_codec import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    store_timestamp_at,
)
from store.dispatch import DispatchRequest

if TYPE_CHECKING:
    from store.commit_log import CommitLog

__all__ = ["recover_normally", "recover_abnormally"]

log = logging.getLogger(__name__)

_I32 = struct.Struct(">i")
NeedsDispatch = Callable[[str, int, int, int, int], bool]


def _walk(cl: CommitLog, start_index: int, check_crc: bool, on_record: Callable[[DispatchRequest], None] | None,
          needs_dispatch: NeedsDispatch | None = None) -> int:
    """Walk records from file ``start_index``; return the offset after the last valid record.

    Every record is validated (lengths, magic, its own offset, optional body
    CRC, no NUL in topic or properties). ``on_record`` receives the records
    ``needs_dispatch(topic, queue_id, offset, size, sys_flag)`` accepts (all
    when it is None). Without ``on_record``, one walk_records call per file.
    """
    if on_record is None:
        return _walk_files(cl, start_index, check_crc)
    files = cl.mapped_file_queue.mapped_files
    parse = speedups.parse_record
    request_of = cl.request_of
    crc32 = zlib.crc32
    index = start_index
    mf = files[index]
    mv = memoryview(mf.mm)
    base = mf.file_from_offset
    pos = 0
    while True:
        f = parse(mv, pos, True)
        if f is None:
            break
        if f[1] == BLANK_MAGIC_CODE:
            index += 1
            if index >= len(files):
                log.info("recover: last file %s ends with BLANK", mf.file_name)
                pos = mf.file_size
                break
            mv.release()
            mf = files[index]
            mv = memoryview(mf.mm)
            base = mf.file_from_offset
            pos = 0
            continue
        if check_crc and (crc32(mv[f[11] : f[11] + f[12]]) & 0x7FFFFFFF) != f[2]:
            log.warning("body CRC mismatch at %d", base + pos)
            break
        phys = f[6]
        if phys != base + pos:
            log.warning("record at %d claims another offset; stopping", base + pos)
            break
        if needs_dispatch is None or needs_dispatch(f[13], f[3], phys, f[0], f[7]):
            on_record(request_of(f, mv))
        pos += f[0]
    mv.release()
    return base + pos


def _walk_files(cl: CommitLog, start_index: int, check_crc: bool) -> int:
    """:func:`_walk` without a callback, one speedups.walk_records call per file."""
    files = cl.mapped_file_queue.mapped_files
    walk = speedups.walk_records
    for index in range(start_index, len(files)):
        mf = files[index]
        pos, _count, blank = walk(mf.mm, 0, mf.file_from_offset, check_crc)
        if not blank:
            if pos < mf.file_size:
                log.info("recover: last valid record of %s ends at %d", mf.file_name, pos)
            return mf.file_from_offset + pos
    log.info("recover: last file %s ends with BLANK", files[-1].file_name)
    return files[-1].file_from_offset + files[-1].file_size


def _finish_recover(cl: CommitLog, process_offset: int) -> None:
    q = cl.mapped_file_queue
    if cl.prepared:
        cl.prepared.clear()  # the log may have been cut: offsets can be written again
    _zero_tail(cl, process_offset)
    q.flushed_where = q.committed_where = process_offset
    q.truncate_dirty_files(process_offset)
    last = q.get_last_mapped_file()
    if last is not None:
        last.flushed_position = last.wrote_position


def _zero_tail(cl: CommitLog, offset: int) -> None:
    """Zero the garbage after ``offset`` in its file (a torn record), so it never parses later."""
    mf = cl.mapped_file_queue.find_mapped_file_by_offset(offset)
    if mf is None:
        return
    start = offset % cl.file_size
    limit = min(mf.file_size, start + cl.config.maxMessageSize + 64 * 1024 + 4096)
    mm = mf.mm
    p = start
    zero_page = bytes(4096)
    while p < limit:
        e = min(limit, (p // 4096 + 1) * 4096)
        if mm[p:e].count(0) != e - p:
            mm[p:e] = zero_page[: e - p]
        elif p > start and e - p == 4096:
            break  # a whole zero page: past the garbage
        p = e


def recover_normally(cl: CommitLog, max_phy_offset_of_cq: int, truncate_cq: Callable[[int], None],
                     destroy_cq: Callable[[], None]) -> int:
    """Normal recovery: check the last 3 files; cut after the last valid record. Returns the end offset."""
    files = cl.mapped_file_queue.mapped_files
    if not files:
        cl.mapped_file_queue.flushed_where = cl.mapped_file_queue.committed_where = 0
        destroy_cq()
        return 0
    start = max(0, len(files) - 3)
    process_offset = _walk(cl, start, cl.config.checkCRCOnRecover, None)
    _finish_recover(cl, process_offset)
    if max_phy_offset_of_cq > process_offset:
        log.warning("consume queues point past the commit log end %d: truncating", process_offset)
        truncate_cq(process_offset)
    return process_offset


def _matched_recover_start(mf: MappedFile, min_timestamp: int) -> bool:
    mv = mf.mm
    magic = _I32.unpack_from(mv, 4)[0]
    if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
        return False
    store_ts = store_timestamp_at(mv)
    return store_ts != 0 and store_ts <= min_timestamp


def recover_abnormally(cl: CommitLog, max_phy_offset_of_cq: int, min_timestamp: int,
                       dispatch: Callable[[DispatchRequest], None],
                       truncate_cq: Callable[[int], None], destroy_cq: Callable[[], None],
                       needs_dispatch: NeedsDispatch | None = None) -> int:
    """Abnormal recovery: re-dispatch every valid record from the last file older than the checkpoint."""
    files = cl.mapped_file_queue.mapped_files
    if not files:
        cl.mapped_file_queue.flushed_where = cl.mapped_file_queue.committed_where = 0
        destroy_cq()
        return 0
    start = 0
    for i in range(len(files) - 1, -1, -1):
        if _matched_recover_start(files[i], min_timestamp):
            start = i
            log.info("abnormal recovery starts at %s", files[i].file_name)
            break
    process_offset = _walk(cl, start, cl.config.checkCRCOnRecover, dispatch, needs_dispatch)
    _finish_recover(cl, process_offset)
    if max_phy_offset_of_cq > process_offset:
        log.warning("consume queues point past the commit log end %d: truncating", process_offset)
        truncate_cq(process_offset)
    return process_offset

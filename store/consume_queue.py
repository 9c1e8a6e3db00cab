"""ConsumeQueue: the per topic-queue index of 20-byte units (spec message-and-store-format.md §6).

Unit = ``int64 commitLogOffset ‖ int32 size ‖ int64 tagsCode``; the logical
offset of a message is its unit index. Files live under
``consumequeue/<topic>/<queueId>/``. :class:`ConsumeQueueStore` owns the table
of queues and is the only place where topic names from the wire become paths,
so it validates them first.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import struct
from collections.abc import Callable, Iterator

from common import speedups
from common.mapped_file import CreateGuard, DiskFullError, MappedFile
from common.mapped_file_queue import MappedFileQueue

__all__ = ["ConsumeQueue", "ConsumeQueueStore", "CQ_STORE_UNIT_SIZE", "is_valid_topic_name"]

log = logging.getLogger(__name__)

CQ_STORE_UNIT_SIZE = 20
CQ_RESERVE_STEP = CQ_STORE_UNIT_SIZE * 3276  # 65,520 bytes of units reserved at a time (whole units)
_UNIT = struct.Struct(">qiq")
# the compiled fast path of put_requests (the pure twin is no faster than the loop there)
_cq_put_units = speedups.cq_put_units if speedups.IS_COMPILED else None
_PREFILL_SIZE = 0x7FFFFFFF
_BLANK_UNIT = _UNIT.pack(0, _PREFILL_SIZE, 0)
_TOPIC_RE = re.compile(r"^[%|a-zA-Z0-9_-]+$")
MAX_TOPIC_LENGTH = 127


def is_valid_topic_name(topic: str) -> bool:
    """RocketMQ's topic rule (``^[%|a-zA-Z0-9_-]+$``, at most 127 chars): safe as a directory name."""
    return 0 < len(topic) <= MAX_TOPIC_LENGTH and _TOPIC_RE.match(topic) is not None


class ConsumeQueue:
    """The consume queue of one (topic, queueId).

    ``pickup_store_timestamp(offset, size)`` reads a record's store time from the
    CommitLog (used for lookups by time).
    """

    def __init__(self, topic: str, queue_id: int, root_dir: str, mapped_file_size: int, *,
                 guard: CreateGuard | None = None) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.store_path = os.path.join(root_dir, topic, str(queue_id))
        self.mapped_file_size = mapped_file_size
        # blocks reserved ahead of the units (a whole 5.7 MB file per queue up front would take disk
        # that many queues never use)
        self.queue = MappedFileQueue(self.store_path, mapped_file_size, guard=guard, reserve_step=CQ_RESERVE_STEP)
        self.max_physic_offset = -1
        self.min_logic_offset = 0
        self._units_per_file = mapped_file_size // CQ_STORE_UNIT_SIZE

    # -- load / recover -------------------------------------------------------

    def load(self) -> bool:
        return self.queue.load()

    def recover(self) -> None:
        """Keep units up to the first invalid one (offset < 0 or size <= 0), starting 3 files from the end."""
        files = self.queue.mapped_files
        if not files:
            return
        index = max(0, len(files) - 3)
        mf = files[index]
        process_offset = mf.file_from_offset
        pos = 0
        size = self.mapped_file_size
        scan = speedups.cq_scan  # pre-fill units (offset 0, size 0x7FFFFFFF) point nowhere
        while True:
            pos, max_phy = scan(mf.mm, 0, size)
            if max_phy >= 0:
                self.max_physic_offset = max_phy
            stop = pos + CQ_STORE_UNIT_SIZE <= size
            if stop or index + 1 >= len(files):
                break
            index += 1
            mf = files[index]
            process_offset = mf.file_from_offset
            pos = 0
        process_offset += pos
        self.queue.flushed_where = self.queue.committed_where = process_offset
        self.queue.truncate_dirty_files(process_offset)
        for f in self.queue.mapped_files:
            f.flushed_position = f.wrote_position

    def truncate_dirty_logic_files(self, phy_offset: int) -> None:
        """Drop units pointing at or beyond CommitLog offset ``phy_offset``."""
        self.max_physic_offset = -1
        while True:
            mf = self.queue.get_last_mapped_file()
            if mf is None:
                break
            mm = mf.mm
            keep = 0
            cut = False
            for pos in range(0, mf.wrote_position, CQ_STORE_UNIT_SIZE):
                offset, sz, _tags = _UNIT.unpack_from(mm, pos)
                if pos == 0 and offset >= phy_offset:
                    self.queue.delete_last_mapped_file()
                    cut = True
                    break
                if offset >= 0 and sz > 0:
                    if offset >= phy_offset:
                        break
                    keep = pos + CQ_STORE_UNIT_SIZE
                    if sz != _PREFILL_SIZE or offset != 0:
                        self.max_physic_offset = offset + sz
                else:
                    break
            if cut:
                continue
            mm[keep : mf.wrote_position] = bytes(mf.wrote_position - keep)
            mf.set_positions(keep)
            break
        if self.max_physic_offset < 0:
            # nothing kept in the last file: the queue still ends where an earlier file does (else a
            # re-dispatch would write every record again, unit 0 first, over the empty last file)
            self.max_physic_offset = self._last_unit_end()
        if self.queue.flushed_where > self.queue.get_max_offset():
            self.queue.flushed_where = self.queue.committed_where = self.queue.get_max_offset()

    def _last_unit_end(self) -> int:
        """End (offset + size) of the last valid, non-pre-fill unit of the queue; -1 when none."""
        for mf in reversed(self.queue.mapped_files):
            for pos in range(mf.wrote_position - CQ_STORE_UNIT_SIZE, -1, -CQ_STORE_UNIT_SIZE):
                offset, sz, _tags = _UNIT.unpack_from(mf.mm, pos)
                if offset >= 0 and sz > 0 and not (sz == _PREFILL_SIZE and offset == 0):
                    return offset + sz
        return -1

    def correct_min_offset(self, phy_min_offset: int) -> None:
        """Set the min logical offset to the first unit pointing at or after ``phy_min_offset``."""
        mf = self.queue.get_first_mapped_file()
        if mf is None:
            return
        mm = mf.mm
        for pos in range(0, mf.wrote_position, CQ_STORE_UNIT_SIZE):
            offset, sz, _tags = _UNIT.unpack_from(mm, pos)
            if offset >= phy_min_offset and not (offset == 0 and sz == _PREFILL_SIZE):  # skip pre-fill units
                self.min_logic_offset = mf.file_from_offset + pos
                return
        # every unit of the first file points below the CommitLog: the next unit to come is the min
        self.min_logic_offset = max(self.min_logic_offset, mf.file_from_offset + mf.wrote_position)

    # -- write --------------------------------------------------------------------

    def put_message_position_info(self, offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        """Write the unit for queue offset ``cq_offset``; True when written or already there."""
        if offset + size <= self.max_physic_offset:
            return True  # re-dispatch of a record already indexed
        expected = cq_offset * CQ_STORE_UNIT_SIZE
        files = self.queue.mapped_files
        if files:
            # the usual case: the unit goes right at the end of a last file with room
            mf = files[-1]
            pos = mf.wrote_position
            if pos < mf.reserved_to and mf.file_from_offset + pos == expected and (pos or not mf.first_create_in_queue):
                _UNIT.pack_into(mf.mm, pos, offset, size, tags_code)
                mf.wrote_position = mf.committed_position = pos + CQ_STORE_UNIT_SIZE
                self.max_physic_offset = offset + size
                return True
        mf = self.queue.get_last_mapped_file_or_create(expected)
        if mf is None:
            if self.queue.create_refused_disk_full:
                # the unit must not be skipped (its message would vanish from the queue): the
                # dispatch stops here and is retried once space returns
                raise DiskFullError(self.store_path, self.mapped_file_size, "consume queue file")
            log.error("cannot create consume queue file for %s-%d", self.topic, self.queue_id)
            return False
        if mf.first_create_in_queue and cq_offset != 0 and mf.wrote_position == 0:
            self.min_logic_offset = expected
            self.queue.flushed_where = self.queue.committed_where = expected
            self._fill_pre_blank(mf, expected)
        if cq_offset != 0:
            current = mf.file_from_offset + mf.wrote_position
            if expected < current:
                log.warning("consume queue %s-%d: unit %d built twice", self.topic, self.queue_id, cq_offset)
                return True
            if expected != current:
                log.warning("consume queue %s-%d: order maybe wrong, expected %d current %d",
                            self.topic, self.queue_id, expected, current)
        pos = mf.wrote_position
        if pos >= mf.reserved_to:
            self._reserve(mf, pos + CQ_STORE_UNIT_SIZE)
        _UNIT.pack_into(mf.mm, pos, offset, size, tags_code)
        mf.wrote_position = mf.committed_position = pos + CQ_STORE_UNIT_SIZE
        self.max_physic_offset = offset + size
        return True

    def put_requests(self, requests) -> None:
        """:meth:`put_message_position_info` for each DispatchRequest of this queue, in order.

        Units that continue the last file where it ends are written without the
        per-unit checks; anything else takes the general path.
        """
        if _cq_put_units is not None:
            self._put_requests_compiled(requests)
            return
        files = self.queue.mapped_files
        mf = files[-1] if files else None
        pack = _UNIT.pack_into
        for r in requests:
            offset = r.commit_log_offset
            size = r.msg_size
            if offset + size <= self.max_physic_offset:
                continue  # re-dispatch of a record already indexed
            if mf is not None:
                pos = mf.wrote_position
                if (pos < mf.reserved_to and mf.file_from_offset + pos == r.consume_queue_offset * CQ_STORE_UNIT_SIZE
                        and (pos or not mf.first_create_in_queue)):
                    pack(mf.mm, pos, offset, size, r.tags_code)
                    mf.wrote_position = mf.committed_position = pos + CQ_STORE_UNIT_SIZE
                    self.max_physic_offset = offset + size
                    continue
            self.put_message_position_info(offset, size, r.tags_code, r.consume_queue_offset)
            files = self.queue.mapped_files
            mf = files[-1] if files else None

    def _put_requests_compiled(self, requests) -> None:
        """put_requests with the fast path in one compiled call per run (common.speedups.cq_put_units)."""
        i = 0
        n = len(requests)
        while i < n:
            files = self.queue.mapped_files
            mf = files[-1] if files else None
            if mf is not None:
                pos = mf.wrote_position
                i, new_pos, self.max_physic_offset = _cq_put_units(
                    mf.mm, pos, mf.reserved_to, mf.file_from_offset, not mf.first_create_in_queue,
                    self.max_physic_offset, requests, i)
                if new_pos != pos:
                    mf.wrote_position = mf.committed_position = new_pos
                if i >= n:
                    return
            r = requests[i]
            self.put_message_position_info(r.commit_log_offset, r.msg_size, r.tags_code, r.consume_queue_offset)
            i += 1

    def _reserve(self, mf: MappedFile, end: int) -> None:
        """Reserve the file's blocks up to ``end``; no room: DiskFullError (nothing written, the
        dispatch waits) and the store is marked disk-full."""
        try:
            mf.reserve(end)
        except DiskFullError as e:
            if self.queue.guard is not None:
                self.queue.guard.create_failed(mf.path, e)
            raise

    def _fill_pre_blank(self, mf: MappedFile, until_where: int) -> None:
        n = (until_where % self.mapped_file_size) // CQ_STORE_UNIT_SIZE
        if n:
            self._reserve(mf, n * CQ_STORE_UNIT_SIZE)
            mf.mm[0 : n * CQ_STORE_UNIT_SIZE] = _BLANK_UNIT * n
        mf.set_positions(n * CQ_STORE_UNIT_SIZE)

    # -- read ------------------------------------------------------------------------

    def get_min_offset_in_queue(self) -> int:
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    def get_max_offset_in_queue(self) -> int:
        return self.queue.get_max_offset() // CQ_STORE_UNIT_SIZE

    def get_index_buffer(self, start_index: int) -> tuple[memoryview, int] | None:
        """Units from ``start_index`` to the end of its file, plus the byte offset of the first one."""
        offset = start_index * CQ_STORE_UNIT_SIZE
        if offset < self.min_logic_offset:
            return None
        mf = self.queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        mv = mf.select(offset % self.mapped_file_size)
        return None if mv is None else (mv, offset)

    def get_unit(self, index: int) -> tuple[int, int, int] | None:
        """(commitLogOffset, size, tagsCode) of unit ``index``."""
        offset = index * CQ_STORE_UNIT_SIZE
        mf = self.queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        pos = offset % self.mapped_file_size
        if pos + CQ_STORE_UNIT_SIZE > mf.wrote_position:
            return None
        return _UNIT.unpack_from(mf.mm, pos)

    def roll_next_file(self, index: int) -> int:
        return index + self._units_per_file - index % self._units_per_file

    def get_offset_in_queue_by_time(self, timestamp: int, min_physic_offset: int,
                                    pickup_store_timestamp: Callable[[int, int], int]) -> int:
        """Queue offset of the message stored at ``timestamp`` (or the nearer neighbour); 0 when none."""
        low = self.get_min_offset_in_queue()
        high = self.get_max_offset_in_queue() - 1
        left = right = -1
        left_v = right_v = -1
        target = -1
        while high >= low:
            mid = (low + high) // 2
            unit = self.get_unit(mid)
            if unit is None:
                return 0
            phy, size, _tags = unit
            if phy < min_physic_offset:
                low = mid + 1
                left = mid
                continue
            t = pickup_store_timestamp(phy, size)
            if t < 0:
                return 0
            if t == timestamp:
                target = mid
                break
            if t > timestamp:
                high = mid - 1
                right, right_v = mid, t
            else:
                low = mid + 1
                left, left_v = mid, t
        if target != -1:
            return target
        if left_v == -1:
            return max(right, 0) if right != -1 else max(left, 0)
        if right_v == -1:
            return left
        return right if (timestamp - left_v) > (right_v - timestamp) else left

    def get_last_unit_phy_end(self) -> int:
        """CommitLog end of the last unit (``max_physic_offset``)."""
        return self.max_physic_offset

    # -- maintenance -----------------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> bool:
        """Flush dirty units; ``least_pages`` 0 flushes everything (every file)."""
        if least_pages == 0:
            before = self.queue.flushed_where
            return self.queue.flush_all() == before
        return self.queue.flush(least_pages)

    def delete_expired_file(self, commit_log_min_offset: int) -> int:
        n = self.queue.delete_expired_file_by_offset(commit_log_min_offset, CQ_STORE_UNIT_SIZE)
        self.correct_min_offset(commit_log_min_offset)
        return n

    def destroy(self) -> None:
        self.max_physic_offset = -1
        self.min_logic_offset = 0
        self.queue.destroy()
        try:
            os.rmdir(os.path.dirname(self.store_path))
        except OSError:
            pass

    def shutdown(self) -> None:
        self.queue.shutdown()


class ConsumeQueueStore:
    """The table ``topic → queueId → ConsumeQueue`` under ``<root>/consumequeue``."""

    def __init__(self, root_dir: str, mapped_file_size: int, *, guard: CreateGuard | None = None) -> None:
        self.root_dir = root_dir
        self.mapped_file_size = mapped_file_size
        self.guard = guard
        self.table: dict[str, dict[int, ConsumeQueue]] = {}

    def __iter__(self) -> Iterator[ConsumeQueue]:
        for queues in list(self.table.values()):
            yield from list(queues.values())

    def load(self) -> bool:
        """Open every ``<topic>/<queueId>`` directory; False when a file is bad."""
        try:
            topics = sorted(os.listdir(self.root_dir))
        except FileNotFoundError:
            return True
        for topic in topics:
            tdir = os.path.join(self.root_dir, topic)
            if not os.path.isdir(tdir) or not is_valid_topic_name(topic):
                continue
            for qname in sorted(os.listdir(tdir)):
                if not qname.isdigit():
                    continue
                cq = ConsumeQueue(topic, int(qname), self.root_dir, self.mapped_file_size, guard=self.guard)
                if not cq.load():
                    return False
                self.table.setdefault(topic, {})[int(qname)] = cq
        return True

    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        q = self.table.get(topic)
        return None if q is None else q.get(queue_id)

    def find_or_create(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        """The queue, created (lazily on disk) when missing; None for an invalid topic or queue id."""
        q = self.table.get(topic)
        if q is not None:
            cq = q.get(queue_id)
            if cq is not None:
                return cq
        if queue_id < 0 or not is_valid_topic_name(topic):
            return None
        cq = ConsumeQueue(topic, queue_id, self.root_dir, self.mapped_file_size, guard=self.guard)
        self.table.setdefault(topic, {})[queue_id] = cq
        return cq

    def put_message_position_info(self, req) -> None:
        """Dispatcher target: write the unit of a DispatchRequest."""
        cq = self.find_or_create(req.topic, req.queue_id)
        if cq is None:
            log.error("dispatch: invalid topic/queue %r/%d skipped", req.topic, req.queue_id)
            return
        cq.put_message_position_info(req.commit_log_offset, req.msg_size, req.tags_code,
                                     req.consume_queue_offset)

    def recover(self) -> int:
        """Recover every queue; return the max CommitLog offset any unit points to (end of record)."""
        max_phy = -1
        for cq in self:
            cq.recover()
            max_phy = max(max_phy, cq.max_physic_offset)
        return max_phy

    def truncate_dirty(self, phy_offset: int) -> None:
        for cq in self:
            cq.truncate_dirty_logic_files(phy_offset)

    def destroy_all(self) -> None:
        for cq in self:
            cq.destroy()
        self.table.clear()
        shutil.rmtree(self.root_dir, ignore_errors=True)

    def correct_min_offsets(self, phy_min_offset: int) -> None:
        for cq in self:
            cq.correct_min_offset(phy_min_offset)

    def max_offsets(self) -> dict[str, int]:
        """``topic-queueId → max offset`` (rebuilds the CommitLog's queue offset table)."""
        return {f"{cq.topic}-{cq.queue_id}": cq.get_max_offset_in_queue() for cq in self}

    def flush(self, least_pages: int = 0) -> None:
        for cq in self:
            cq.flush(least_pages)

    def delete_topic(self, topic: str) -> bool:
        queues = self.table.pop(topic, None)
        if queues is None:
            if is_valid_topic_name(topic):
                shutil.rmtree(os.path.join(self.root_dir, topic), ignore_errors=True)
            return False
        for cq in queues.values():
            cq.destroy()
        shutil.rmtree(os.path.join(self.root_dir, topic), ignore_errors=True)
        return True

    def shutdown(self) -> None:
        for cq in self:
            cq.shutdown()

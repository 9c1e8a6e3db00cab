"""GetMessageService: a queue's messages for a pull (DefaultMessageStore.getMessage's read path).

RocketMQ's status and next-offset rules: the ConsumeQueue units from the asked offset are read,
filtered by tag code and, where the filter needs it, by the CommitLog record, until the batch is
full by count or by bytes (with the in-memory and on-disk transfer limits), and the result says
whether the consumer should pull from a slave next (the data is beyond the memory share).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from typing import Protocol

from store.config import BrokerRoleView, ConfiguredRole, MessageStoreConfig
from store.consume_queue import CQ_STORE_UNIT_SIZE, ConsumeQueueStore, is_valid_topic_name
from store.message_store import GetMessageResult, GetMessageStatus, MessageFilter

__all__ = ["GetMessageService", "CommitLogReader"]

_MIN_FILTER_SCAN = 16000
_UNIT = struct.Struct(">qiq")


class CommitLogReader(Protocol):
    """What the read path needs of a CommitLog (the classic one or the DLedger one)."""

    def get_max_offset(self) -> int: ...

    def get_message(self, offset: int, size: int) -> memoryview | None: ...

    def roll_next_file(self, offset: int) -> int: ...


def _total_physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 << 30


class GetMessageService:
    """Reads for pulls; ``closed()`` says the store is shut down (then nothing is read)."""

    def __init__(self, config: MessageStoreConfig, commit_log: CommitLogReader, consume_queues: ConsumeQueueStore,
                 closed: Callable[[], bool], role: BrokerRoleView | None = None) -> None:
        self.config = config
        self.role = role if role is not None else ConfiguredRole(config.brokerRole)
        self.commit_log = commit_log
        self.consume_queues = consume_queues
        self._closed = closed
        #: data further than this behind the CommitLog's end is "in disk" (accessMessageInMemoryMaxRatio)
        self._memory_limit = _total_physical_memory() * (config.accessMessageInMemoryMaxRatio / 100.0)

    def _next_offset_correction(self, old: int, new: int) -> int:
        if not self.role.is_slave or self.config.offsetCheckInSlave:
            return new
        return old

    def _is_batch_full(self, size: int, max_msg_nums: int, buffer_total: int, msg_total: int,
                       in_disk: bool) -> bool:
        if buffer_total == 0 or msg_total == 0:
            return False
        if max_msg_nums <= msg_total:
            return True
        c = self.config
        if in_disk:
            return (buffer_total + size > c.maxTransferBytesOnMessageInDisk
                    or msg_total > c.maxTransferCountOnMessageInDisk - 1)
        return (buffer_total + size > c.maxTransferBytesOnMessageInMemory
                or msg_total > c.maxTransferCountOnMessageInMemory - 1)

    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    message_filter: MessageFilter | None = None) -> GetMessageResult:
        """Read up to ``max_msg_nums`` records of a queue from ``offset`` (RocketMQ's status and next-offset rules)."""
        result = GetMessageResult(next_begin_offset=offset)
        if self._closed():
            result.status = GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
            return result
        if queue_id < 0 or not is_valid_topic_name(topic):
            result.status = GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
            result.next_begin_offset = self._next_offset_correction(offset, 0)
            return result
        max_offset_py = self.commit_log.get_max_offset()
        cq = self.consume_queues.find(topic, queue_id)
        if cq is None:
            # RocketMQ creates the queue on lookup: an empty queue
            result.status = GetMessageStatus.NO_MESSAGE_IN_QUEUE
            result.next_begin_offset = self._next_offset_correction(offset, 0)
            return result
        min_offset = cq.get_min_offset_in_queue()
        max_offset = cq.get_max_offset_in_queue()
        result.min_offset, result.max_offset = min_offset, max_offset
        if max_offset == 0:
            result.status = GetMessageStatus.NO_MESSAGE_IN_QUEUE
            result.next_begin_offset = self._next_offset_correction(offset, 0)
        elif offset < min_offset:
            result.status = GetMessageStatus.OFFSET_TOO_SMALL
            result.next_begin_offset = self._next_offset_correction(offset, min_offset)
        elif offset == max_offset:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_ONE
            result.next_begin_offset = self._next_offset_correction(offset, offset)
        elif offset > max_offset:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_BADLY
            result.next_begin_offset = self._next_offset_correction(offset, max_offset)
        else:
            got = cq.get_index_buffer(offset)
            if got is None:
                result.status = GetMessageStatus.OFFSET_FOUND_NULL
                result.next_begin_offset = self._next_offset_correction(offset, cq.roll_next_file(offset))
            else:
                self._read_units(result, got[0], offset, max_msg_nums, message_filter, max_offset_py)
        return result

    def _read_units(self, result: GetMessageResult, units: memoryview, offset: int, max_msg_nums: int,
                    message_filter: MessageFilter | None, max_offset_py: int) -> None:
        status = GetMessageStatus.NO_MATCHED_MESSAGE
        next_phy_file_start = None
        max_phy_pulling = 0
        max_filter = max(_MIN_FILTER_SCAN, max_msg_nums * CQ_STORE_UNIT_SIZE)
        n = len(units)
        i = 0
        cl = self.commit_log
        unpack = _UNIT.unpack_from
        memory = self._memory_limit
        while i < n and i < max_filter:
            offset_py, size_py, tags_code = unpack(units, i)
            max_phy_pulling = offset_py
            if next_phy_file_start is not None and offset_py < next_phy_file_start:
                i += CQ_STORE_UNIT_SIZE
                continue
            in_disk = (max_offset_py - offset_py) > memory
            if self._is_batch_full(size_py, max_msg_nums, result.buffer_total_size, result.message_count, in_disk):
                break
            if message_filter is not None and not message_filter.is_matched_by_consume_queue(tags_code, None):
                if result.buffer_total_size == 0:
                    status = GetMessageStatus.NO_MATCHED_MESSAGE
                i += CQ_STORE_UNIT_SIZE
                continue
            buf = cl.get_message(offset_py, size_py)
            if buf is None:
                if result.buffer_total_size == 0:
                    status = GetMessageStatus.MESSAGE_WAS_REMOVING
                next_phy_file_start = cl.roll_next_file(offset_py)
                i += CQ_STORE_UNIT_SIZE
                continue
            if message_filter is not None and not message_filter.is_matched_by_commit_log(buf, None):
                if result.buffer_total_size == 0:
                    status = GetMessageStatus.NO_MATCHED_MESSAGE
                buf.release()
                i += CQ_STORE_UNIT_SIZE
                continue
            result.add_message(buf, offset + i // CQ_STORE_UNIT_SIZE)
            status = GetMessageStatus.FOUND
            next_phy_file_start = None
            i += CQ_STORE_UNIT_SIZE
        units.release()
        result.status = status
        result.next_begin_offset = offset + i // CQ_STORE_UNIT_SIZE
        result.suggest_pulling_from_slave = (max_offset_py - max_phy_pulling) > memory

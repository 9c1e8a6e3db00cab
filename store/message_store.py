"""Result types and narrow interfaces of the message store.

``DefaultMessageStore`` (store/default_message_store.py) returns these; the
broker maps the statuses to response codes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

__all__ = [
    "PutMessageStatus",
    "AppendMessageStatus",
    "AppendMessageResult",
    "PutMessageResult",
    "GetMessageStatus",
    "GetMessageResult",
    "QueryMessageResult",
    "MessageFilter",
]


class PutMessageStatus(Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class AppendMessageStatus(Enum):
    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class AppendMessageResult:
    """Where a message (or a batch) was written.

    ``msg_id`` is the offset msgId (comma-joined for a batch), built on first
    access from ``msg_id_prefix`` (store host hex) when not given; ``logics_offset``
    the first queue offset; ``wrote_offset`` the CommitLog offset of the first record.
    """

    __slots__ = ("status", "wrote_offset", "wrote_bytes", "_msg_id", "store_timestamp", "logics_offset",
                 "msg_num", "page_cache_rt", "_msg_id_prefix")

    def __init__(self, status: AppendMessageStatus = AppendMessageStatus.PUT_OK, wrote_offset: int = 0,
                 wrote_bytes: int = 0, msg_id: str = "", store_timestamp: int = 0, logics_offset: int = 0,
                 msg_num: int = 1, page_cache_rt: int = 0, msg_id_prefix: str | None = None) -> None:
        self.status = status
        self.wrote_offset = wrote_offset
        self.wrote_bytes = wrote_bytes
        self._msg_id = msg_id
        self.store_timestamp = store_timestamp
        self.logics_offset = logics_offset
        self.msg_num = msg_num
        self.page_cache_rt = page_cache_rt
        self._msg_id_prefix = msg_id_prefix

    @property
    def msg_id(self) -> str:
        if not self._msg_id and self._msg_id_prefix is not None:
            self._msg_id = f"{self._msg_id_prefix}{self.wrote_offset:016X}"
        return self._msg_id

    @msg_id.setter
    def msg_id(self, value: str) -> None:
        self._msg_id = value

    @property
    def is_ok(self) -> bool:
        return self.status is AppendMessageStatus.PUT_OK

    def __repr__(self) -> str:
        return (f"AppendMessageResult({self.status.name}, wrote_offset={self.wrote_offset}, "
                f"wrote_bytes={self.wrote_bytes}, msg_id={self.msg_id!r}, logics_offset={self.logics_offset}, "
                f"msg_num={self.msg_num})")


@dataclass(slots=True)
class PutMessageResult:
    status: PutMessageStatus
    append_result: AppendMessageResult | None = None
    remark: str = ""

    def is_ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK and self.append_result is not None


class GetMessageStatus(Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(slots=True)
class GetMessageResult:
    """Records found by a pull: ``buffers[i]`` is one whole record at ``queue_offsets[i]``."""

    status: GetMessageStatus = GetMessageStatus.NO_MESSAGE_IN_QUEUE
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    buffers: list[memoryview] = field(default_factory=list)
    queue_offsets: list[int] = field(default_factory=list)
    buffer_total_size: int = 0
    message_count: int = 0
    suggest_pulling_from_slave: bool = False
    msg_count_4_commercial: int = 0

    def add_message(self, buf: memoryview, queue_offset: int) -> None:
        self.buffers.append(buf)
        self.queue_offsets.append(queue_offset)
        self.buffer_total_size += len(buf)
        self.message_count += 1

    def body(self) -> bytes:
        """All records concatenated (the PULL_MESSAGE response body)."""
        return b"".join(self.buffers)

    def release(self) -> None:
        for b in self.buffers:
            b.release()
        self.buffers.clear()


@dataclass(slots=True)
class QueryMessageResult:
    """Records found by key (QUERY_MESSAGE), each a whole CommitLog record."""

    buffers: list[memoryview] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0
    buffer_total_size: int = 0

    def add_message(self, buf: memoryview) -> None:
        self.buffers.append(buf)
        self.buffer_total_size += len(buf)

    def body(self) -> bytes:
        return b"".join(self.buffers)


class MessageFilter(Protocol):
    """Decides which records a pull returns (tag hash first, then the whole record)."""

    def is_matched_by_consume_queue(self, tags_code: int | None, cq_ext_unit=None) -> bool: ...

    def is_matched_by_commit_log(self, msg_buffer: memoryview | None, properties: dict[str, str] | None) -> bool: ...

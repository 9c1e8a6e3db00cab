"""Result types and interfaces of the message store.

``DefaultMessageStore`` (store/default_message_store.py) returns these; the
broker maps the statuses to response codes. :class:`MessageStore` is everything
the broker may call on a store; :class:`CommitLogBackend` everything the store
calls on its log (``CommitLog``, or ``DLedgerCommitLog`` that wraps one).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from common.mapped_file_queue import MappedFileQueue
    from common.message import MessageExt, MessageExtBatch, MessageExtBrokerInner
    from store.clean_commit_log_service import CleanCommitLogService
    from store.config import MessageStoreConfig
    from store.consume_queue import ConsumeQueueStore
    from store.dispatch import CommitLogDispatcher, DispatchRequest
    from store.index_service import IndexService
    from store.reput_message_service import ReputMessageService

__all__ = [
    "PutMessageStatus",
    "AppendMessageStatus",
    "AppendMessageResult",
    "PutMessageResult",
    "GetMessageStatus",
    "GetMessageResult",
    "QueryMessageResult",
    "CqExtUnit",
    "MessageFilter",
    "CommitLogBackend",
    "MessageStore",
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


class CqExtUnit(Protocol):
    """A consume-queue ext unit (RocketMQ's CqExtUnit) as a filter reads it: the message's store
    time and the bloom bitmap computed for it at dispatch."""

    msg_store_time: int
    filter_bit_map: bytes | None


class MessageFilter(Protocol):
    """Decides which records a pull returns (tag hash first, then the whole record)."""

    def is_matched_by_consume_queue(self, tags_code: int | None, cq_ext_unit: CqExtUnit | None = None) -> bool: ...

    def is_matched_by_commit_log(self, msg_buffer: memoryview | None, properties: dict[str, str] | None) -> bool: ...


class CommitLogBackend(Protocol):
    """What the store, its reput, flush and clean services call on the CommitLog.

    Offsets are commit-log offsets; ``get_max_offset`` is the end readers may see (a
    DLedger log's committed end). ``mapped_file_queue`` holds the plain CommitLog
    files (for a DLedger log: those written before it was enabled).
    """

    config: MessageStoreConfig
    topic_queue_table: dict[str, int]
    #: DispatchRequests the appends left for the reput (None: parse the records back)
    prepared: deque[DispatchRequest] | None
    #: False: the log deletes its own expired files (the store's clean service does not run)
    deletes_expired_files: bool

    @property
    def mapped_file_queue(self) -> MappedFileQueue: ...
    @property
    def file_size(self) -> int: ...
    @property
    def flushed_where(self) -> int: ...
    @property
    def store_timestamp(self) -> int: ...

    # life cycle
    def load(self) -> bool: ...
    def start(self) -> None: ...
    async def stop(self) -> None: ...
    def shutdown(self) -> None: ...
    def destroy(self) -> None: ...
    def recover_normally(self, max_phy_offset_of_cq: int, truncate_cq: Callable[[int], None],
                         destroy_cq: Callable[[], None]) -> int: ...
    def recover_abnormally(self, max_phy_offset_of_cq: int, min_timestamp: int,
                           dispatch: Callable[[DispatchRequest], None], truncate_cq: Callable[[int], None],
                           destroy_cq: Callable[[], None],
                           needs_dispatch: Callable[[str, int, int, int, int], bool] | None = None) -> int: ...
    def enable_prepared_dispatch(self, capacity: int = ...) -> None: ...

    # appends
    def put_message(self, msg: MessageExtBrokerInner, now: int = 0) -> PutMessageResult: ...
    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult: ...
    def put_message_list(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]: ...
    async def put_message_async(self, msg: MessageExtBrokerInner) -> PutMessageResult: ...
    async def put_messages_async(self, batch: MessageExtBatch) -> PutMessageResult: ...
    async def put_message_list_async(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]: ...
    def append_data(self, start_offset: int, data: bytes | memoryview) -> bool: ...
    def append_outcome(self, offset: int) -> bool | None: ...

    # reads and offsets
    def get_min_offset(self) -> int: ...
    def get_max_offset(self) -> int: ...
    def roll_next_file(self, offset: int) -> int: ...
    def get_message(self, offset: int, size: int) -> memoryview | None: ...
    def get_data(self, offset: int, return_first_on_not_found: bool = False) -> memoryview | None: ...
    def pickup_store_timestamp(self, offset: int, size: int) -> int: ...
    def check_message_and_return_size(self, mv, pos: int, base_offset: int, check_crc: bool = False,
                                      strict: bool = False) -> DispatchRequest: ...

    # flush and delete
    def flush(self, least_pages: int = 0) -> bool: ...
    def flush_until(self, target: int) -> int: ...

    def runtime_extra(self) -> dict[str, str]: ...


class MessageStore(Protocol):
    """Everything the broker may call on its message store (``DefaultMessageStore``)."""

    config: MessageStoreConfig
    store_host: tuple[str, int]
    #: False while puts are refused (NOT_WRITEABLE switch, disk full)
    writeable: bool
    commit_log: CommitLogBackend
    consume_queues: ConsumeQueueStore
    index_service: IndexService | None
    #: the reput's dispatchers; the broker adds its own (filter bit map, schedule waker, stats) before start
    dispatchers: list[CommitLogDispatcher]
    reput: ReputMessageService
    clean_commit_log_service: CleanCommitLogService
    #: SYNC_MASTER: awaited with the end offset of a put (HA)
    replica_waiter: Callable[[int], Awaitable[PutMessageStatus]] | None

    # life cycle
    def load(self) -> bool: ...
    def start(self) -> None: ...
    async def shutdown(self) -> None: ...

    # puts (the async ones also wait for the flush / replicas / quorum the config asks for)
    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult: ...
    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult: ...
    def put_message_list(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]: ...
    async def put_message_async(self, msg: MessageExtBrokerInner) -> PutMessageResult: ...
    async def put_messages_async(self, batch: MessageExtBatch) -> PutMessageResult: ...
    async def put_message_list_async(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]: ...
    # put_message_list_async with a callback where only the group commit waits (False: use the coroutine)
    def put_message_list_then(self, msgs: list[MessageExtBrokerInner],
                              done: Callable[[list[PutMessageResult]], None]) -> bool: ...
    def append_outcome(self, commit_log_offset: int) -> bool | None: ...
    def is_os_page_cache_busy(self) -> bool: ...

    # reads
    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    message_filter: MessageFilter | None = None) -> GetMessageResult: ...
    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> memoryview | None: ...
    def look_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> MessageExt | None: ...
    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult: ...
    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, consume_offset: int) -> bool: ...

    # offsets and times
    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int: ...
    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int: ...
    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int: ...
    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int: ...
    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int: ...
    def get_earliest_message_time(self, topic: str, queue_id: int) -> int: ...
    def get_earliest_message_time_all(self) -> int: ...
    def get_max_phy_offset(self) -> int: ...
    def get_min_phy_offset(self) -> int: ...

    # replication (HA)
    def get_commit_log_data(self, offset: int) -> memoryview | None: ...
    def append_to_commit_log(self, start_offset: int, data: bytes) -> bool: ...

    # topics, cleanup, state
    def delete_topics(self, topics: set[str]) -> int: ...
    def clean_unused_topic(self, topics: set[str]) -> int: ...
    def delete_expired_consume_queue_files(self) -> int: ...
    def execute_delete_files_manually(self) -> None: ...
    def set_writeable(self, writeable: bool) -> None: ...
    def now_dispatched(self) -> bool: ...
    def dispatch_behind_bytes(self) -> int: ...
    def runtime_info(self) -> dict[str, str]: ...

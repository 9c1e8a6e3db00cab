"""DispatchRequest and the CommitLog dispatchers (RocketMQ ``CommitLogDispatcher``).

The reput service parses each new CommitLog record into a :class:`DispatchRequest`
and hands it to every dispatcher in order: build the consume queue, then build
the index. Each dispatcher is a small object with one ``dispatch`` method.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from common.message import MessageSysFlag

__all__ = [
    "DispatchRequest",
    "CommitLogDispatcher",
    "CommitLogDispatcherBuildConsumeQueue",
    "CommitLogDispatcherBuildIndex",
]


@dataclass(slots=True)
class DispatchRequest:
    """What a dispatcher needs of one CommitLog record.

    ``msg_size`` 0 with ``success`` True is the BLANK end-of-file record;
    ``success`` False marks bytes that are not a valid record.
    """

    topic: str = ""
    queue_id: int = 0
    commit_log_offset: int = 0
    msg_size: int = 0
    tags_code: int = 0
    store_timestamp: int = 0
    consume_queue_offset: int = 0
    keys: str = ""
    uniq_key: str | None = None
    sys_flag: int = 0
    prepared_transaction_offset: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    success: bool = True
    bit_map: bytes | None = None


class CommitLogDispatcher(Protocol):
    """Receives every dispatched record, in CommitLog order."""

    def dispatch(self, request: DispatchRequest) -> None: ...


_TX_MASK = MessageSysFlag.TRANSACTION_MASK
_TX_NOT = MessageSysFlag.TRANSACTION_NOT_TYPE
_TX_COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE


class CommitLogDispatcherBuildConsumeQueue:
    """Appends a consume-queue unit for non-transactional and COMMIT records.

    ``put_position`` is ``ConsumeQueueStore.put_message_position_info``.
    """

    __slots__ = ("_put",)

    def __init__(self, put_position: Callable[[DispatchRequest], None]) -> None:
        self._put = put_position

    def dispatch(self, request: DispatchRequest) -> None:
        tx = request.sys_flag & _TX_MASK
        if tx == _TX_NOT or tx == _TX_COMMIT:
            self._put(request)


class CommitLogDispatcherBuildIndex:
    """Feeds the index service (``build_index``) when ``messageIndexEnable``."""

    __slots__ = ("_index", "_enabled")

    def __init__(self, index_service, enabled: Callable[[], bool]) -> None:
        self._index = index_service
        self._enabled = enabled

    def dispatch(self, request: DispatchRequest) -> None:
        if self._enabled():
            self._index.build_index(request)

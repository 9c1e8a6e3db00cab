"""DispatchRequest and the CommitLog dispatchers (RocketMQ ``CommitLogDispatcher``).

The reput service parses each new CommitLog record into a :class:`DispatchRequest`
and hands it to every dispatcher in order: build the consume queue, then build
the index. Each dispatcher is a small object with one ``dispatch`` method.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

from common.message import MessageSysFlag, string_to_properties
from common.speedups import queue_groups as _queue_groups

__all__ = [
    "DispatchRequest",
    "LazyProperties",
    "CommitLogDispatcher",
    "DispatcherBase",
    "IndexBuilder",
    "CommitLogDispatcherBuildConsumeQueue",
    "CommitLogDispatcherBuildIndex",
]

log = logging.getLogger(__name__)


class DispatchRequest:
    """What a dispatcher needs of one CommitLog record.

    ``msg_size`` 0 with ``success`` True is the BLANK end-of-file record;
    ``success`` False marks bytes that are not a valid record. ``properties`` is
    parsed from ``properties_string`` on first access: the consume-queue and index
    dispatchers only need ``keys``/``uniq_key``/``tags_code``, extracted directly.
    """

    __slots__ = ("topic", "queue_id", "commit_log_offset", "msg_size", "tags_code", "store_timestamp",
                 "consume_queue_offset", "keys", "uniq_key", "sys_flag", "prepared_transaction_offset",
                 "_properties", "success", "bit_map", "properties_string")

    def __init__(self, topic: str = "", queue_id: int = 0, commit_log_offset: int = 0, msg_size: int = 0,
                 tags_code: int = 0, store_timestamp: int = 0, consume_queue_offset: int = 0, keys: str = "",
                 uniq_key: str | None = None, sys_flag: int = 0, prepared_transaction_offset: int = 0,
                 properties: dict[str, str] | None = None, success: bool = True, bit_map: bytes | None = None,
                 properties_string: str = "") -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.commit_log_offset = commit_log_offset
        self.msg_size = msg_size
        self.tags_code = tags_code
        self.store_timestamp = store_timestamp
        self.consume_queue_offset = consume_queue_offset
        self.keys = keys
        self.uniq_key = uniq_key
        self.sys_flag = sys_flag
        self.prepared_transaction_offset = prepared_transaction_offset
        self._properties = properties if properties is not None or properties_string else {}
        self.success = success
        self.bit_map = bit_map
        self.properties_string = properties_string

    @property
    def properties(self) -> dict[str, str]:
        """The record's properties (parsed lazily from ``properties_string``)."""
        p = self._properties
        if p is None:
            p = self._properties = string_to_properties(self.properties_string)
        return p

    @properties.setter
    def properties(self, value: dict[str, str]) -> None:
        self._properties = value

    def properties_mapping(self) -> Mapping[str, str]:
        """The properties as a read-only mapping that parses them only when first read.

        For callers that usually do not look (the arriving listener: only held pulls with a
        SQL92 filter read them), so a dispatched record costs no property parsing.
        """
        p = self._properties
        if p is not None:
            return p
        # one per dispatched record: made without running LazyProperties.__init__ (a Python frame)
        view = _new_view(LazyProperties)
        view._request = self
        return view

    def __repr__(self) -> str:
        return (f"DispatchRequest(topic={self.topic!r}, queue_id={self.queue_id}, "
                f"commit_log_offset={self.commit_log_offset}, msg_size={self.msg_size}, "
                f"consume_queue_offset={self.consume_queue_offset}, success={self.success})")


class LazyProperties(Mapping):
    """Read-only view of a DispatchRequest's properties, parsed on first access."""

    __slots__ = ("_request",)

    def __init__(self, request: DispatchRequest) -> None:
        self._request = request

    def __getitem__(self, key: str) -> str:
        return self._request.properties[key]

    def get(self, key: str, default=None):
        return self._request.properties.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._request.properties

    def __iter__(self) -> Iterator[str]:
        return iter(self._request.properties)

    def __len__(self) -> int:
        return len(self._request.properties)

    def __repr__(self) -> str:
        return f"LazyProperties({self._request.properties!r})"


_new_view = object.__new__


class CommitLogDispatcher(Protocol):
    """Receives every dispatched record, in CommitLog order.

    ``dispatch_many(requests)`` is what the reput calls for a run of consecutive records (same
    effect as dispatching each in order); ``end_batch()`` comes after each pass over the records
    readable at that moment. :class:`DispatcherBase` gives both for a dispatcher that needs
    neither.
    """

    def dispatch(self, request: DispatchRequest) -> None: ...

    def dispatch_many(self, requests: list[DispatchRequest]) -> None: ...

    def end_batch(self) -> None: ...


class DispatcherBase:
    """A :class:`CommitLogDispatcher` from its ``dispatch``: each request of a run in turn, nothing
    at the end of a pass."""

    __slots__ = ()

    def dispatch(self, request: DispatchRequest) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def dispatch_many(self, requests: list[DispatchRequest]) -> None:
        dispatch = self.dispatch
        for r in requests:
            dispatch(r)

    def end_batch(self) -> None:
        pass


class IndexBuilder(Protocol):
    """What :class:`CommitLogDispatcherBuildIndex` uses of the index service."""

    def build_index(self, request: DispatchRequest) -> None: ...

    def build_index_many(self, requests: list[DispatchRequest]) -> None: ...

    def sync_header(self) -> None: ...


_TX_MASK = MessageSysFlag.TRANSACTION_MASK
_TX_NOT = MessageSysFlag.TRANSACTION_NOT_TYPE
_TX_COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE


class CommitLogDispatcherBuildConsumeQueue(DispatcherBase):
    """Appends a consume-queue unit for non-transactional and COMMIT records.

    ``put_position`` is ``ConsumeQueueStore.put_message_position_info``; ``find_queue``
    (``ConsumeQueueStore.find_or_create``), when given, lets :meth:`dispatch_many`
    write the units of consecutive records of one queue in one call.
    """

    __slots__ = ("_put", "_find")

    def __init__(self, put_position: Callable[[DispatchRequest], None],
                 find_queue: Callable[[str, int], object] | None = None) -> None:
        self._put = put_position
        self._find = find_queue

    def dispatch(self, request: DispatchRequest) -> None:
        tx = request.sys_flag & _TX_MASK
        if tx == _TX_NOT or tx == _TX_COMMIT:
            self._put(request)

    def dispatch_many(self, requests: list[DispatchRequest]) -> None:
        """:meth:`dispatch` each request; the units of each queue go to its ``put_requests`` together
        (in order within a queue; queues are independent files)."""
        find = self._find
        if find is None:
            super().dispatch_many(requests)
            return
        for topic, qid, g in _queue_groups(requests):  # one compiled pass, not a dict lookup per record
            cq = find(topic, qid)
            if cq is None:
                log.error("dispatch: invalid topic/queue %r/%d skipped", topic, qid)
                continue
            cq.put_requests(g)


class CommitLogDispatcherBuildIndex(DispatcherBase):
    """Feeds the index service (``build_index``) when ``messageIndexEnable``.

    The index header is written to its mapping by :meth:`end_batch` (once per
    reput pass); ``sync_each`` writes it after every record instead, for a reput
    service that does not call ``end_batch``.
    """

    __slots__ = ("_index", "_enabled", "_sync_each")

    def __init__(self, index_service: IndexBuilder, enabled: Callable[[], bool], sync_each: bool = False) -> None:
        self._index = index_service
        self._enabled = enabled
        self._sync_each = sync_each

    def dispatch(self, request: DispatchRequest) -> None:
        if self._enabled():
            self._index.build_index(request)
            if self._sync_each:
                self.end_batch()

    def dispatch_many(self, requests: list[DispatchRequest]) -> None:
        """:meth:`dispatch` each request, in order."""
        if self._enabled():
            self._index.build_index_many(requests)
            if self._sync_each:
                self.end_batch()

    def end_batch(self) -> None:
        """After a dispatch pass: write the index header to its mapping once for the whole batch."""
        self._index.sync_header()

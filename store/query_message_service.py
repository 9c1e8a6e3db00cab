"""Reads by CommitLog offset and by key (RocketMQ ``DefaultMessageStore.queryMessage``,
``selectOneMessageByOffset``, ``lookMessageByOffset``): the QUERY_MESSAGE / VIEW_MESSAGE
reads, the delayed-message and transaction services' reads of one record."""

from __future__ import annotations

from collections.abc import Callable

from common.message import MessageExt, decode_message
from store.index_service import IndexService
from store.message_store import CommitLogBackend, QueryMessageResult

__all__ = ["QueryMessageService"]


class QueryMessageService:
    """``index()`` is the store's IndexService once loaded (None before: no key lookups)."""

    def __init__(self, commit_log: CommitLogBackend, index: Callable[[], IndexService | None]) -> None:
        self.commit_log = commit_log
        self._index = index

    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> memoryview | None:
        """The whole record at ``commit_log_offset`` (its TOTALSIZE is read when ``size`` is None)."""
        if size is None:
            head = self.commit_log.get_message(commit_log_offset, 8)
            if head is None:
                return None
            size = int.from_bytes(head[:4], "big", signed=True)
            head.release()
            if size <= 0:
                return None
        return self.commit_log.get_message(commit_log_offset, size)

    def earliest_message_time(self) -> int:
        """Store time of the first record of the CommitLog (-1 when empty)."""
        cl = self.commit_log
        mv = cl.get_data(max(0, cl.get_min_offset()))
        if mv is None or len(mv) < 8:
            return -1
        total = int.from_bytes(mv[:4], "big", signed=True)
        mv.release()
        return cl.pickup_store_timestamp(cl.get_min_offset(), total)

    def look_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> MessageExt | None:
        """Decode the record at ``commit_log_offset``; None when there is none."""
        mv = self.select_one_message_by_offset(commit_log_offset, size)
        if mv is None:
            return None
        try:
            return decode_message(mv)
        except ValueError:
            return None
        finally:
            mv.release()

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        """Records indexed under ``topic#key`` with store time in [begin, end] (hash matches, RocketMQ order)."""
        qr = QueryMessageResult()
        index = self._index()
        if index is None:
            return qr
        phy_offsets, last_ts, last_phy = index.query_offset(topic, key, max_num, begin, end)
        qr.index_last_update_timestamp = last_ts
        qr.index_last_update_phyoffset = last_phy
        for off in phy_offsets:
            mv = self.select_one_message_by_offset(off)
            if mv is not None:
                qr.add_message(mv)
        return qr

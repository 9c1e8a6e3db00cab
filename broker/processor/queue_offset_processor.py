"""GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), SEARCH_OFFSET_BY_TIMESTAMP (29), GET_EARLIEST_MSG_STORETIME (32)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from common import topic_validator
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header.broker import (
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    SearchOffsetRequestHeader,
)
from store.message_store import MessageStore

__all__ = ["QueueOffsetProcessor"]

_H = TypeVar("_H", GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader, SearchOffsetRequestHeader,
             GetEarliestMsgStoretimeRequestHeader)


class QueueOffsetProcessor:
    """Read-only queue position queries answered from the store."""

    def __init__(self, store: MessageStore):
        self.store = store

    @staticmethod
    def _answer(req: RemotingCommand, header_cls: type[_H], key: str, lookup: Callable[[_H], int]) -> RemotingCommand:
        """Decode the header, check its topic, answer ``{key: lookup(header)}``."""
        h = req.decode_header(header_cls)
        err = topic_validator.validate_topic(h.topic)
        if err is not None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, err)
        return req.response_to(ResponseCode.SUCCESS, header={key: lookup(h)})

    def get_max_offset(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        return self._answer(req, GetMaxOffsetRequestHeader, "offset",
                            lambda h: self.store.get_max_offset_in_queue(h.topic, h.queueId))

    def get_min_offset(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        return self._answer(req, GetMinOffsetRequestHeader, "offset",
                            lambda h: self.store.get_min_offset_in_queue(h.topic, h.queueId))

    def search_offset_by_timestamp(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        return self._answer(req, SearchOffsetRequestHeader, "offset",
                            lambda h: self.store.get_offset_in_queue_by_time(h.topic, h.queueId, h.timestamp))

    def get_earliest_msg_storetime(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        return self._answer(req, GetEarliestMsgStoretimeRequestHeader, "timestamp",
                            lambda h: self.store.get_earliest_message_time(h.topic, h.queueId))

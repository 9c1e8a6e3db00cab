"""GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), SEARCH_OFFSET_BY_TIMESTAMP (29), GET_EARLIEST_MSG_STORETIME (32)."""

from __future__ import annotations

from typing import Any

from common import topic_validator
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.header.broker import (
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    SearchOffsetRequestHeader,
)
from store.message_store import MessageStore

__all__ = ["QueueOffsetProcessor"]


class QueueOffsetProcessor:
    """Read-only queue position queries answered from the store."""

    def __init__(self, store: MessageStore):
        self.store = store

    def get_max_offset(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(GetMaxOffsetRequestHeader)
        err = topic_validator.validate_topic(h.topic)
        if err is not None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, err)
        return req.response_to(ResponseCode.SUCCESS, header={"offset": self.store.get_max_offset_in_queue(h.topic, h.queueId)})

    def get_min_offset(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(GetMinOffsetRequestHeader)
        err = topic_validator.validate_topic(h.topic)
        if err is not None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, err)
        return req.response_to(ResponseCode.SUCCESS, header={"offset": self.store.get_min_offset_in_queue(h.topic, h.queueId)})

    def search_offset_by_timestamp(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(SearchOffsetRequestHeader)
        err = topic_validator.validate_topic(h.topic)
        if err is not None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, err)
        off = self.store.get_offset_in_queue_by_time(h.topic, h.queueId, h.timestamp)
        return req.response_to(ResponseCode.SUCCESS, header={"offset": off})

    def get_earliest_msg_storetime(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(GetEarliestMsgStoretimeRequestHeader)
        err = topic_validator.validate_topic(h.topic)
        if err is not None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, err)
        ts = self.store.get_earliest_message_time(h.topic, h.queueId)
        return req.response_to(ResponseCode.SUCCESS, header={"timestamp": ts})

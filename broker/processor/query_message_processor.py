"""QUERY_MESSAGE (12) by index key and VIEW_MESSAGE_BY_ID (33) by commit-log offset."""

from __future__ import annotations

from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header.broker import QueryMessageRequestHeader, ViewMessageRequestHeader
from store.message_store import MessageStore

__all__ = ["QueryMessageProcessor"]


class QueryMessageProcessor:
    """Answers with raw CommitLog records; clients re-check topic and key themselves."""

    def __init__(self, store: MessageStore, default_query_max_num: int = 32):
        self.store = store
        self.default_query_max_num = default_query_max_num

    def query_message(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(QueryMessageRequestHeader)
        max_num = h.maxNum
        if (req.ext_fields or {}).get("_UNIQUE_KEY_QUERY") == "true":
            max_num = self.default_query_max_num
        result = self.store.query_message(h.topic, h.key, max_num, h.beginTimestamp, h.endTimestamp)
        header = {
            "indexLastUpdatePhyoffset": result.index_last_update_phyoffset,
            "indexLastUpdateTimestamp": result.index_last_update_timestamp,
        }
        if result.buffer_total_size > 0:
            return req.response_to(ResponseCode.SUCCESS, header=header, body=result.body())
        return req.response_to(
            ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", header=header
        )

    def view_message_by_id(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(ViewMessageRequestHeader)
        buf = None
        if h.offset >= 0:
            buf = self.store.select_one_message_by_offset(h.offset)
        if buf is None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {h.offset}")
        return req.response_to(ResponseCode.SUCCESS, body=bytes(buf))

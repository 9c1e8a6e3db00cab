"""GET_CONSUMER_LIST_BY_GROUP (38), UPDATE_CONSUMER_OFFSET (15), QUERY_CONSUMER_OFFSET (14)."""

from __future__ import annotations

from broker.consumer_manager import ConsumerManager
from broker.consumer_offset_manager import ConsumerOffsetManager
from common import topic_validator
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header.broker import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from store.message_store import MessageStore

__all__ = ["ConsumerManageProcessor"]


class ConsumerManageProcessor:
    """Consumer membership and committed offsets."""

    def __init__(
        self,
        consumer_manager: ConsumerManager,
        consumer_offset_manager: ConsumerOffsetManager,
        store: MessageStore,
    ):
        self.consumers = consumer_manager
        self.offsets = consumer_offset_manager
        self.store = store

    def get_consumer_list_by_group(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.consumer import GetConsumerListByGroupResponseBody

        h = req.decode_header(GetConsumerListByGroupRequestHeader)
        g = self.consumers.get_consumer_group_info(h.consumerGroup)
        if g is not None:
            ids = g.all_client_ids()
            if ids:
                body = GetConsumerListByGroupResponseBody(consumerIdList=ids).to_json()
                return req.response_to(ResponseCode.SUCCESS, body=body)
        return req.response_to(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {h.consumerGroup}")

    def update_consumer_offset(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(UpdateConsumerOffsetRequestHeader)
        err = topic_validator.validate_topic(h.topic) or topic_validator.validate_group(h.consumerGroup)
        if err is not None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, err)
        if h.queueId < 0:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"queueId[{h.queueId}] is illegal")
        self.offsets.commit_offset(conn.remote_addr, h.consumerGroup, h.topic, h.queueId, h.commitOffset)
        return req.response_to(ResponseCode.SUCCESS)

    def query_consumer_offset(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(QueryConsumerOffsetRequestHeader)
        offset = self.offsets.query_offset(h.consumerGroup, h.topic, h.queueId)
        if offset >= 0:
            return req.response_to(ResponseCode.SUCCESS, header={"offset": offset})
        min_offset = self.store.get_min_offset_in_queue(h.topic, h.queueId)
        first_on_disk = self.store.check_in_disk_by_consume_offset(h.topic, h.queueId, 0)
        if min_offset <= 0 and not first_on_disk:
            return req.response_to(ResponseCode.SUCCESS, header={"offset": 0})
        return req.response_to(ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")

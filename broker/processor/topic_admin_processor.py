"""Topic admin: UPDATE_AND_CREATE_TOPIC (17), DELETE_TOPIC_IN_BROKER (215), GET_ALL_TOPIC_CONFIG (21),
GET_TOPIC_CONFIG_LIST (22), GET_TOPIC_NAME_LIST (23), GET_TOPIC_STATS_INFO (202),
QUERY_TOPIC_CONSUME_BY_WHO (300), GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305), QUERY_CONSUME_TIME_SPAN (303),
and store maintenance: CLEAN_UNUSED_TOPIC (316), CLEAN_EXPIRED_CONSUMEQUEUE (306), DELETE_EXPIRED_COMMITLOG (329)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from broker.config import BrokerConfig
from broker.consumer_manager import ConsumerManager
from broker.consumer_offset_manager import ConsumerOffsetManager
from broker.processor.master_only import master_only
from broker.role_state import RoleState
from broker.topic_config_manager import TopicConfigManager
from common import topic_validator
from common.util import now_ms
from remoting import fastjson
from remoting.body.topic_config import TopicConfig, TopicFilterType
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header.broker import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)
from store.message_store import MessageStore

__all__ = ["TopicAdminProcessor"]

log = logging.getLogger(__name__)


class TopicAdminProcessor:
    """Create, delete and describe topics."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
        consumer_offset_manager: ConsumerOffsetManager,
        consumer_manager: ConsumerManager,
        *,
        role: RoleState | None = None,
        register_now: Callable[[], None] | None = None,
    ):
        self.broker_config = broker_config
        self.store = store
        self.topics = topic_config_manager
        self.offsets = consumer_offset_manager
        self.consumers = consumer_manager
        self.role = role if role is not None else RoleState()
        self.register_now = register_now

    @master_only
    def update_and_create_topic(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(CreateTopicRequestHeader)
        topic = h.topic
        if topic == self.broker_config.brokerClusterName:
            return req.response_to(
                ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system reserved words."
            )
        err = topic_validator.validate_topic(topic)
        if err is not None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, err)
        if topic_validator.is_system_topic(topic):
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
        if h.readQueueNums < 0 or h.writeQueueNums < 0:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "queue numbers must not be negative")
        try:
            filter_type = TopicFilterType(h.topicFilterType)
        except ValueError:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"unknown topicFilterType {h.topicFilterType}")
        tc = TopicConfig(
            topicName=topic,
            readQueueNums=h.readQueueNums,
            writeQueueNums=h.writeQueueNums,
            perm=h.perm,
            topicFilterType=filter_type,
            topicSysFlag=h.topicSysFlag or 0,
            order=h.order,
        )
        self.topics.update_topic_config(tc)
        return req.response_to(ResponseCode.SUCCESS)

    @master_only
    def delete_topic(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(DeleteTopicRequestHeader)
        topic = h.topic
        err = topic_validator.validate_topic(topic)
        if err is not None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, err)
        if topic_validator.is_system_topic(topic):
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
        self.topics.delete_topic_config(topic)
        self.offsets.remove_topic(topic)
        try:
            self.store.delete_topics({topic})
        except Exception:  # noqa: BLE001 - the topic is gone from the table either way
            log.exception("deleting the store files of topic %s failed", topic)
        if self.register_now is not None:
            self.register_now()
        return req.response_to(ResponseCode.SUCCESS)

    def get_all_topic_config(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        return req.response_to(ResponseCode.SUCCESS, body=self.topics.build_serialize_wrapper().to_json())

    def get_topic_name_list(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.cluster import TopicList

        body = TopicList(topicList=list(self.topics.table)).to_json()
        return req.response_to(ResponseCode.SUCCESS, body=body)

    def get_system_topic_list(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.cluster import TopicList

        names = [t for t in self.topics.table if topic_validator.is_system_topic(t)]
        return req.response_to(ResponseCode.SUCCESS, body=TopicList(topicList=names).to_json())

    def get_topic_stats_info(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.admin import TopicOffset, TopicStatsTable
        from remoting.body.consumer import MessageQueue

        h = req.decode_header(GetTopicStatsInfoRequestHeader)
        tc = self.topics.select_topic_config(h.topic)
        if tc is None:
            return req.response_to(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist")
        table = TopicStatsTable()
        for qid in range(tc.writeQueueNums):
            mq = MessageQueue(topic=h.topic, brokerName=self.broker_config.brokerName, queueId=qid)
            mn = max(0, self.store.get_min_offset_in_queue(h.topic, qid))
            mx = max(0, self.store.get_max_offset_in_queue(h.topic, qid))
            ts = self.store.get_message_store_timestamp(h.topic, qid, mx - 1) if mx > 0 else 0
            table.offsetTable[mq] = TopicOffset(minOffset=mn, maxOffset=mx, lastUpdateTimestamp=max(0, ts))
        return req.response_to(ResponseCode.SUCCESS, body=table.to_json())

    def query_topic_consume_by_who(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.admin import GroupList

        h = req.decode_header(QueryTopicConsumeByWhoRequestHeader)
        groups = self.consumers.query_topic_consume_by_who(h.topic) | self.offsets.which_group_by_topic(h.topic)
        return req.response_to(ResponseCode.SUCCESS, body=GroupList(groupList=sorted(groups)).to_json())

    def query_consume_time_span(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Per write queue: oldest/newest store time, store time of the last consumed message, and lag."""
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.admin import QueryConsumeTimeSpan
        from remoting.body.consumer import MessageQueue

        h = req.decode_header(QueryConsumeTimeSpanRequestHeader)
        tc = self.topics.select_topic_config(h.topic)
        if tc is None:
            return req.response_to(ResponseCode.TOPIC_NOT_EXIST, f"topic[{h.topic}] not exist")
        spans = []
        st = self.store
        for qid in range(tc.writeQueueNums):
            mq = MessageQueue(topic=h.topic, brokerName=self.broker_config.brokerName, queueId=qid)
            span = QueryConsumeTimeSpan(messageQueue=mq)
            span.minTimeStamp = max(0, st.get_earliest_message_time(h.topic, qid))
            max_off = st.get_max_offset_in_queue(h.topic, qid)
            last = max_off - 1 if max_off > 0 else 0
            span.maxTimeStamp = max(0, st.get_message_store_timestamp(h.topic, qid, last))
            consumed = self.offsets.query_offset(h.group, h.topic, qid)
            consumed = consumed - 1 if consumed > 0 else 0
            span.consumeTimeStamp = max(0, st.get_message_store_timestamp(h.topic, qid, consumed))
            if consumed + 1 < max_off:
                nxt = st.get_message_store_timestamp(h.topic, qid, consumed + 1)
                span.delayTime = max(0, now_ms() - nxt) if nxt > 0 else 0
            spans.append(span)
        body = fastjson.dumps({"consumeTimeSpanSet": [s.to_obj() for s in spans]})
        return req.response_to(ResponseCode.SUCCESS, body=body)

    def clean_unused_topic(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        self.store.clean_unused_topic(set(self.topics.table))
        return req.response_to(ResponseCode.SUCCESS)

    def clean_expired_consume_queue(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        self.store.delete_expired_consume_queue_files()
        return req.response_to(ResponseCode.SUCCESS)

    def delete_expired_commit_log(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        self.store.execute_delete_files_manually()
        return req.response_to(ResponseCode.SUCCESS)

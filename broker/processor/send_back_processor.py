"""CONSUMER_SEND_MSG_BACK (36): a consumer returns a message it could not process.

The message is re-written to ``%RETRY%<group>`` with ``DELAY`` = the requested
level (or ``3 + reconsumeTimes``), reconsumeTimes + 1, ``RETRY_TOPIC`` and
``ORIGIN_MESSAGE_ID`` set; after ``maxReconsumeTimes`` (or a negative delay
level) it goes to ``%DLQ%<group>`` instead (spec broker-behaviour §8). The
delay itself (SCHEDULE_TOPIC_XXXX rewrite) is the store's job, as in RocketMQ.
"""

from __future__ import annotations

import random
from typing import Any

from broker.broker_stats_manager import BrokerStatsManager
from broker.config import BrokerConfig
from broker.processor.send_message_processor import tags_code_of
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from common import mixall
from common.message import MessageConst, MessageExtBrokerInner
from common.perm import PERM_READ, PERM_WRITE, is_writeable
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.header.broker import ConsumerSendMsgBackRequestHeader

__all__ = ["SendBackProcessor"]

_V3_4_9 = 121


class SendBackProcessor:
    """Re-queues consumed messages for retry or dead-letters them."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: Any,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        stats: BrokerStatsManager,
        store_host: tuple[str, int],
    ):
        self.broker_config = broker_config
        self.store = store
        self.topics = topic_config_manager
        self.groups = subscription_group_manager
        self.stats = stats
        self.store_host = store_host
        self._rand = random.Random()

    def __call__(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(ConsumerSendMsgBackRequestHeader)
        bc = self.broker_config
        sgc = self.groups.find_subscription_group_config(h.group)
        if sgc is None:
            return req.response_to(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {h.group}")
        if not is_writeable(bc.brokerPermission):
            return req.response_to(ResponseCode.NO_PERMISSION, f"the broker[{bc.broker_ip1()}] sending message is forbidden")
        if sgc.retryQueueNums <= 0:
            return req.response_to(ResponseCode.SUCCESS)
        new_topic = mixall.get_retry_topic(h.group)
        queue_id = self._rand.randrange(1 << 30) % sgc.retryQueueNums
        tc = self.topics.create_topic_in_send_message_back_method(new_topic, sgc.retryQueueNums, PERM_READ | PERM_WRITE, 0)
        if tc is None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"topic[{new_topic}] not exist")
        if not is_writeable(tc.perm):
            return req.response_to(ResponseCode.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden")
        ext = self.store.look_message_by_offset(h.offset) if h.offset >= 0 else None
        if ext is None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}")
        props = dict(ext.properties)
        if MessageConst.RETRY_TOPIC not in props:
            props[MessageConst.RETRY_TOPIC] = ext.topic
        props[MessageConst.WAIT] = "false"
        max_times = sgc.retryMaxTimes
        if req.version >= _V3_4_9 and h.maxReconsumeTimes is not None:
            max_times = h.maxReconsumeTimes
        delay = h.delayLevel
        if ext.reconsume_times >= max_times or delay < 0:
            new_topic = mixall.get_dlq_topic(h.group)
            queue_id = 0
            tc = self.topics.create_topic_in_send_message_back_method(new_topic, 1, PERM_READ | PERM_WRITE, 0)
            if tc is None:
                return req.response_to(ResponseCode.SYSTEM_ERROR, f"topic[{new_topic}] not exist")
            props.pop(MessageConst.DELAY, None)
        else:
            if delay == 0:
                delay = 3 + ext.reconsume_times
            props[MessageConst.DELAY] = str(delay)
        origin = props.get(MessageConst.ORIGIN_MESSAGE_ID)
        props[MessageConst.ORIGIN_MESSAGE_ID] = origin if origin and origin.strip() else ext.msg_id
        msg = MessageExtBrokerInner(
            topic=new_topic,
            queue_id=queue_id,
            flag=ext.flag,
            body=ext.body,
            properties=props,
            properties_string="\x02".join(k + "\x01" + v for k, v in props.items()),
            tags_code=tags_code_of(props.get(MessageConst.TAGS)),
            sys_flag=ext.sys_flag,
            born_timestamp=ext.born_timestamp,
            born_host=ext.born_host,
            store_host=self.store_host,
            reconsume_times=ext.reconsume_times + 1,
        )
        result = self.store.put_message(msg)
        if result is not None and result.is_ok():
            self.stats.inc_put(new_topic, 1, len(ext.body))
            return req.response_to(ResponseCode.SUCCESS)
        return req.response_to(ResponseCode.SYSTEM_ERROR, result.status.name if result is not None else "putMessage failed")

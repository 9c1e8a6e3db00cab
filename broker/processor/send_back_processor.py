"""CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it could not process.

Spec broker-behaviour.md §8: the message is re-written to ``%RETRY%<group>``
(created with the group's retryQueueNums, perm 6) with delay level = the
requested one or ``3 + reconsumeTimes``, RECONSUMETIMES + 1, ``RETRY_TOPIC``
(set once) and ``ORIGIN_MESSAGE_ID``; once ``reconsumeTimes`` reaches the
maximum (header ``maxReconsumeTimes`` from clients >= V3_4_9, else the group's
``retryMaxTimes``) or the level is negative it goes to ``%DLQ%<group>`` queue
0 instead (created with 1 queue, perm 6), without delay. The delayed copy is
parked in SCHEDULE_TOPIC_XXXX by ``rewrite_delay`` (the schedule service).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable

from broker.broker_stats_manager import BrokerStatsManager
from broker.config import BrokerConfig
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from broker.transaction.transactional_message_util import java_properties_string
from common import mixall
from common.message import MessageConst, MessageExt, MessageExtBrokerInner
from common.perm import PERM_READ, PERM_WRITE, is_writeable
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header import HeaderError
from remoting.header.broker import ConsumerSendMsgBackRequestHeader
from store.message_store import MessageStore

__all__ = ["SendBackProcessor", "build_send_back_message", "V3_4_9", "DLQ_NUMS_PER_GROUP"]

# 4.9.7's "subscription group not exist, G " + FAQUrl.suggestTodo(FAQUrl.SUBSCRIPTION_GROUP_NOT_EXIST)
_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."

log = logging.getLogger(__name__)

V3_4_9 = 121  # MQVersion ordinal from which the header's maxReconsumeTimes counts
DLQ_NUMS_PER_GROUP = 1
_UNIT_MODE_SYS_FLAG = 0x2  # TopicSysFlag unit-sub flag


def build_send_back_message(ext: MessageExt, topic: str, queue_id: int, delay_level: int,
                            dead_letter: bool) -> MessageExtBrokerInner:
    """The record a send-back writes for ``ext`` (before any delay rewrite), as RocketMQ 4.9.7 builds it.

    Properties: the stored ones, then RETRY_TOPIC (if absent), WAIT=false,
    DELAY (level, ``3 + reconsumeTimes`` for 0, or 0 for a dead letter) and
    ORIGIN_MESSAGE_ID, serialized in Java HashMap order.
    """
    props = dict(ext.properties)
    props.setdefault(MessageConst.RETRY_TOPIC, ext.topic)
    props[MessageConst.WAIT] = "false"
    if dead_letter:
        props[MessageConst.DELAY] = "0"  # RocketMQ sets level 0: kept in the record, no delay
    else:
        props[MessageConst.DELAY] = str(delay_level if delay_level != 0 else 3 + ext.reconsume_times)
    origin = props.get(MessageConst.ORIGIN_MESSAGE_ID)
    props[MessageConst.ORIGIN_MESSAGE_ID] = origin if origin and origin.strip() else ext.msg_id
    return MessageExtBrokerInner.from_ext(
        ext, topic=topic, queue_id=queue_id, properties=props, properties_string=java_properties_string(props),
        reconsume_times=ext.reconsume_times + 1,
    )


class SendBackProcessor:
    """Re-queues consumed messages for retry, or dead-letters them."""

    def __init__(self, broker_config: BrokerConfig, store: MessageStore, topic_config_manager: TopicConfigManager,
                 subscription_group_manager: SubscriptionGroupManager, stats: BrokerStatsManager, *, rewrite_delay: Callable[[MessageExtBrokerInner], MessageExtBrokerInner]):
        self.broker_config = broker_config
        self.store = store
        self.topics = topic_config_manager
        self.groups = subscription_group_manager
        self.stats = stats
        self.rewrite_delay = rewrite_delay
        self._rand = random.Random()
        self.retried = 0
        self.dead_lettered = 0

    def __call__(self, req: RemotingCommand, conn: Connection) -> RemotingCommand | Awaitable[RemotingCommand]:
        """Checks answer at once; the put is awaited (the returned awaitable runs as a task)."""
        try:
            h = req.decode_header(ConsumerSendMsgBackRequestHeader)
        except HeaderError as e:
            return req.response_to(ResponseCode.SYSTEM_ERROR, str(e))
        bc = self.broker_config
        sgc = self.groups.find_subscription_group_config(h.group)
        if sgc is None:
            return req.response_to(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {h.group} {_FAQ}")
        if not is_writeable(bc.brokerPermission):
            return req.response_to(ResponseCode.NO_PERMISSION,
                                   f"the broker[{bc.broker_ip1()}] sending message is forbidden")
        if sgc.retryQueueNums <= 0:
            return req.response_to(ResponseCode.SUCCESS)  # the group keeps no retries: dropped
        new_topic = mixall.get_retry_topic(h.group)
        queue_id = self._rand.randrange(99999999) % sgc.retryQueueNums
        sys_flag = _UNIT_MODE_SYS_FLAG if h.unitMode else 0
        tc = self.topics.create_topic_in_send_message_back_method(new_topic, sgc.retryQueueNums,
                                                                  PERM_WRITE | PERM_READ, sys_flag)
        if tc is None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"topic[{new_topic}] not exist")
        if not is_writeable(tc.perm):
            return req.response_to(ResponseCode.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden")
        ext = self.store.look_message_by_offset(h.offset) if h.offset >= 0 else None
        if ext is None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}")
        max_times = sgc.retryMaxTimes
        if req.version >= V3_4_9 and h.maxReconsumeTimes is not None:
            max_times = h.maxReconsumeTimes
        dlq = ext.reconsume_times >= max_times or h.delayLevel < 0
        if dlq:
            new_topic = mixall.get_dlq_topic(h.group)
            queue_id = self._rand.randrange(99999999) % DLQ_NUMS_PER_GROUP
            tc = self.topics.create_topic_in_send_message_back_method(new_topic, DLQ_NUMS_PER_GROUP,
                                                                      PERM_WRITE | PERM_READ, 0)
            if tc is None:
                return req.response_to(ResponseCode.SYSTEM_ERROR, f"topic[{new_topic}] not exist")
        msg = build_send_back_message(ext, new_topic, queue_id, h.delayLevel, dlq)
        if not dlq:
            msg = self.rewrite_delay(msg)
        return self._put(req, msg, dlq, len(ext.body))

    async def _put(self, req: RemotingCommand, msg: MessageExtBrokerInner, dlq: bool, size: int) -> RemotingCommand:
        """Store the retry / dead letter and answer once it is stored (in DLedger mode: once a quorum
        has it, as RocketMQ's putMessage waits); any other outcome answers SYSTEM_ERROR, so the
        consumer sends the message again itself."""
        result = await self.store.put_message_async(msg)
        if result is not None and result.is_ok():
            if self.stats is not None:
                self.stats.inc_put(msg.topic, 1, size)
            if dlq:
                self.dead_lettered += 1
            else:
                self.retried += 1
            return req.response_to(ResponseCode.SUCCESS)
        return req.response_to(ResponseCode.SYSTEM_ERROR,
                               result.status.name if result is not None else "putMessageResult is null")

"""TransactionalMessageBridge: the transaction parts' window on the store, topics and offsets.

Half messages live in ``RMQ_SYS_TRANS_HALF_TOPIC`` (queue 0), remove markers
in ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` (same queue id, tag ``d``, body = the half
queue offset); the check progress is the consumer offset of group
``CID_RMQ_SYS_TRANS`` on both queues (spec broker-behaviour.md §10).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from broker.transaction.transactional_message_util import (
    CONSUMER_GROUP,
    HALF_TOPIC,
    OP_TOPIC,
    REMOVE_TAG,
    java_properties_string,
    op_body,
)
from common.message import (
    MessageConst,
    MessageExt,
    MessageExtBrokerInner,
    MessageSysFlag,
    decode_message,
)
from common.perm import PERM_READ, PERM_WRITE
from common.pull_status import PullStatus
from common.util import now_ms, tags_code
from store.message_store import GetMessageStatus, MessageStore

__all__ = ["TransactionalMessageBridge", "PullResult"]

log = logging.getLogger(__name__)


_STATUS = {
    GetMessageStatus.FOUND: PullStatus.FOUND,
    GetMessageStatus.NO_MATCHED_MESSAGE: PullStatus.NO_MATCHED_MSG,
    GetMessageStatus.NO_MESSAGE_IN_QUEUE: PullStatus.NO_NEW_MSG,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: PullStatus.NO_NEW_MSG,
}


@dataclass(slots=True)
class PullResult:
    """What a broker-internal read of a queue found (RocketMQ's client PullResult, reduced)."""

    status: PullStatus
    next_begin_offset: int
    msgs: list[MessageExt] = field(default_factory=list)




class TransactionalMessageBridge:
    """Reads/writes half and op messages and the CID_RMQ_SYS_TRANS offsets."""

    def __init__(self, store: MessageStore, topic_config_manager: Any, consumer_offset_manager: Any,
                 broker_name: str, store_host: tuple[str, int]):
        self.store = store
        self.topics = topic_config_manager
        self.offsets = consumer_offset_manager
        self.broker_name = broker_name
        self.store_host = store_host
        self._store_addr = f"{store_host[0]}:{store_host[1]}"

    # -- offsets --------------------------------------------------------------------

    def fetch_consume_offset(self, topic: str, queue_id: int) -> int:
        off = self.offsets.query_offset(CONSUMER_GROUP, topic, queue_id)
        if off == -1:
            off = self.store.get_min_offset_in_queue(topic, queue_id)
        return off

    def update_consume_offset(self, topic: str, queue_id: int, offset: int) -> None:
        self.offsets.commit_offset(self._store_addr, CONSUMER_GROUP, topic, queue_id, offset)

    def fetch_half_queue_ids(self) -> list[int]:
        """Queue ids of the half topic (its config is created when missing)."""
        tc = self.topics.select_topic_config(HALF_TOPIC)
        if tc is None:
            tc = self.topics.create_topic_in_send_message_back_method(HALF_TOPIC, 1, PERM_READ | PERM_WRITE, 0)
        return list(range(tc.readQueueNums)) if tc is not None else []

    # -- reads ------------------------------------------------------------------------

    def get_half_messages(self, queue_id: int, offset: int, nums: int) -> PullResult:
        return self._get(HALF_TOPIC, queue_id, offset, nums)

    def get_op_messages(self, queue_id: int, offset: int, nums: int) -> PullResult:
        return self._get(OP_TOPIC, queue_id, offset, nums)

    def _get(self, topic: str, queue_id: int, offset: int, nums: int) -> PullResult:
        r = self.store.get_message(CONSUMER_GROUP, topic, queue_id, offset, nums, None)
        status = _STATUS.get(r.status, PullStatus.OFFSET_ILLEGAL)
        msgs: list[MessageExt] = []
        try:
            if status is PullStatus.FOUND:
                for buf in r.buffers:
                    try:
                        msgs.append(decode_message(buf))
                    except ValueError:
                        log.warning("undecodable record in %s-%d", topic, queue_id)
        finally:
            r.release()
        return PullResult(status, r.next_begin_offset, msgs)

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        if commit_log_offset < 0:
            return None
        return self.store.look_message_by_offset(commit_log_offset)

    # -- writes -------------------------------------------------------------------------

    def parse_half_message_inner(self, msg: MessageExtBrokerInner) -> MessageExtBrokerInner:
        """Turn a prepared message into its half form: half topic queue 0, REAL_TOPIC/REAL_QID, tx bits cleared."""
        if self.topics.select_topic_config(HALF_TOPIC) is None:
            self.topics.create_topic_in_send_message_back_method(HALF_TOPIC, 1, PERM_READ | PERM_WRITE, 0)
        props = dict(msg.properties)
        props[MessageConst.REAL_TOPIC] = msg.topic
        props[MessageConst.REAL_QID] = str(msg.queue_id)
        msg.properties = props
        msg.properties_string = java_properties_string(props)
        msg.sys_flag = MessageSysFlag.reset_transaction_value(msg.sys_flag, MessageSysFlag.TRANSACTION_NOT_TYPE)
        msg.topic = HALF_TOPIC
        msg.queue_id = 0
        return msg

    async def put_message(self, inner: MessageExtBrokerInner):
        """Store ``inner`` and wait until it is stored (DLedger: until a quorum has it)."""
        return await self.store.put_message_async(inner)

    def append_outcome(self, commit_log_offset: int) -> bool | None:
        """Whether a message whose put failed after it was appended is stored after all: True, False
        (put it again) or None (not decided yet). Only a DLedger commit log can tell; otherwise False."""
        return self.store.append_outcome(commit_log_offset)

    async def put_op_message(self, half: MessageExt) -> bool:
        """Write the remove marker for ``half`` (tag ``d``, body = its queue offset).

        Like RocketMQ, no topic config is created for the op topic (it never shows in topics.json).
        """
        # RocketMQ's Message(topic, "d", body) carries TAGS and WAIT=true in its stored string
        props = {MessageConst.TAGS: REMOVE_TAG, MessageConst.WAIT: "true"}
        inner = MessageExtBrokerInner(
            topic=OP_TOPIC,
            queue_id=half.queue_id,
            body=op_body(half.queue_offset),
            properties=props,
            properties_string=java_properties_string(props),
            tags_code=tags_code(REMOVE_TAG),
            sys_flag=0,
            born_timestamp=now_ms(),
            born_host=self.store_host,
            store_host=self.store_host,
        )
        r = await self.store.put_message_async(inner)
        if r is None or not r.is_ok():
            log.error("writing the op message for half offset %d failed: %s", half.queue_offset, r.status)
            return False
        return True

    @staticmethod
    def renew_half_message_inner(ext: MessageExt) -> MessageExtBrokerInner:
        """A copy of a half message to re-append to the half queue (properties as in ``ext.properties``)."""
        props = dict(ext.properties)
        return MessageExtBrokerInner(
            topic=ext.topic,
            queue_id=ext.queue_id,
            flag=ext.flag,
            body=ext.body,
            properties=props,
            properties_string=java_properties_string(props),
            tags_code=tags_code(props.get(MessageConst.TAGS)),
            sys_flag=ext.sys_flag,
            born_timestamp=ext.born_timestamp,
            born_host=ext.born_host,
            store_host=ext.store_host,
        )

    def renew_immunity_half_message_inner(self, ext: MessageExt) -> MessageExtBrokerInner:
        """Like :meth:`renew_half_message_inner`, remembering the first half offset in TRAN_PREPARED_QUEUE_OFFSET."""
        inner = self.renew_half_message_inner(ext)
        if MessageConst.TRAN_PREPARED_QUEUE_OFFSET not in inner.properties:
            inner.properties[MessageConst.TRAN_PREPARED_QUEUE_OFFSET] = str(ext.queue_offset)
            inner.properties_string = java_properties_string(inner.properties)
        return inner

"""END_TRANSACTION (37): commit or roll back a half (prepared) message.

Commit writes the final message to its real topic/queue (transaction type
COMMIT, PREPARED TRANSACTION OFFSET = the half record's offset, properties
string unchanged) and then an op ("remove") marker to
RMQ_SYS_TRANS_OP_HALF_TOPIC; rollback writes only the marker. The periodic
transaction check-back is not part of this processor.
"""

from __future__ import annotations

import logging
from typing import Any

from broker.processor.send_message_processor import put_status_to_response, tags_code_of
from broker.topic_config_manager import TopicConfigManager
from common import mixall
from common.message import MessageConst, MessageExtBrokerInner, MessageSysFlag
from common.perm import PERM_READ, PERM_WRITE
from common.util import now_ms
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.header.broker import EndTransactionRequestHeader

__all__ = ["EndTransactionProcessor", "REMOVE_TAG"]

log = logging.getLogger(__name__)

REMOVE_TAG = "d"


class EndTransactionProcessor:
    def __init__(self, store: Any, topic_config_manager: TopicConfigManager, store_host: tuple[str, int],
                 *, is_slave: bool = False, max_message_size: int = 4 * 1024 * 1024):
        self.store = store
        self.topics = topic_config_manager
        self.store_host = store_host
        self.is_slave = is_slave
        self.max_message_size = max_message_size

    def __call__(self, req: RemotingCommand, conn: Any) -> RemotingCommand | None:
        if self.is_slave:
            return req.response_to(ResponseCode.SLAVE_NOT_AVAILABLE, "Store slave, can not be used to end transaction")
        h = req.decode_header(EndTransactionRequestHeader)
        kind = MessageSysFlag.get_transaction_value(h.commitOrRollback)
        if h.commitOrRollback not in (MessageSysFlag.TRANSACTION_COMMIT_TYPE, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE):
            return None  # unknown/"not type": nothing to do, no answer
        half = self.store.look_message_by_offset(h.commitLogOffset) if h.commitLogOffset >= 0 else None
        if half is None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        if half.properties.get(MessageConst.PRODUCER_GROUP) != h.producerGroup:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "The producer group wrong")
        if half.queue_offset != h.tranStateTableOffset:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong")
        if half.commit_log_offset != h.commitLogOffset:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "The commit log offset wrong")
        if kind == MessageSysFlag.TRANSACTION_COMMIT_TYPE:
            props = half.properties
            real_topic = props.get(MessageConst.REAL_TOPIC, half.topic)
            try:
                real_qid = int(props.get(MessageConst.REAL_QID, "0"))
            except ValueError:
                real_qid = 0
            final = MessageExtBrokerInner(
                topic=real_topic,
                queue_id=real_qid,
                flag=half.flag,
                body=half.body,
                properties={k: v for k, v in props.items() if k not in (MessageConst.REAL_TOPIC, MessageConst.REAL_QID)},
                properties_string=half.properties_string or "\x02".join(k + "\x01" + v for k, v in props.items()),
                tags_code=tags_code_of(props.get(MessageConst.TAGS)),
                sys_flag=MessageSysFlag.reset_transaction_value(half.sys_flag, MessageSysFlag.TRANSACTION_COMMIT_TYPE),
                born_timestamp=half.born_timestamp,
                born_host=half.born_host,
                store_host=self.store_host,
                reconsume_times=half.reconsume_times,
                prepared_transaction_offset=h.commitLogOffset,
            )
            result = self.store.put_message(final)
            code, remark, stored = put_status_to_response(result.status.name, self.max_message_size)
            if not stored:
                return req.response_to(code, remark)
            self._write_op(half)
            return req.response_to(code)
        self._write_op(half)
        return req.response_to(ResponseCode.SUCCESS)

    def _write_op(self, half: Any) -> None:
        """The "remove" marker: tag ``d``, body = the half message's queue offset."""
        self.topics.create_topic_in_send_message_back_method(mixall.RMQ_SYS_TRANS_OP_HALF_TOPIC, 1, PERM_READ | PERM_WRITE)
        props = {MessageConst.TAGS: REMOVE_TAG}
        op = MessageExtBrokerInner(
            topic=mixall.RMQ_SYS_TRANS_OP_HALF_TOPIC,
            queue_id=half.queue_id,
            body=str(half.queue_offset).encode(),
            properties=props,
            properties_string=MessageConst.TAGS + "\x01" + REMOVE_TAG,
            tags_code=tags_code_of(REMOVE_TAG),
            born_timestamp=now_ms(),
            born_host=self.store_host,
            store_host=self.store_host,
        )
        r = self.store.put_message(op)
        if not r.is_ok():
            log.warning("writing the transaction op message failed: %s", r.status)

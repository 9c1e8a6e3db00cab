"""RESUME_CHECK_HALF_MESSAGE (323): put a half message back into the half queue with its check count reset.

An operator uses it (mqadmin / DefaultMQAdminExt.resumeCheckHalfMessage) for a prepared
message that was checked ``transactionCheckMax`` times and moved to
TRANS_CHECK_MAX_TIME_TOPIC, or for one still waiting: the copy gets
TRANSACTION_CHECK_TIMES=0 and goes to RMQ_SYS_TRANS_HALF_TOPIC queue 0, where the
transaction check service finds it and asks the producer again.

Unlike RocketMQ, which re-puts whatever record the id points at, only records of the half
topic or of TRANS_CHECK_MAX_TIME_TOPIC are accepted: putting an ordinary message into the
half queue would have the check deliver it a second time.
"""

from __future__ import annotations

import logging

from broker.transaction.transactional_message_util import (
    CHECK_MAX_TIME_TOPIC,
    HALF_TOPIC,
    java_properties_string,
)
from common.message import MessageConst, MessageExt, MessageExtBrokerInner, decode_offset_msg_id
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header.admin_extra import ResumeCheckHalfMessageRequestHeader
from store.message_store import MessageStore

__all__ = ["TransactionAdminProcessor", "PUT_BACK_FAILED", "PUT_BACK_EXCEPTION"]

log = logging.getLogger(__name__)

# RocketMQ's remarks: the second is its answer to every bad id (unparsable, no such record).
PUT_BACK_FAILED = "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed."
PUT_BACK_EXCEPTION = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."


def to_half_message_inner(ext: MessageExt) -> MessageExtBrokerInner:
    """The copy RocketMQ's ``toMessageExtBrokerInner`` builds: half topic, queue 0, check count 0."""
    props = dict(ext.properties)
    props[MessageConst.TRANSACTION_CHECK_TIMES] = "0"
    inner = MessageExtBrokerInner.from_ext(
        ext, topic=HALF_TOPIC, queue_id=0, properties=props, properties_string=java_properties_string(props)
    )
    # Java sets waitStoreMsgOK=false after the properties string is built: the stored
    # properties keep their WAIT, the put does not wait for a sync flush.
    inner.properties = {**props, MessageConst.WAIT: "false"}
    return inner


class TransactionAdminProcessor:
    """Answers RESUME_CHECK_HALF_MESSAGE from the store."""

    def __init__(self, store: MessageStore):
        self.store = store

    async def resume_check_half_message(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(ResumeCheckHalfMessageRequestHeader)
        ext, why = self._find(h.msgId)
        if ext is None:
            log.warning("resume check of half message %r refused: %s", h.msgId, why)
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"{PUT_BACK_EXCEPTION} {why}")
        result = await self.store.put_message_async(to_half_message_inner(ext))
        if result is not None and result.is_ok():
            log.info("Put message back to RMQ_SYS_TRANS_HALF_TOPIC. real topic=%s",
                     ext.properties.get(MessageConst.REAL_TOPIC))
            return req.response_to(ResponseCode.SUCCESS)
        log.error("Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed: %s", None if result is None else result.status)
        return req.response_to(ResponseCode.SYSTEM_ERROR, PUT_BACK_FAILED)

    def _find(self, msg_id: str | None) -> tuple[MessageExt | None, str]:
        if not msg_id:
            return None, "(the msgId header is missing)"
        try:
            host, offset = decode_offset_msg_id(msg_id.strip())
        except ValueError:
            return None, f"({msg_id!r} is not an offset message id)"
        ext = self.store.look_message_by_offset(offset) if offset >= 0 else None
        if ext is None:
            return None, f"(no message at commit log offset {offset})"
        if ext.store_host != host:
            return None, f"(message {msg_id} was not stored by this broker)"
        if ext.topic not in (HALF_TOPIC, CHECK_MAX_TIME_TOPIC):
            return None, f"(message {msg_id} of topic {ext.topic} is not a half message)"
        return ext, ""

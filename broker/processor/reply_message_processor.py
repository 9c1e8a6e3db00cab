"""SEND_REPLY_MESSAGE (324) / SEND_REPLY_MESSAGE_V2 (325): request/reply messaging.

The responder sends its reply to the broker; the broker pushes it at once to
the requesting client named by the ``REPLY_TO_CLIENT`` property
(PUSH_REPLY_MESSAGE_TO_CLIENT over that client's own connection, found among
the producer channels) and, with ``storeReplyMessageEnable``, also stores it.
"""

from __future__ import annotations

import logging
from typing import Any

from broker.processor.send_message_header import parse_send_header
from broker.processor.send_message_processor import SendMessageProcessor
from broker.producer_manager import ProducerManager
from common.message import MessageConst, MessageExtBrokerInner, string_to_properties
from common.util import now_ms, tags_code
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection

__all__ = ["ReplyMessageProcessor"]

log = logging.getLogger(__name__)

_NV = "\x01"
_SEP = "\x02"


class ReplyMessageProcessor:
    """Pushes replies to the requester and (optionally) stores them."""

    def __init__(self, send_processor: SendMessageProcessor, producer_manager: ProducerManager, *, push_timeout_s: float = 3.0):
        self.send = send_processor  # shares the send checks and message building rules
        self.producers = producer_manager
        self.push_timeout_s = push_timeout_s

    async def __call__(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        send = self.send
        h = parse_send_header(req.ext_fields, req.code == RequestCode.SEND_REPLY_MESSAGE_V2)
        tc, err = send.check_send(req, conn, h)
        if err is not None:
            return err
        qid = h.queueId if h.queueId >= 0 else 0
        props = string_to_properties(h.properties)
        props[MessageConst.CLUSTER] = send.broker_config.brokerClusterName
        born = send._born_host(conn)
        body = req.body or b""
        msg = MessageExtBrokerInner(
            topic=h.topic,
            queue_id=qid,
            flag=h.flag,
            body=body,
            properties=props,
            tags_code=tags_code(props.get(MessageConst.TAGS)),
            sys_flag=h.sysFlag,
            born_timestamp=h.bornTimestamp,
            born_host=born,
            store_host=send.store_host,
            reconsume_times=h.reconsumeTimes or 0,
        )
        code, remark = await self._push(msg, h, born)
        if send.broker_config.storeReplyMessageEnable:
            # As RocketMQ: when the reply is stored, the store's answer decides the response code.
            msg.properties_string = _SEP.join(k + _NV + v for k, v in props.items() if k != MessageConst.WAIT)
            result = await send.store.put_message_async(msg)  # DLedger: answered once a quorum has it
            return send._response(req, result, h.topic, qid, len(body))
        if code == ResponseCode.SUCCESS:
            # Java clients decode a SUCCESS send answer as SendMessageResponseHeader (queueId is unboxed):
            # RocketMQ answers msgId "0" and queue offset 0 for a reply it pushed without storing.
            return req.response_to(code, remark, header={"msgId": "0", "queueId": qid, "queueOffset": 0})
        return req.response_to(code, remark)

    async def _push(self, msg: MessageExtBrokerInner, h: Any, born: tuple[str, int]) -> tuple[int, str | None]:
        sender = msg.properties.get(MessageConst.REPLY_TO_CLIENT)
        channel = self.producers.find_channel(sender) if sender else None
        if channel is None or channel.closed:
            return ResponseCode.SYSTEM_ERROR, f"push reply message fail, channel of <{sender}> not found."
        msg.properties[MessageConst.PUSH_REPLY_TIME] = str(now_ms())
        header = {
            "producerGroup": h.producerGroup,
            "topic": h.topic,
            "defaultTopic": h.defaultTopic,
            "defaultTopicQueueNums": h.defaultTopicQueueNums,
            "queueId": msg.queue_id,
            "sysFlag": h.sysFlag,
            "bornTimestamp": h.bornTimestamp,
            "flag": h.flag,
            "properties": _SEP.join(k + _NV + v for k, v in msg.properties.items()),
            "reconsumeTimes": h.reconsumeTimes or 0,
            "unitMode": h.unitMode,
            "bornHost": f"{born[0]}:{born[1]}",
            "storeHost": f"{self.send.store_host[0]}:{self.send.store_host[1]}",
            "storeTimestamp": now_ms(),
        }
        cmd = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header, msg.body)
        try:
            r = await channel.invoke(cmd, self.push_timeout_s)
        except Exception as e:  # noqa: BLE001 - the requester went away or timed out
            log.warning("push reply message to %s failed: %s", sender, e)
            return ResponseCode.SYSTEM_ERROR, f"push reply message to {sender} fail."
        if r.code != ResponseCode.SUCCESS:
            return ResponseCode.SYSTEM_ERROR, f"push reply message to {sender} fail: {r.remark}"
        return ResponseCode.SUCCESS, None

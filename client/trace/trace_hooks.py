"""The hooks that turn sends, consumes and END_TRANSACTIONs into trace records (RocketMQ's
SendMessageTraceHookImpl, ConsumeMessageTraceHookImpl, EndTransactionTraceHookImpl)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from client.client_config import ClientConfig
from client.message import Message
from client.trace.async_trace_dispatcher import AsyncTraceDispatcher, TraceProducer
from client.trace.trace_data_encoder import MessageType, TraceBean, TraceContext, TraceType
from common.message import MessageConst

__all__ = ["TraceHooks", "ConsumeReturnType"]


class ConsumeReturnType:
    """Java's ConsumeReturnType ordinals (SubAfter's contextCode)."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


def _now_ms() -> int:
    return int(time.time() * 1000)


def _host(addr: Any) -> str:
    return f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) and len(addr) >= 2 else str(addr or "")


def _msg_type(props: dict[str, str]) -> MessageType:
    if props.get(MessageConst.TRANSACTION_PREPARED) == "true":
        return MessageType.Trans_Msg_Half
    delay = props.get(MessageConst.DELAY)
    if delay and delay != "0":
        return MessageType.Delay_Msg
    return MessageType.Normal_Msg


class TraceHooks:
    """One client's hooks, all feeding one :class:`AsyncTraceDispatcher`."""

    def __init__(self, dispatcher: AsyncTraceDispatcher, group: str):
        self.dispatcher = dispatcher
        self.group = group

    @classmethod
    async def start(cls, group: str, config: ClientConfig, trace_topic: str | None,
                    producer_factory: Callable[..., TraceProducer]) -> TraceHooks:
        """Hooks of a client with message trace on, their dispatcher started (its own producer)."""
        dispatcher = AsyncTraceDispatcher(group, config, trace_topic, producer_factory=producer_factory)
        await dispatcher.start()
        return cls(dispatcher, group)

    # -- producer ------------------------------------------------------------------------

    def on_send(self, msg: Any, broker_addr: str, result: Any, start_ms: int) -> None:
        """After a send that got a result (Pub record); batches and trace messages are skipped."""
        if not isinstance(msg, Message) or result is None or msg.topic == self.dispatcher.trace_topic \
                or not result.trace_on:
            return
        props = msg.properties
        bean = TraceBean(topic=result.message_queue.topic, msg_id=result.msg_id, offset_msg_id=result.offset_msg_id,
                         tags=props.get(MessageConst.TAGS, ""), keys=props.get(MessageConst.KEYS, ""),
                         store_host=broker_addr, body_length=len(msg.body), msg_type=_msg_type(props))
        ctx = TraceContext(TraceType.Pub, timestamp=start_ms, region_id=result.region_id, group_name=self.group,
                           cost_time=max(0, _now_ms() - start_ms), success=result.send_status.value == "SEND_OK",
                           beans=[bean])
        self.dispatcher.append(ctx)

    def on_end_transaction(self, msg: Any, result: Any, broker_addr: str, state: str, from_check: bool) -> None:
        props = msg.properties
        bean = TraceBean(topic=msg.topic, msg_id=result.msg_id if result is not None else props.get(MessageConst.UNIQ_KEY, ""),
                         tags=props.get(MessageConst.TAGS, ""), keys=props.get(MessageConst.KEYS, ""),
                         store_host=broker_addr, msg_type=MessageType.Trans_msg_Commit,
                         transaction_id=(result.transaction_id if result is not None else None)
                         or props.get(MessageConst.UNIQ_KEY), transaction_state=state,
                         from_transaction_check=from_check)
        self.dispatcher.append(TraceContext(TraceType.EndTransaction, timestamp=_now_ms(),
                                            region_id=props.get(MessageConst.MSG_REGION, "DefaultRegion"),
                                            group_name=self.group, beans=[bean]))

    # -- consumer ------------------------------------------------------------------------

    def before_consume(self, msgs: Sequence[Any]) -> tuple[str, int, list[TraceBean]] | None:
        """SubBefore for the messages about to be consumed; the token goes to :meth:`after_consume`."""
        trace_topic = self.dispatcher.trace_topic
        beans = []
        region = "DefaultRegion"
        for m in msgs:
            if m.topic == trace_topic:
                continue
            props = m.properties
            region = props.get(MessageConst.MSG_REGION, region)
            beans.append(TraceBean(topic=m.topic, msg_id=props.get(MessageConst.UNIQ_KEY) or m.msg_id,
                                   tags=props.get(MessageConst.TAGS, ""), keys=props.get(MessageConst.KEYS, ""),
                                   store_host=_host(m.store_host), body_length=len(m.body or b""),
                                   retry_times=m.reconsume_times))
        if not beans:
            return None
        request_id = uuid.uuid4().hex
        now = _now_ms()
        self.dispatcher.append(TraceContext(TraceType.SubBefore, timestamp=now, region_id=region,
                                            group_name=self.group, request_id=request_id, beans=beans))
        return request_id, now, beans

    def after_consume(self, token: tuple[str, int, list[TraceBean]] | None, success: bool, code: int) -> None:
        if token is None:
            return
        request_id, start, beans = token
        now = _now_ms()
        cost = (now - start) // max(len(beans), 1)
        self.dispatcher.append(TraceContext(TraceType.SubAfter, timestamp=now, group_name=self.group,
                                            request_id=request_id, cost_time=cost, success=success,
                                            context_code=code, beans=beans))

"""TransactionProducer (Java TransactionMQProducer): half message, local transaction, END_TRANSACTION.

``send_message_in_transaction`` sends the message as a half message
(``TRAN_MSG=true``, ``PGROUP``), runs the listener's local transaction and
reports commit / rollback / unknown with a oneway END_TRANSACTION. When the
broker later asks (CHECK_TRANSACTION_STATE) the listener's check method
answers, again by oneway END_TRANSACTION with ``fromTransactionCheck=true``.
Listener methods may be plain functions (run on a thread pool) or coroutines.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from client.consumer_common import call_listener
from client.exceptions import MQClientError
from client.message import Message, SendResult, SendStatus
from client.producer import Producer
from common.message import MessageConst, MessageExt, MessageSysFlag, decode_offset_msg_id
from remoting.header.broker import EndTransactionRequestHeader
from remoting.header.client_extra import CheckTransactionStateRequestHeader

__all__ = ["LocalTransactionState", "TransactionListener", "TransactionProducer", "TransactionSendResult"]

log = logging.getLogger("client")


class LocalTransactionState(enum.Enum):
    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


_FLAG = {
    LocalTransactionState.COMMIT_MESSAGE: MessageSysFlag.TRANSACTION_COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: MessageSysFlag.TRANSACTION_ROLLBACK_TYPE,
    LocalTransactionState.UNKNOW: MessageSysFlag.TRANSACTION_NOT_TYPE,
}


class TransactionListener(Protocol):
    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState: ...

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState: ...


@dataclass(slots=True)
class TransactionSendResult:
    send_result: SendResult
    local_transaction_state: LocalTransactionState

    @property
    def send_status(self) -> SendStatus:
        return self.send_result.send_status

    @property
    def msg_id(self) -> str:
        return self.send_result.msg_id


class TransactionProducer(Producer):
    """See the module docstring."""

    def __init__(self, group: str, namesrv_addr: str | None = None, *, transaction_listener: TransactionListener,
                 check_thread_pool_max: int = 1, **kw):
        super().__init__(group, namesrv_addr, **kw)
        self.transaction_listener = transaction_listener
        self._check_executor = ThreadPoolExecutor(max(check_thread_pool_max, 1), thread_name_prefix="TxCheck")
        self._check_tasks: set[asyncio.Task] = set()

    async def shutdown(self) -> None:
        if self._check_tasks:
            await asyncio.wait(list(self._check_tasks), timeout=5)
        await super().shutdown()
        self._check_executor.shutdown(wait=False)

    async def send_message_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        """Half send, local transaction, END_TRANSACTION; returns the send result and the local state."""
        if self.transaction_listener is None:
            raise MQClientError("TransactionListener is null")
        msg.properties.pop(MessageConst.DELAY, None)
        msg.delay_time_level = 0
        msg.properties[MessageConst.TRANSACTION_PREPARED] = "true"
        msg.properties[MessageConst.PRODUCER_GROUP] = self.group
        result = await self.send(msg)
        state = LocalTransactionState.UNKNOW
        remark = None
        if result.send_status == SendStatus.SEND_OK:
            uniq = msg.properties.get(MessageConst.UNIQ_KEY)
            if uniq:
                msg.properties["__transactionId__"] = uniq
            try:
                state = await call_listener(self.transaction_listener.execute_local_transaction,
                                            self._check_executor, msg, arg)
                if state is None:
                    state = LocalTransactionState.UNKNOW
            except Exception as e:
                log.warning("local transaction of %s threw: %s", result.msg_id, e)
                state, remark = LocalTransactionState.UNKNOW, f"executeLocalTransactionBranch exception: {e!r}"
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        try:
            await self._end_transaction(result, state, remark)
        except Exception as e:
            log.warning("END_TRANSACTION for %s failed: %s", result.msg_id, e)
        else:
            if self.trace is not None:
                addr = self._inst().find_broker_address_in_publish(result.message_queue.brokerName) or ""
                self.trace.on_end_transaction(msg, result, addr, state.value, False)
        return TransactionSendResult(result, state)

    async def _end_transaction(self, result: SendResult, state: LocalTransactionState, remark: str | None) -> None:
        _host, offset = decode_offset_msg_id(result.offset_msg_id or result.msg_id)
        addr = self._inst().find_broker_address_in_publish(result.message_queue.brokerName)
        if addr is None:
            raise MQClientError(f"The broker[{result.message_queue.brokerName}] not exist")
        h = EndTransactionRequestHeader(
            producerGroup=self.group, tranStateTableOffset=result.queue_offset, commitLogOffset=offset,
            commitOrRollback=_FLAG[state], msgId=result.msg_id, fromTransactionCheck=False,
            transactionId=result.transaction_id, bname=result.message_queue.brokerName)
        await self._inst().api.end_transaction_oneway(addr, h, remark)

    def check_transaction_state(self, addr: str, msg: MessageExt, h: CheckTransactionStateRequestHeader) -> None:
        """CHECK_TRANSACTION_STATE from ``addr``: ask the listener, answer with END_TRANSACTION."""
        task = asyncio.get_running_loop().create_task(self._check(addr, msg, h))
        self._check_tasks.add(task)
        task.add_done_callback(self._check_tasks.discard)

    async def _check(self, addr: str, msg: MessageExt, h: CheckTransactionStateRequestHeader) -> None:
        remark = None
        try:
            state = await call_listener(self.transaction_listener.check_local_transaction, self._check_executor, msg)
            if state is None:
                state = LocalTransactionState.UNKNOW
        except Exception as e:
            log.warning("transaction check of %s threw: %s", h.msgId, e)
            state, remark = LocalTransactionState.UNKNOW, f"checkLocalTransactionState exception: {e!r}"
        uniq = msg.properties.get(MessageConst.UNIQ_KEY) or h.msgId or msg.msg_id
        eh = EndTransactionRequestHeader(
            producerGroup=self.group, tranStateTableOffset=h.tranStateTableOffset, commitLogOffset=h.commitLogOffset,
            commitOrRollback=_FLAG[state], msgId=uniq, fromTransactionCheck=True, transactionId=h.transactionId,
            bname=h.bname)
        try:
            await self._inst().api.end_transaction_oneway(addr, eh, remark)
        except Exception as e:
            log.warning("END_TRANSACTION (check) to %s failed: %s", addr, e)
        else:
            if self.trace is not None:
                self.trace.on_end_transaction(msg, None, addr, state.value, True)

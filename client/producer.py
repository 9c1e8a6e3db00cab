"""Producer (Java DefaultMQProducer): sync, async, oneway, batch, selected-queue and ordered sends.

Sends pick a queue round robin from the topic's publish info (auto-creating
through ``TBW102`` when the topic has no route yet), retry
``retry_times_when_send_failed`` times on another broker, compress large
bodies with zlib and stamp every message with a Java-format UNIQ_KEY.
Concurrent sends share socket writes: the remoting connection coalesces the
requests issued in one loop iteration into a single ``writelines``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from client.client_config import ClientConfig, group_config
from client.exceptions import MQBrokerError, MQClientError, RequestTimeoutError
from client.message import Message, MessageBatch, MessageQueue, SendResult, SendStatus
from client.message_accumulator import MessageAccumulator
from client.message_id import MessageClientIDSetter
from client.mq_client_api import request
from client.mq_client_instance import MQClientInstance
from client.mq_fault_strategy import MQFaultStrategy
from client.topic_publish_info import TopicPublishInfo, route_to_publish_info
from client.trace.trace_hooks import TraceHooks
from common.message import MessageConst, MessageSysFlag, encode_batch_body, properties_to_string
from common.mixall import DEFAULT_PRODUCER_GROUP, DEFAULT_TOPIC, RETRY_GROUP_TOPIC_PREFIX
from common.topic_validator import check_topic, is_not_allowed_send_topic
from common.util import java_string_hash
from remoting import RemotingCommand, RemotingError, RequestCode, ResponseCode
from remoting.body.route import TopicRouteData
from remoting.header.broker import SendMessageRequestHeaderV2, SendMessageResponseHeader

__all__ = [
    "Producer",
    "EncodedBatch",
    "MessageQueueSelector",
    "select_message_queue_by_hash",
    "select_message_queue_by_random",
    "SendCallback",
]

log = logging.getLogger("client")

MessageQueueSelector = Callable[[list[MessageQueue], Message, Any], MessageQueue]
SendCallback = Callable[[SendResult | None, BaseException | None], Any]

_STATUS_BY_CODE = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


def select_message_queue_by_hash(mqs: list[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    """Java SelectMessageQueueByHash: ``abs(arg.hashCode()) % n`` (strings hashed as Java does)."""
    h = java_string_hash(arg) if isinstance(arg, str) else int(arg) if isinstance(arg, int) else hash(arg)
    h = abs(((h + 2**31) % 2**32) - 2**31)
    return mqs[h % len(mqs)]


def select_message_queue_by_random(mqs: list[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    """Java SelectMessageQueueByRandom."""
    return random.choice(mqs)


@dataclass(slots=True)
class EncodedBatch:
    """A SEND_BATCH_MESSAGE body encoded by its sender (``encode_batch_body``), each entry with its UNIQ_KEY.

    For senders that build and check many messages themselves (a Spark sink task): the producer
    checks the topic and the total size only, not every entry again.
    """

    topic: str
    body: bytes
    uniq_keys: list[str]


class Producer:
    """Asyncio producer; see the module docstring. Use ``await start()`` then the send methods."""

    def __init__(
        self,
        group: str = DEFAULT_PRODUCER_GROUP,
        namesrv_addr: str | None = None,
        *,
        config: ClientConfig | None = None,
        send_msg_timeout: float = 3.0,
        retry_times_when_send_failed: int = 2,
        retry_times_when_send_async_failed: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        compress_msg_body_over_howmuch: int = 4096,
        compress_level: int = 5,
        max_message_size: int = 4 * 1024 * 1024,
        create_topic_key: str = DEFAULT_TOPIC,
        default_topic_queue_nums: int = 4,
        send_latency_fault_enable: bool = False,
        instance: MQClientInstance | None = None,
        batch_sends_under_load: bool = True,
        enable_msg_trace: bool = False,
        custom_trace_topic: str | None = None,
    ):
        self.config = group_config(group, config, namesrv_addr)
        self.group = group
        self.send_msg_timeout = send_msg_timeout
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.retry_times_when_send_async_failed = retry_times_when_send_async_failed
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        self.compress_msg_body_over_howmuch = compress_msg_body_over_howmuch
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self.create_topic_key = create_topic_key
        self.default_topic_queue_nums = default_topic_queue_nums
        self.fault_strategy = MQFaultStrategy(send_latency_fault_enable)
        self.topic_publish_info: dict[str, TopicPublishInfo] = {}
        self.instance: MQClientInstance | None = None
        self._shared_instance = instance
        self._ids: MessageClientIDSetter | None = None
        self._pending: set[asyncio.Task] = set()
        self.accumulator = MessageAccumulator(self) if batch_sends_under_load else None
        # message trace (RocketMQ 4.x format): Pub records through an async dispatcher
        self.enable_msg_trace = enable_msg_trace
        self.custom_trace_topic = custom_trace_topic
        self.trace: TraceHooks | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Create the client instance, register the group and start route/heartbeat tasks."""
        if self.instance is not None:
            return
        inst = self._shared_instance or MQClientInstance(self.config)
        inst.register_producer(self.group, self)
        self._ids = MessageClientIDSetter(ip=inst.config.client_ip)
        self.instance = inst
        if self._shared_instance is None:
            await inst.start()
        if self.enable_msg_trace:
            self.trace = await TraceHooks.start(self.group, self.config, self.custom_trace_topic, Producer)

    async def shutdown(self) -> None:
        """Wait for in-flight async sends, unregister and close."""
        if self.instance is None:
            return
        if self._pending:
            await asyncio.wait(list(self._pending), timeout=self.send_msg_timeout * 3)
        if self.accumulator is not None:
            await self.accumulator.close()
        if self.trace is not None:
            trace, self.trace = self.trace, None
            await trace.dispatcher.stop()
        inst, self.instance = self.instance, None
        if self._shared_instance is None:
            await inst.shutdown()
        else:
            inst.producers.pop(self.group, None)

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.shutdown()

    @property
    def client_id(self) -> str:
        return self._inst().client_id

    def _inst(self) -> MQClientInstance:
        if self.instance is None:
            raise MQClientError("The producer service state not OK, maybe started once or not started yet")
        return self.instance

    # -- ProducerInner -------------------------------------------------------------------------

    def publish_topics(self) -> list[str]:
        return list(self.topic_publish_info)

    def update_topic_publish_info(self, topic: str, route: TopicRouteData) -> None:
        self.topic_publish_info[topic] = route_to_publish_info(topic, route)

    def check_transaction_state(self, addr: str, msg: Any, h: Any) -> None:
        log.warning("%s: producer group %s is not transactional; check ignored", self.client_id, self.group)

    # -- routes ------------------------------------------------------------------------------------

    async def _find_publish_info(self, topic: str) -> TopicPublishInfo:
        info = self.topic_publish_info.get(topic)
        if info is None or not info.ok():
            self.topic_publish_info.setdefault(topic, TopicPublishInfo())
            try:
                await self._inst().update_topic_route_from_namesrv(topic)
            except RemotingError as e:
                raise MQClientError(f"route of {topic} unavailable: {e}") from e
            info = self.topic_publish_info.get(topic)
        if info is not None and info.ok():
            return info
        # auto-create through the default topic's brokers
        await self._inst().update_topic_route_from_namesrv(topic, self.create_topic_key, self.default_topic_queue_nums)
        info = self.topic_publish_info.get(topic)
        if info is None or not info.ok():
            raise MQClientError(f"No route info of this topic: {topic}")
        return info

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The queues a send to ``topic`` can go to."""
        return list((await self._find_publish_info(topic)).message_queues)

    # -- validation ------------------------------------------------------------------------------------

    def _check_message(self, msg: Message) -> None:
        if msg is None:
            raise MQClientError("the message is null", ResponseCode.MESSAGE_ILLEGAL)
        err = check_topic(msg.topic)
        if err:
            raise MQClientError(err, ResponseCode.MESSAGE_ILLEGAL)
        if is_not_allowed_send_topic(msg.topic):
            raise MQClientError(f"Sending message to topic[{msg.topic}] is forbidden.", ResponseCode.NO_PERMISSION)
        if msg.body is None or len(msg.body) == 0:
            raise MQClientError("the message body length is zero", ResponseCode.MESSAGE_ILLEGAL)
        if len(msg.body) > self.max_message_size:
            raise MQClientError(
                f"the message body size over max value, MAX: {self.max_message_size}", ResponseCode.MESSAGE_ILLEGAL
            )
        for k, v in msg.properties.items():
            kv = f"{k}{v}"
            if "\x01" in kv or "\x02" in kv:  # substring search, not a generator per character
                raise MQClientError(f"property {k!r} contains a separator character", ResponseCode.MESSAGE_ILLEGAL)

    # -- public send API -------------------------------------------------------------------------------

    async def send(self, msg: Message | MessageBatch | Sequence[Message], mq: MessageQueue | None = None,
                   selector: MessageQueueSelector | None = None, arg: Any = None,
                   timeout: float | None = None) -> SendResult:
        """Send and wait for the broker's answer (retries on another broker unless a queue is chosen)."""
        timeout = self.send_msg_timeout if timeout is None else timeout
        return await self._send(msg, mq, selector, arg, timeout, "SYNC")

    async def _send(self, msg: Message | MessageBatch | Sequence[Message], mq: MessageQueue | None,
                    selector: MessageQueueSelector | None, arg: Any, timeout: float, mode: str) -> SendResult:
        if not isinstance(msg, Message):
            return await self.send_batch(msg, mq, timeout=timeout)
        self._check_message(msg)
        if mq is not None or selector is not None:
            return await self._send_to_queue(msg, mq, selector, arg, timeout, mode)
        return await self._send_default(msg, timeout, mode)

    def send_async(self, msg: Message | MessageBatch | Sequence[Message], callback: SendCallback | None = None,
                   mq: MessageQueue | None = None, selector: MessageQueueSelector | None = None, arg: Any = None,
                   timeout: float | None = None) -> asyncio.Future:
        """Start a send; returns a future of the SendResult and calls ``callback(result, error)`` if given."""
        timeout = self.send_msg_timeout if timeout is None else timeout
        task = asyncio.get_running_loop().create_task(self._send(msg, mq, selector, arg, timeout, "ASYNC"))
        self._pending.add(task)

        def done(t: asyncio.Task) -> None:
            self._pending.discard(t)
            if callback is None:
                if not t.cancelled():
                    t.exception()  # retrieved by whoever awaits; avoid "never retrieved" noise
                return
            try:
                if t.cancelled():
                    callback(None, asyncio.CancelledError())
                elif t.exception() is not None:
                    callback(None, t.exception())
                else:
                    callback(t.result(), None)
            except Exception:
                log.exception("send callback failed")

        task.add_done_callback(done)
        return task

    async def send_oneway(self, msg: Message, mq: MessageQueue | None = None,
                          selector: MessageQueueSelector | None = None, arg: Any = None) -> None:
        """Send without waiting for an answer (no retry, no result)."""
        self._check_message(msg)
        if mq is not None or selector is not None:
            await self._send_to_queue(msg, mq, selector, arg, self.send_msg_timeout, "ONEWAY")
        else:
            await self._send_default(msg, self.send_msg_timeout, "ONEWAY")

    async def send_batch(self, msgs: MessageBatch | Sequence[Message], mq: MessageQueue | None = None,
                         timeout: float | None = None) -> SendResult:
        """Send messages of one topic together (SEND_BATCH_MESSAGE): one queue, consecutive offsets."""
        batch = msgs if isinstance(msgs, MessageBatch) else MessageBatch(list(msgs))
        if not batch.messages:
            raise MQClientError("batch is empty", ResponseCode.MESSAGE_ILLEGAL)
        topic = batch.topic
        size = 0
        for m in batch.messages:
            if m.topic != topic:
                raise MQClientError("The topic of the messages in one batch should be the same")
            if m.delay_time_level > 0 or MessageConst.DELAY in m.properties:
                raise MQClientError("TimeDelayLevel is not supported for batching")
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                raise MQClientError("Retry Group is not supported for batching")
            self._check_message(m)
            if MessageConst.UNIQ_KEY not in m.properties:
                m.properties[MessageConst.UNIQ_KEY] = self._ids.create_uniq_id()
            size += len(m.body) + 64
        return await self._send_sized_batch(batch, size, mq, timeout)

    async def send_encoded_batch(self, batch: EncodedBatch, mq: MessageQueue | None = None,
                                 timeout: float | None = None) -> SendResult:
        """Send a batch body its caller encoded and checked entry by entry (see :class:`EncodedBatch`)."""
        err = check_topic(batch.topic)
        if err:
            raise MQClientError(err, ResponseCode.MESSAGE_ILLEGAL)
        if is_not_allowed_send_topic(batch.topic) or batch.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise MQClientError(f"Sending a batch to topic[{batch.topic}] is forbidden.", ResponseCode.NO_PERMISSION)
        if not batch.body:
            raise MQClientError("batch is empty", ResponseCode.MESSAGE_ILLEGAL)
        return await self._send_sized_batch(batch, len(batch.body), mq, timeout)

    async def _send_sized_batch(self, batch: MessageBatch | EncodedBatch, size: int, mq: MessageQueue | None,
                                timeout: float | None) -> SendResult:
        """The batch's size against maxMessageSize, then a synchronous send (to ``mq`` when given)."""
        if size > self.max_message_size:
            raise MQClientError(f"the batch size over max value, MAX: {self.max_message_size}",
                                ResponseCode.MESSAGE_ILLEGAL)
        timeout = self.send_msg_timeout if timeout is None else timeout
        if mq is not None:
            return await self._send_to_queue(batch, mq, None, None, timeout, "SYNC")
        return await self._send_default(batch, timeout, "SYNC")

    # -- send paths ----------------------------------------------------------------------------------------

    async def _send_to_queue(self, msg, mq, selector, arg, timeout: float, mode: str):
        start = time.monotonic()
        info = await self._find_publish_info(msg.topic)
        if selector is not None:
            mq = selector(list(info.message_queues), msg, arg)
            if mq is None:
                raise MQClientError("select message queue returned null")
        remaining = timeout - (time.monotonic() - start)
        if remaining <= 0:
            raise RequestTimeoutError("sendSelectImpl call timeout")
        return await self._send_kernel(msg, mq, mode, remaining)

    async def _send_default(self, msg, timeout: float, mode: str):
        start = time.monotonic()
        info = await self._find_publish_info(msg.topic)
        times_total = 1 + (self.retry_times_when_send_failed if mode == "SYNC" else
                           self.retry_times_when_send_async_failed if mode == "ASYNC" else 0)
        last_broker: str | None = None
        last_exc: BaseException | None = None
        result: SendResult | None = None
        for attempt in range(times_total):
            mq = self.fault_strategy.select_one_message_queue(info, last_broker)
            last_broker = mq.brokerName
            begin = time.monotonic()
            remaining = timeout - (begin - start)
            if remaining <= 0:
                break
            try:
                if self.accumulator is not None and mode != "ONEWAY" and self._batchable(msg):
                    result = await self.accumulator.send(msg, mq, remaining)
                else:
                    result = await self._send_kernel(msg, mq, mode, remaining)
                self.fault_strategy.update_fault_item(mq.brokerName, int((time.monotonic() - begin) * 1000), False)
                if mode == "ONEWAY":
                    return None
                if result.send_status != SendStatus.SEND_OK and self.retry_another_broker_when_not_store_ok:
                    continue
                return result
            except (RemotingError, MQClientError) as e:
                self.fault_strategy.update_fault_item(mq.brokerName, int((time.monotonic() - begin) * 1000), True)
                log.info("send to %s failed (attempt %d): %s", mq, attempt + 1, e)
                last_exc = e
                if isinstance(e, MQClientError) and e.code == ResponseCode.MESSAGE_ILLEGAL:
                    raise
                continue
            except MQBrokerError as e:
                self.fault_strategy.update_fault_item(mq.brokerName, int((time.monotonic() - begin) * 1000), True)
                last_exc = e
                if e.retriable:  # the Java producer's retry codes (client.exceptions)
                    continue
                raise
        if result is not None:
            return result
        if last_exc is None:
            raise RequestTimeoutError(f"send to {msg.topic} timed out after {timeout}s")
        if isinstance(last_exc, MQBrokerError):
            raise last_exc
        raise MQClientError(f"Send [{times_total}] times, still failed, cost [{int((time.monotonic() - start) * 1000)}]"
                            f"ms, Topic: {msg.topic}: {last_exc}") from last_exc

    def _batchable(self, msg) -> bool:
        """Plain messages may share a batch request; delayed, transactional, retry and compressible ones may not."""
        if not isinstance(msg, Message):
            return False
        p = msg.properties
        if MessageConst.DELAY in p or MessageConst.TRANSACTION_PREPARED in p:
            return False
        if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX) or len(msg.body) >= self.compress_msg_body_over_howmuch:
            return False
        if MessageConst.UNIQ_KEY not in p:
            p[MessageConst.UNIQ_KEY] = self._ids.create_uniq_id()
        return True

    def _encode(self, msg) -> tuple[bytes, int, dict[str, str], bool]:
        """(body, sysFlag, properties, is_batch) for the wire."""
        if isinstance(msg, MessageBatch):
            return encode_batch_body(msg.messages), 0, {}, True
        if isinstance(msg, EncodedBatch):
            return msg.body, 0, {}, True
        props = msg.properties
        if MessageConst.UNIQ_KEY not in props:
            props[MessageConst.UNIQ_KEY] = self._ids.create_uniq_id()
        body = bytes(msg.body)
        sys_flag = 0
        if len(body) >= self.compress_msg_body_over_howmuch:
            body = zlib.compress(body, self.compress_level)
            sys_flag |= MessageSysFlag.COMPRESSED | MessageSysFlag.COMPRESSION_ZLIB
        if props.get(MessageConst.TRANSACTION_PREPARED) == "true":
            sys_flag |= MessageSysFlag.TRANSACTION_PREPARED_TYPE
        return body, sys_flag, props, False

    async def _send_kernel(self, msg, mq: MessageQueue, mode: str, timeout: float) -> SendResult | None:
        inst = self._inst()
        addr = inst.find_broker_address_in_publish(mq.brokerName)
        if addr is None:
            await self._find_publish_info(mq.topic)
            addr = inst.find_broker_address_in_publish(mq.brokerName)
        if addr is None:
            raise MQClientError(f"The broker[{mq.brokerName}] not exist")
        body, sys_flag, props, is_batch = self._encode(msg)
        props = dict(props)
        reconsume = max_reconsume = None
        if mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            rt = props.pop(MessageConst.RECONSUME_TIME, None)
            mr = props.pop(MessageConst.MAX_RECONSUME_TIMES, None)
            reconsume = int(rt) if rt else None
            max_reconsume = int(mr) if mr else None
        h = SendMessageRequestHeaderV2(
            a=self.group, b=mq.topic, c=self.create_topic_key, d=self.default_topic_queue_nums, e=mq.queueId,
            f=sys_flag, g=int(time.time() * 1000), h=0 if is_batch else msg.flag, i=properties_to_string(props),
            j=reconsume if reconsume is not None else 0, k=False, l=max_reconsume, m=is_batch or None,
            n=mq.brokerName,
        )
        code = RequestCode.SEND_BATCH_MESSAGE if is_batch else RequestCode.SEND_MESSAGE_V2
        cmd = request(code, h, body)
        if mode == "ONEWAY":
            await inst.api.oneway(addr, cmd)
            return None
        resp = await inst.api.invoke(addr, cmd, timeout)
        result = self._process_send_response(mq, msg, resp, addr)
        if self.trace is not None:
            self.trace.on_send(msg, addr, result, h.g)
        return result

    @staticmethod
    def _process_send_response(mq: MessageQueue, msg, resp: RemotingCommand, addr: str) -> SendResult:
        status = _STATUS_BY_CODE.get(resp.code)
        if status is None:
            raise MQBrokerError(resp.code, resp.remark, addr)
        rh = resp.decode_header(SendMessageResponseHeader)
        if isinstance(msg, MessageBatch):
            uniq = ",".join(m.properties.get(MessageConst.UNIQ_KEY, "") for m in msg.messages)
        elif isinstance(msg, EncodedBatch):
            uniq = ",".join(msg.uniq_keys)
        else:
            uniq = msg.properties.get(MessageConst.UNIQ_KEY, "")
        ext = resp.ext_fields or {}
        return SendResult(
            send_status=status,
            msg_id=uniq,
            message_queue=MessageQueue(mq.topic, mq.brokerName, rh.queueId),
            queue_offset=rh.queueOffset,
            offset_msg_id=rh.msgId,
            transaction_id=rh.transactionId,
            region_id=ext.get("MSG_REGION", "DefaultRegion"),
            trace_on=ext.get("TRACE_ON", "true") != "false",
        )

    # -- used by consumers (client-side retry when send-back fails) ------------------------------------

    async def send_to_broker(self, msg: Message, broker_name: str, timeout: float | None = None) -> SendResult:
        """Send ``msg`` to any queue of ``broker_name`` (used for retry-topic resends)."""
        info = await self._find_publish_info(msg.topic)
        mqs = [q for q in info.message_queues if q.brokerName == broker_name] or info.message_queues
        mq = mqs[info.send_which_queue.next() % len(mqs)]
        return await self._send_kernel(msg, mq, "SYNC", self.send_msg_timeout if timeout is None else timeout)


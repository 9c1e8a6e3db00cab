"""SendPipeline: one sink task's producer, sending rows in batches with a few batches in flight.

Rows without a sharding key go out per topic in SEND_BATCH_MESSAGE batches
sized by bytes (the producer picks the queue and retries another broker);
rows with one go to the queue its hash selects (Java SelectMessageQueueByHash),
and batches to one such queue are chained so a key's messages keep their
order. Delayed messages cannot be batched and are sent one by one. At most
``depth`` sends are in flight; the next batch is converted while they are.
Every send must answer SEND_OK, else the task fails with the broker's code
and remark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from client.client_config import ClientConfig
from client.exceptions import MQBrokerError, MQClientError
from client.message import Message, MessageQueue, SendResult, SendStatus
from client.producer import EncodedBatch, Producer, select_message_queue_by_hash
from common.message import MessageConst, encode_batch_body
from connectors.spark.errors import ConnectorError
from remoting import RemotingError

__all__ = ["SendPipeline", "DEFAULT_BATCH_BYTES", "DEFAULT_BATCH_MESSAGES", "DEFAULT_IN_FLIGHT"]

DEFAULT_BATCH_BYTES = 256 * 1024
DEFAULT_BATCH_MESSAGES = 1024
DEFAULT_IN_FLIGHT = 4
# a batch entry's header (20 B), properties length (2 B) and a UNIQ_KEY property (~42 B), rounded up:
# the estimate only sizes batches; the broker's maxMessageSize (4 MiB) is far above the default target
_ENTRY_OVERHEAD = 96
_UNIQ = MessageConst.UNIQ_KEY


@dataclass(slots=True)
class _Buffer:
    msgs: list[Message] = field(default_factory=list)
    size: int = 0


class SendPipeline:
    """See the module docstring; ``await send_all(messages)`` returns how many were stored."""

    def __init__(self, name_server: str, group: str, *, batch_bytes: int = DEFAULT_BATCH_BYTES,
                 batch_size: int = DEFAULT_BATCH_MESSAGES, depth: int = DEFAULT_IN_FLIGHT, timeout: float = 10.0,
                 instance: str = "spark-sink"):
        self.name_server = name_server
        self.group = group
        self.batch_bytes = batch_bytes
        self.batch_size = batch_size
        self.timeout = timeout
        self.instance = instance
        self._slots = asyncio.Semaphore(depth)
        self._inflight: set[asyncio.Task] = set()
        self._chains: dict[MessageQueue, asyncio.Task] = {}
        self._queues: dict[str, list[MessageQueue]] = {}
        self._error: BaseException | None = None
        self.sent = 0

    async def send_all(self, messages: Iterable[tuple[Message, str | None]]) -> int:
        """Send every (message, sharding key); raises the first failure once the sends in flight ended."""
        cfg = ClientConfig(namesrv_addr=self.name_server, instance_name=self.instance)
        producer = Producer(self.group, config=cfg, send_msg_timeout=self.timeout, batch_sends_under_load=False)
        await producer.start()
        try:
            buffers: dict[tuple[str, MessageQueue | None], _Buffer] = {}
            max_bytes, max_msgs = self.batch_bytes, self.batch_size
            for msg, sharding in messages:
                if self._error is not None:
                    break
                mq = None if sharding is None else await self._queue_for(producer, msg.topic, sharding)
                if msg.delay_time_level > 0:
                    await self._launch(producer, [msg], mq)
                    continue
                key = (msg.topic, mq)
                buf = buffers.get(key)
                if buf is None:
                    buf = buffers[key] = _Buffer()
                buf.msgs.append(msg)
                buf.size += len(msg.body) + _ENTRY_OVERHEAD
                if buf.size >= max_bytes or len(buf.msgs) >= max_msgs:
                    del buffers[key]
                    await self._launch(producer, buf.msgs, mq)
            for (_, mq), buf in buffers.items():
                if buf.msgs and self._error is None:
                    await self._launch(producer, buf.msgs, mq)
            if self._inflight:
                await asyncio.wait(list(self._inflight))
            if self._error is not None:
                raise self._error
            return self.sent
        finally:
            await producer.shutdown()

    async def _queue_for(self, producer: Producer, topic: str, sharding_key: str) -> MessageQueue:
        mqs = self._queues.get(topic)
        if mqs is None:
            try:
                mqs = sorted(await producer.fetch_publish_message_queues(topic),
                             key=lambda q: (q.brokerName, q.queueId))
            except (MQClientError, RemotingError) as e:
                raise ConnectorError(f"no route to topic {topic}: {e}") from e
            self._queues[topic] = mqs
        return select_message_queue_by_hash(mqs, None, sharding_key)

    async def _launch(self, producer: Producer, msgs: list[Message], mq: MessageQueue | None) -> None:
        await self._slots.acquire()
        before = self._chains.get(mq) if mq is not None else None
        task = asyncio.get_running_loop().create_task(self._send(producer, msgs, mq, before))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        if mq is not None:
            self._chains[mq] = task

    async def _send(self, producer: Producer, msgs: list[Message], mq: MessageQueue | None,
                    before: asyncio.Task | None) -> None:
        try:
            if before is not None:  # same queue: keep the key's order
                await asyncio.wait([before])
            if self._error is not None:
                return
            try:
                if len(msgs) == 1:
                    result = await producer.send(msgs[0], mq)
                else:  # entries checked by row_messages: the producer checks topic and size only
                    batch = EncodedBatch(msgs[0].topic, encode_batch_body(msgs),
                                         [m.properties[_UNIQ] for m in msgs])
                    result = await producer.send_encoded_batch(batch, mq)
            except MQBrokerError as e:
                raise ConnectorError(f"sending {len(msgs)} message(s) to {msgs[0].topic} failed: CODE: {e.code} "
                                     f"DESC: {e.remark} BROKER: {e.addr}", e.code) from e
            except MQClientError as e:
                raise ConnectorError(f"sending {len(msgs)} message(s) to {msgs[0].topic} failed: {e}", e.code) from e
            except RemotingError as e:
                raise ConnectorError(f"sending {len(msgs)} message(s) to {msgs[0].topic} failed: {e}") from e
            self._check(result, msgs)
            self.sent += len(msgs)
        except BaseException as e:  # noqa: BLE001 - kept for send_all to raise in the task
            if self._error is None:
                self._error = e
        finally:
            self._slots.release()

    @staticmethod
    def _check(result: SendResult, msgs: list[Message]) -> None:
        if result.send_status != SendStatus.SEND_OK:
            raise ConnectorError(f"sending {len(msgs)} message(s) to {msgs[0].topic}: broker answered "
                                 f"{result.send_status.value}, not SEND_OK")

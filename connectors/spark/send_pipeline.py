"""SendPipeline: one sink task's producer, sending rows in batches with a few batches in flight.

Rows without a sharding key go out per topic in SEND_BATCH_MESSAGE batches
(the producer picks the queue and retries another broker); rows with one go
to the queue its hash selects (Java SelectMessageQueueByHash), and batches
to one such queue are chained so a key's messages keep their order. Delayed
messages cannot be batched and are sent one by one. Every send must answer
SEND_OK, else the task fails with the broker's code and remark.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

from client.client_config import ClientConfig
from client.exceptions import MQBrokerError, MQClientError
from client.message import Message, MessageQueue, SendResult, SendStatus
from client.producer import Producer, select_message_queue_by_hash
from common.message import MessageConst
from connectors.spark.errors import ConnectorError
from remoting import RemotingError

__all__ = ["OutMessage", "SendPipeline"]

_MAX_BATCH_BYTES = 512 * 1024


@dataclass(slots=True)
class OutMessage:
    topic: str
    body: bytes
    tags: str | None
    keys: str | None
    properties: dict[str, str]
    sharding_key: str | None
    delay_level: int
    uniq_key: str

    def to_message(self) -> Message:
        props = self.properties
        props[MessageConst.UNIQ_KEY] = self.uniq_key
        return Message(self.topic, self.body, tags=self.tags, keys=self.keys, properties=props,
                       delay_time_level=self.delay_level)


@dataclass(slots=True)
class _Buffer:
    msgs: list[Message] = field(default_factory=list)
    size: int = 0


class SendPipeline:
    """See the module docstring; ``await send_all(messages)`` returns how many were stored."""

    def __init__(self, name_server: str, group: str, *, batch_size: int = 64, depth: int = 4,
                 timeout: float = 10.0, instance: str = "spark-sink"):
        self.name_server = name_server
        self.group = group
        self.batch_size = batch_size
        self.timeout = timeout
        self.instance = instance
        self._slots = asyncio.Semaphore(depth)
        self._inflight: set[asyncio.Task] = set()
        self._chains: dict[MessageQueue, asyncio.Task] = {}
        self._queues: dict[str, list[MessageQueue]] = {}
        self._error: BaseException | None = None
        self.sent = 0

    async def send_all(self, messages: Iterable[OutMessage]) -> int:
        cfg = ClientConfig(namesrv_addr=self.name_server, instance_name=self.instance)
        producer = Producer(self.group, config=cfg, send_msg_timeout=self.timeout, batch_sends_under_load=False)
        await producer.start()
        try:
            buffers: dict[tuple[str, MessageQueue | None], _Buffer] = {}
            for om in messages:
                if self._error is not None:
                    break
                msg = om.to_message()
                mq = await self._queue_for(producer, om) if om.sharding_key is not None else None
                if om.delay_level > 0:
                    await self._launch(producer, [msg], mq)
                    continue
                buf = buffers.setdefault((om.topic, mq), _Buffer())
                buf.msgs.append(msg)
                buf.size += len(msg.body) + 64
                if len(buf.msgs) >= self.batch_size or buf.size >= _MAX_BATCH_BYTES:
                    await self._launch(producer, buf.msgs, mq)
                    buffers[(om.topic, mq)] = _Buffer()
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

    async def _queue_for(self, producer: Producer, om: OutMessage) -> MessageQueue:
        mqs = self._queues.get(om.topic)
        if mqs is None:
            try:
                mqs = sorted(await producer.fetch_publish_message_queues(om.topic),
                             key=lambda q: (q.brokerName, q.queueId))
            except (MQClientError, RemotingError) as e:
                raise ConnectorError(f"no route to topic {om.topic}: {e}") from e
            self._queues[om.topic] = mqs
        return select_message_queue_by_hash(mqs, None, om.sharding_key)

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
                else:
                    result = await producer.send_batch(msgs, mq)
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

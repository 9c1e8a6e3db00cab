"""SendPipeline: one sink task's producer, sending encoded entries in batches with a few batches in flight.

Rows without a sharding key go out per topic in SEND_BATCH_MESSAGE batches
cut by bytes (:class:`EntryBatcher`; the producer picks the queue and retries
another broker); rows with one go to the queue its hash selects (Java
SelectMessageQueueByHash), and batches to one such queue are chained so a
key's messages keep their order. Delayed messages cannot be batched and are
sent one by one. At most ``depth`` sends are in flight; the next chunk is
encoded while they are. Every send must answer SEND_OK, else the task fails
with the broker's code and remark and the rows of the refused batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from client.client_config import ClientConfig
from client.exceptions import MQBrokerError, MQClientError
from client.message import Message, MessageQueue, SendResult, SendStatus
from client.producer import EncodedBatch, Producer, select_message_queue_by_hash
from common.message import decode_batch_body
from connectors.spark.entry_batcher import EntryBatcher, SinkBatch
from connectors.spark.errors import ConnectorError
from connectors.spark.sink_entries import EntryChunk
from remoting import RemotingError

__all__ = ["SendPipeline", "DEFAULT_BATCH_BYTES", "DEFAULT_BATCH_MESSAGES", "DEFAULT_IN_FLIGHT",
           "DEFAULT_MAX_MESSAGE_SIZE"]

DEFAULT_BATCH_BYTES = 256 * 1024
DEFAULT_BATCH_MESSAGES = 1024
DEFAULT_IN_FLIGHT = 4
DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024  # the producer's and the broker's default maxMessageSize


class SendPipeline:
    """See the module docstring; ``await send_all(chunks)`` returns how many messages were stored."""

    def __init__(self, name_server: str, group: str, *, batch_bytes: int = DEFAULT_BATCH_BYTES,
                 batch_size: int = DEFAULT_BATCH_MESSAGES, depth: int = DEFAULT_IN_FLIGHT, timeout: float = 10.0,
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, instance: str = "spark-sink"):
        self.name_server = name_server
        self.group = group
        self.batch_bytes = batch_bytes
        self.batch_size = batch_size
        self.max_message_size = max_message_size
        self.timeout = timeout
        self.instance = instance
        self._slots = asyncio.Semaphore(depth)
        self._inflight: set[asyncio.Task] = set()
        self._chains: dict[MessageQueue, asyncio.Task] = {}
        self._queues: dict[str, list[MessageQueue]] = {}
        self._batchers: dict[tuple[str, MessageQueue | None], EntryBatcher] = {}
        self._error: BaseException | None = None
        self.sent = 0

    async def send_all(self, chunks: Iterable[EntryChunk]) -> int:
        """Send every chunk's entries; raises the first failure once the sends in flight ended."""
        cfg = ClientConfig(namesrv_addr=self.name_server, instance_name=self.instance)
        producer = Producer(self.group, config=cfg, send_msg_timeout=self.timeout, batch_sends_under_load=False,
                            max_message_size=self.max_message_size)
        await producer.start()
        try:
            for chunk in chunks:
                if self._error is not None:
                    break
                await self._chunk(producer, chunk)
            for (topic, mq), batcher in self._batchers.items():
                batch = batcher.flush()
                if batch is not None and self._error is None:
                    await self._launch(producer, topic, batch, mq)
            if self._inflight:
                await asyncio.wait(list(self._inflight))
            if self._error is not None:
                raise self._error
            return self.sent
        finally:
            if self._inflight:  # failed while sends were out: let them end before the producer does
                await asyncio.wait(list(self._inflight))
            await producer.shutdown()

    async def _chunk(self, producer: Producer, chunk: EntryChunk) -> None:
        n, start = len(chunk.entries), chunk.start
        if chunk.topic is not None and chunk.shards is None and chunk.delays is None:
            # the common case: one topic, the producer picks the queues
            await self._batches(producer, chunk.topic, None, chunk.entries, chunk.uniq, range(start, start + n))
            return
        topics = chunk.topics or [chunk.topic] * n
        shards = chunk.shards or [None] * n
        delays = chunk.delays or [0] * n
        groups: dict[tuple[str, MessageQueue | None], list[int]] = {}
        for i, (topic, shard, delay) in enumerate(zip(topics, shards, delays, strict=True)):
            mq = None if shard is None else await self._queue_for(producer, topic, shard)
            if delay:
                await self._launch_delayed(producer, topic, chunk, i, delay, mq)
            else:
                groups.setdefault((topic, mq), []).append(i)
        import pyarrow as pa

        for (topic, mq), idx in groups.items():
            if idx[-1] - idx[0] + 1 == len(idx):  # contiguous rows: a slice, no copy
                entries, uniq = chunk.entries.slice(idx[0], len(idx)), chunk.uniq.slice(idx[0], len(idx))
            else:
                take = pa.array(idx, pa.int64())
                entries, uniq = chunk.entries.take(take), chunk.uniq.take(take)
            await self._batches(producer, topic, mq, entries, uniq, [start + i for i in idx])

    async def _batches(self, producer: Producer, topic: str, mq: MessageQueue | None, entries, uniq, rows) -> None:
        batcher = self._batchers.get((topic, mq))
        if batcher is None:
            batcher = self._batchers[(topic, mq)] = EntryBatcher(self.batch_bytes, self.batch_size,
                                                                 self.max_message_size)
        for batch in batcher.add(entries, uniq, rows):
            if self._error is not None:
                return
            await self._launch(producer, topic, batch, mq)

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

    async def _launch_delayed(self, producer: Producer, topic: str, chunk: EntryChunk, i: int, delay: int,
                              mq: MessageQueue | None) -> None:
        entry = decode_batch_body(chunk.entries[i].as_py())[0]  # rare: the entry back into a message
        msg = Message(topic, entry.body, properties=entry.properties, delay_time_level=delay)
        row = chunk.start + i
        await self._launch(producer, topic, SinkBatch(b"", [chunk.uniq[i].as_py()], row, row), mq, msg)

    async def _launch(self, producer: Producer, topic: str, batch: SinkBatch, mq: MessageQueue | None,
                      single: Message | None = None) -> None:
        await self._slots.acquire()
        before = self._chains.get(mq) if mq is not None else None
        task = asyncio.get_running_loop().create_task(self._send(producer, topic, batch, mq, before, single))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)
        if mq is not None:
            self._chains[mq] = task

    async def _send(self, producer: Producer, topic: str, batch: SinkBatch, mq: MessageQueue | None,
                    before: asyncio.Task | None, single: Message | None) -> None:
        what = f"sending {batch.count} message(s) ({batch.rows()}) to {topic} failed"
        try:
            if before is not None:  # same queue: keep the key's order
                await asyncio.wait([before])
            if self._error is not None:
                return
            try:
                if single is not None:
                    result = await producer.send(single, mq)
                else:  # entries checked by sink_entries: the producer checks topic and size only
                    result = await producer.send_encoded_batch(EncodedBatch(topic, batch.body, batch.uniq_keys), mq)
            except MQBrokerError as e:
                raise ConnectorError(f"{what}: CODE: {e.code} DESC: {e.remark} BROKER: {e.addr}", e.code) from e
            except MQClientError as e:
                raise ConnectorError(f"{what}: {e}", e.code) from e
            except RemotingError as e:
                raise ConnectorError(f"{what}: {e}") from e
            self._check(result, topic, batch)
            self.sent += batch.count
        except BaseException as e:  # noqa: BLE001 - kept for send_all to raise in the task
            if self._error is None:
                self._error = e
        finally:
            self._slots.release()

    @staticmethod
    def _check(result: SendResult, topic: str, batch: SinkBatch) -> None:
        if result.send_status != SendStatus.SEND_OK:
            raise ConnectorError(f"sending {batch.count} message(s) ({batch.rows()}) to {topic}: broker answered "
                                 f"{result.send_status.value}, not SEND_OK")

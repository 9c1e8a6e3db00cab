"""AsyncTraceDispatcher: trace records leave in batches, off the caller's path.

``append`` only queues (bounded: when full the record is dropped and counted, as RocketMQ's
dispatcher does, so tracing never slows or blocks sends and consumes). A task takes up to
``batch_size`` records at a time, packs them into trace messages of at most
``max_msg_size`` bytes and sends them with an inner producer (group
``_INNER_TRACE_PRODUCER-<group>``, its own client instance) to the trace topic. A failed
trace send is logged and dropped; it never reaches the application.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol

from client.client_config import ClientConfig
from client.message import Message
from client.trace.trace_data_encoder import (
    GROUP_NAME_PREFIX,
    TRACE_INSTANCE_PREFIX,
    TraceContext,
    encode_context,
)
from common.mixall import RMQ_SYS_TRACE_TOPIC

__all__ = ["AsyncTraceDispatcher"]

log = logging.getLogger("client.trace")
_MAX_KEYS_CHARS = 16 * 1024


class TraceProducer(Protocol):
    """What the dispatcher needs of the producer it sends the trace records with."""

    async def start(self) -> None: ...

    async def send(self, msg: Message) -> Any: ...

    async def shutdown(self) -> None: ...


class AsyncTraceDispatcher:
    """``producer_factory(group, config=, batch_sends_under_load=, retry_times_when_send_failed=)``
    makes the dispatcher's own producer (client.producer.Producer, passed in by its owners: a
    producer may own a dispatcher, so this module does not import the producer's)."""

    def __init__(self, group: str, config: ClientConfig, trace_topic: str | None = None, *,
                 producer_factory: Callable[..., TraceProducer],
                 queue_size: int = 2048, batch_size: int = 100, max_msg_size: int = 128 * 1024,
                 flush_interval: float = 0.1):
        self.group = group
        self._producer_factory = producer_factory
        self.trace_topic = trace_topic or RMQ_SYS_TRACE_TOPIC
        self.queue_size = queue_size
        self.batch_size = batch_size
        self.max_msg_size = max_msg_size
        self.flush_interval = flush_interval
        self._config = ClientConfig(namesrv_addr=config.namesrv_addr, client_ip=config.client_ip,
                                    instance_name=f"{TRACE_INSTANCE_PREFIX}_{abs(hash(config.namesrv_addr)) % 10**9}",
                                    namespace=config.namespace)
        self._queue: collections.deque[TraceContext] = collections.deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._producer: TraceProducer | None = None
        self._closing = False
        self.dropped = 0
        self.sent_messages = 0
        self.failed_messages = 0

    async def start(self) -> None:
        if self._task is not None:
            return
        self._producer = self._producer_factory(f"{GROUP_NAME_PREFIX}-{self.group}", config=self._config,
                                                batch_sends_under_load=False, retry_times_when_send_failed=1)
        await self._producer.start()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"trace-dispatcher-{self.group}")

    def append(self, ctx: TraceContext) -> bool:
        """Queue one record set; False (and counted) when the queue is full."""
        if len(self._queue) >= self.queue_size:
            self.dropped += 1
            return False
        self._queue.append(ctx)
        if len(self._queue) >= self.batch_size:
            self._wake.set()
        return True

    async def _run(self) -> None:
        while not self._closing:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.flush_interval)
            self._wake.clear()
            while self._queue:
                await self._send_batch(self._take())
        while self._queue:  # closing: what was recorded before stop() still goes out
            await self._send_batch(self._take())

    def _take(self) -> list[TraceContext]:
        batch = []
        while self._queue and len(batch) < self.batch_size:
            batch.append(self._queue.popleft())
        return batch

    async def _send_batch(self, batch: list[TraceContext]) -> None:
        data: list[str] = []
        keys: dict[str, None] = {}
        size = keys_len = 0
        for ctx in batch:
            text, ks = encode_context(ctx)
            if not text:
                continue
            # the body within max_msg_size, the KEYS property well under the broker's 32 KiB for properties
            if size and (size + len(text) > self.max_msg_size or keys_len > _MAX_KEYS_CHARS):
                await self._send(data, keys)
                data, keys, size, keys_len = [], {}, 0, 0
            data.append(text)
            size += len(text)
            for k in ks:
                if k not in keys:
                    keys[k] = None
                    keys_len += len(k) + 1
        if data:
            await self._send(data, keys)

    async def _send(self, data: list[str], keys: dict[str, None]) -> None:
        msg = Message(self.trace_topic, "".join(data).encode(), keys=list(keys))
        try:
            await self._producer.send(msg)
            self.sent_messages += 1
        except Exception as e:  # noqa: BLE001 - tracing must never fail the application
            self.failed_messages += 1
            log.warning("sending trace data to %s failed: %s", self.trace_topic, e)

    async def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued (bounded by ``timeout``: a batch in flight is not cut short before),
        then close the inner producer."""
        if self._task is None:
            return
        self._closing = True
        self._wake.set()
        task, self._task = self._task, None
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except Exception:  # noqa: BLE001 - timeout or failure: give up on the rest, never raise
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            if self._queue:
                log.warning("trace dispatcher of %s: %d records not sent at shutdown", self.group, len(self._queue))
                self.dropped += len(self._queue)
                self._queue.clear()
        if self._producer is not None:
            await self._producer.shutdown()
            self._producer: TraceProducer | None = None

"""MessageAccumulator: under load, concurrent sends to one broker travel as one batch request.

aiokafka's accumulator/sender shape: ``send()`` appends the message to the
pending deque of its (topic, broker) and waits on a future; at most
``max_in_flight`` sender tasks per key each take everything pending (up to
``max_batch_messages`` / ``max_batch_bytes``) and send it: a lone message as
SEND_MESSAGE_V2, several as one SEND_BATCH_MESSAGE to the chosen queue. With
little load nothing waits (the first message goes out at once); under load,
messages pile up while requests are in flight and share the next request.
A request that fails in transport fails every future of its batch (the
producer's retry loop then tries each message again on another broker); a
batch the broker refuses is re-sent message by message, so one bad message
cannot fail its neighbours.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from client.exceptions import MQBrokerError, RequestTimeoutError
from client.message import Message, MessageBatch, SendResult
from remoting.body.consumer import MessageQueue

__all__ = ["MessageAccumulator"]


class MessageAccumulator:
    """See the module docstring. ``producer`` provides ``_send_kernel(msg_or_batch, mq, mode, timeout)``."""

    def __init__(self, producer, max_batch_messages: int = 64, max_batch_bytes: int = 512 * 1024,
                 max_in_flight: int = 2):
        self.producer = producer
        self.max_batch_messages = max_batch_messages
        self.max_batch_bytes = max_batch_bytes
        self.max_in_flight = max_in_flight
        self._pending: dict[tuple[str, str], deque] = {}
        self._in_flight: dict[tuple[str, str], int] = {}
        self._tasks: set[asyncio.Task] = set()
        self.batches_sent = 0
        self.messages_batched = 0

    async def send(self, msg: Message, mq: MessageQueue, timeout: float) -> SendResult:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        key = (mq.topic, mq.brokerName)
        q = self._pending.get(key)
        if q is None:
            q = self._pending[key] = deque()
        q.append((msg, mq, fut, time.monotonic() + timeout))
        if self._in_flight.get(key, 0) < self.max_in_flight:
            self._in_flight[key] = self._in_flight.get(key, 0) + 1
            task = loop.create_task(self._sender(key, q))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await fut

    def _take(self, q: deque) -> list:
        batch, size = [], 0
        while q and len(batch) < self.max_batch_messages:
            msg = q[0][0]
            n = len(msg.body) + 128
            if batch and size + n > self.max_batch_bytes:
                break
            batch.append(q.popleft())
            size += n
        return batch

    async def _sender(self, key: tuple[str, str], q: deque) -> None:
        try:
            while q:
                entries = self._take(q)
                now = time.monotonic()
                live = []
                for e in entries:
                    if e[2].done():
                        continue
                    if e[3] <= now:
                        e[2].set_exception(RequestTimeoutError(f"send to {key[0]} timed out while queued"))
                    else:
                        live.append(e)
                if live:
                    await self._send(live)
        finally:
            self._in_flight[key] -= 1
            if not self._in_flight[key]:
                del self._in_flight[key]
                if not q:
                    self._pending.pop(key, None)

    async def _send(self, entries: list) -> None:
        mq = entries[0][1]
        timeout = min(e[3] for e in entries) - time.monotonic()
        try:
            if len(entries) == 1:
                results = [await self.producer._send_kernel(entries[0][0], mq, "SYNC", timeout)]
            else:
                batch = MessageBatch([e[0] for e in entries])
                r = await self.producer._send_kernel(batch, mq, "SYNC", timeout)
                self.batches_sent += 1
                self.messages_batched += len(entries)
                results = _split(r, len(entries))
        except MQBrokerError as exc:
            if len(entries) > 1:
                # the broker refused the batch as a whole: send each alone so one bad message fails alone
                await asyncio.gather(*(self._send([e]) for e in entries))
                return
            if not entries[0][2].done():
                entries[0][2].set_exception(exc)
            return
        except BaseException as exc:  # every waiter gets the failure; retries happen in the producer
            for e in entries:
                if not e[2].done():
                    e[2].set_exception(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
            return
        for e, r in zip(entries, results, strict=True):
            if not e[2].done():
                e[2].set_result(r)

    async def close(self) -> None:
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=10)


def _split(r: SendResult, n: int) -> list[SendResult]:
    ids = r.msg_id.split(",")
    offs = r.offset_msg_id.split(",") if r.offset_msg_id else [""] * n
    if len(ids) != n:
        ids = (ids + [""] * n)[:n]
    if len(offs) != n:
        offs = (offs + [""] * n)[:n]
    return [SendResult(r.send_status, ids[i], r.message_queue, r.queue_offset + i, offs[i], r.transaction_id,
                       r.region_id, r.trace_on) for i in range(n)]

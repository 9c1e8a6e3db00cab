"""Blocking facade for threaded code: the asyncio clients driven from a private event-loop thread.

Each facade owns one background thread running a uvloop (or asyncio) loop;
every method submits the coroutine there and waits for its result. Listeners
registered through a blocking consumer run on its consume thread pool, so
they may block freely.

    producer = BlockingProducer("pg", "127.0.0.1:9876"); producer.start()
    result = producer.send(Message("TopicA", b"hello"))
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from remoting import new_event_loop

__all__ = ["LoopThread", "BlockingProducer", "BlockingPushConsumer", "BlockingLitePullConsumer",
           "BlockingTransactionProducer", "BlockingAdmin"]

T = TypeVar("T")


class LoopThread:
    """An event loop running in a daemon thread; ``run(coro)`` blocks until the coroutine finishes."""

    def __init__(self, name: str = "rocketmq-client"):
        self.loop = new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self._thread:
            raise RuntimeError("blocking call from the client's own loop thread (use the async API there)")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, fn, *args) -> Any:
        """Run a plain function on the loop thread and return its result."""

        async def wrap():
            return fn(*args)

        return self.run(wrap())

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self.loop.is_running():
            self.loop.close()


class _Facade:
    _inner_cls: type = object

    def __init__(self, *args, **kwargs):
        self._lt = LoopThread(f"{self._inner_cls.__name__}-loop")
        self.inner = self._lt.call(lambda: self._inner_cls(*args, **kwargs))

    def start(self) -> None:
        self._lt.run(self.inner.start())

    def shutdown(self) -> None:
        try:
            self._lt.run(self.inner.shutdown(), 60)
        finally:
            self._lt.stop()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()


class BlockingProducer(_Facade):
    """Blocking :class:`client.producer.Producer`."""

    from client.producer import Producer as _inner_cls  # noqa: N813

    def send(self, msg, *args, **kwargs):
        return self._lt.run(self.inner.send(msg, *args, **kwargs))

    def send_async(self, msg, callback=None, **kwargs) -> Future:
        """Returns a concurrent.futures.Future; ``callback(result, error)`` runs on the loop thread."""

        async def go():
            return await self.inner.send_async(msg, callback, **kwargs)

        return self._lt.submit(go())

    def send_oneway(self, msg, *args, **kwargs) -> None:
        self._lt.run(self.inner.send_oneway(msg, *args, **kwargs))

    def send_batch(self, msgs, *args, **kwargs):
        return self._lt.run(self.inner.send_batch(msgs, *args, **kwargs))

    def fetch_publish_message_queues(self, topic: str):
        return self._lt.run(self.inner.fetch_publish_message_queues(topic))


class BlockingTransactionProducer(BlockingProducer):
    """Blocking :class:`client.transaction_producer.TransactionProducer`."""

    from client.transaction_producer import TransactionProducer as _inner_cls  # noqa: N813

    def send_message_in_transaction(self, msg, arg=None):
        return self._lt.run(self.inner.send_message_in_transaction(msg, arg))


class BlockingPushConsumer(_Facade):
    """Blocking :class:`client.push_consumer.PushConsumer`; plain-function listeners run on its thread pool."""

    from client.push_consumer import PushConsumer as _inner_cls  # noqa: N813

    def subscribe(self, topic: str, expression: str = "*", expression_type: str = "TAG") -> None:
        self._lt.call(self.inner.subscribe, topic, expression, expression_type)

    def register_message_listener(self, listener) -> None:
        self.inner.register_message_listener(listener)

    def register_message_listener_orderly(self, listener) -> None:
        self.inner.register_message_listener_orderly(listener)


class BlockingLitePullConsumer(_Facade):
    """Blocking :class:`client.lite_pull_consumer.LitePullConsumer`."""

    from client.lite_pull_consumer import LitePullConsumer as _inner_cls  # noqa: N813

    def subscribe(self, topic: str, expression: str = "*", expression_type: str = "TAG") -> None:
        self._lt.call(self.inner.subscribe, topic, expression, expression_type)

    def assign(self, mqs) -> None:
        self._lt.call(self.inner.assign, mqs)

    def poll(self, timeout: float | None = None):
        return self._lt.run(self.inner.poll(timeout))

    def seek(self, mq, offset: int) -> None:
        self._lt.run(self.inner.seek(mq, offset))

    def commit_sync(self) -> None:
        self._lt.run(self.inner.commit_sync())

    def committed(self, mq) -> int:
        return self._lt.run(self.inner.committed(mq))

    def fetch_message_queues(self, topic: str):
        return self._lt.run(self.inner.fetch_message_queues(topic))


class BlockingAdmin:
    """Blocking :class:`client.admin.MQAdmin`: any admin coroutine method, called synchronously."""

    def __init__(self, namesrv_addr: str | None = None, timeout: float = 5.0):
        from client.admin import MQAdmin

        self._lt = LoopThread("admin-loop")
        self.inner = self._lt.call(lambda: MQAdmin(namesrv_addr, timeout))

    def __getattr__(self, name: str):
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            return self._lt.run(attr(*args, **kwargs))

        return call

    def close(self) -> None:
        try:
            self._lt.run(self.inner.close())
        finally:
            self._lt.stop()

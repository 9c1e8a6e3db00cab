"""Client shutdown while work is still in flight: nothing may be left for asyncio to complain about."""

from __future__ import annotations

import asyncio
import gc
import socket

from client import Message, Producer
from tests.client.conftest import unique
from tests.support import async_wait_until


async def test_producer_shutdown_during_route_update_leaves_no_unretrieved_task_exception():
    """A short-lived producer (a Spark sink task's) shut down while its route request is unanswered.

    The route fetch is a task shared by every caller; the send that started it is cancelled and the
    producer shut down, which closes the connection under the fetch. Its failure must be retrieved
    (or the task cancelled and awaited): asyncio otherwise reports "Task exception was never
    retrieved" through the loop's exception handler when the task is collected.
    """
    loop = asyncio.get_running_loop()
    reported: list[dict] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, ctx: reported.append(ctx))
    # a NameServer that accepts connections and never answers keeps the route request in flight
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        addr = f"127.0.0.1:{silent.getsockname()[1]}"
        try:
            p = Producer(unique("PGShutdown"), addr, send_msg_timeout=30.0)
            await p.start()
            inst = p.instance
            send = loop.create_task(p.send(Message(unique("TopicShutdown"), b"x")))
            await async_wait_until(lambda: inst._route_fetches, 10, what="a route fetch in flight")
            fetches = list(inst._route_fetches.values())
            send.cancel()
            await p.shutdown()
            assert all(f.done() for f in fetches), "shutdown returned with a route fetch still running"
            fetches = send = inst = p = None  # drop the last references: the tasks get collected
            for _ in range(3):
                await asyncio.sleep(0)
                gc.collect()
        finally:
            loop.set_exception_handler(previous)
    assert [c.get("message") for c in reported] == []

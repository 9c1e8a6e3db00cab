"""Send a few messages (run: python examples/producer.py -n 127.0.0.1:9876 -t TopicTest)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from client import Message, Producer, select_message_queue_by_hash  # noqa: E402


async def main(namesrv: str, topic: str, count: int) -> None:
    async with Producer("example_producer_group", namesrv) as producer:
        # synchronous send: waits for the broker's answer
        for i in range(count):
            msg = Message(topic, f"Hello RocketMQ {i}".encode(), tags="TagA", keys=f"key-{i}")
            msg.put_user_property("index", str(i))
            result = await producer.send(msg)
            print(result)
        # many sends in flight at once share the broker connection's writes
        results = await asyncio.gather(*(producer.send(Message(topic, b"concurrent %d" % i)) for i in range(count)))
        print(f"{len(results)} concurrent sends: {results[0].send_status.value}")
        # ordered: every message of one order id goes to the same queue
        for i in range(count):
            order_id = i % 3
            await producer.send(Message(topic, f"order {order_id} step {i}".encode()),
                                selector=select_message_queue_by_hash, arg=order_id)
        # batch: one request, one queue, consecutive offsets
        batch = await producer.send_batch([Message(topic, b"batch %d" % i) for i in range(count)])
        print("batch:", batch)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", dest="namesrv", default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"))
    ap.add_argument("-t", dest="topic", default="TopicTest")
    ap.add_argument("-c", dest="count", type=int, default=10)
    a = ap.parse_args()
    asyncio.run(main(a.namesrv, a.topic, a.count))

"""Consume a topic until interrupted or ``-c`` messages arrived
(run: python examples/consumer.py -n 127.0.0.1:9876 -t TopicTest)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from client import ConsumeConcurrentlyStatus, ConsumeFromWhere, PushConsumer, msg_id_of  # noqa: E402


async def main(namesrv: str, topic: str, count: int, timeout: float) -> None:
    done = asyncio.Event()
    seen = 0

    async def listener(msgs, context):
        nonlocal seen
        for m in msgs:
            print(f"{msg_id_of(m)} {m.topic} queue={m.queue_id} offset={m.queue_offset} "
                  f"tags={m.tags} body={m.body.decode(errors='replace')}")
        seen += len(msgs)
        if count and seen >= count:
            done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer("example_consumer_group", namesrv,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    async with consumer:
        try:
            await asyncio.wait_for(done.wait(), timeout)
        except TimeoutError:
            pass
    print(f"consumed {seen} messages")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", dest="namesrv", default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"))
    ap.add_argument("-t", dest="topic", default="TopicTest")
    ap.add_argument("-c", dest="count", type=int, default=0, help="stop after this many messages (0 = no limit)")
    ap.add_argument("--timeout", type=float, default=60.0, help="stop after this many seconds")
    a = ap.parse_args()
    asyncio.run(main(a.namesrv, a.topic, a.count, a.timeout))

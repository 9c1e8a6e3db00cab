"""Soak (pytest -m soak): steady sends while consumers join and leave and a broker restarts.

Every message the producer saw acknowledged must be consumed at least once.
Bounded: ``SECONDS`` of load at ``RATE`` messages/s at most.
"""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from client import ClientConfig, ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from client.message import msg_id_of
from tests.client.conftest import create_topic, unique, wait_for

pytestmark = pytest.mark.soak

SECONDS = 40
RATE = 300


async def test_soak_churn_and_broker_restart(own_cluster):
    c = own_cluster(brokers=2)
    ns = c.namesrv_addr
    topic, group = unique("SoakTopic"), unique("SoakGroup")
    await create_topic(ns, topic, c.brokers)
    consumed: set[str] = set()

    async def listener(msgs, ctx):
        consumed.update(msg_id_of(m) for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def new_consumer() -> PushConsumer:
        pc = PushConsumer(group, config=ClientConfig(namesrv_addr=ns, persist_consumer_offset_interval=1.0),
                          consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        pc.subscribe(topic)
        pc.register_message_listener(listener)
        return pc

    acked: set[str] = set()
    stop = time.monotonic() + SECONDS
    rng = random.Random(7)

    async def produce():
        async with Producer(unique("SoakPG"), ns) as p:
            i = 0
            while time.monotonic() < stop:
                try:
                    r = await p.send(Message(topic, b"soak %d" % i))
                    acked.add(r.msg_id)
                except Exception:
                    pass  # a send during the restart may fail after its retries; it is simply not acked
                i += 1
                await asyncio.sleep(1 / RATE)

    consumers = [new_consumer()]
    await consumers[0].start()
    prod = asyncio.get_running_loop().create_task(produce())
    restarted = False
    try:
        while time.monotonic() < stop:
            await asyncio.sleep(rng.uniform(2, 5))
            if len(consumers) < 3 and rng.random() < 0.6:
                consumers.append(new_consumer())
                await consumers[-1].start()
            elif len(consumers) > 1:
                await consumers.pop(rng.randrange(len(consumers))).shutdown()
            if not restarted and time.monotonic() > stop - SECONDS / 2:
                c.brokers[1].stop()
                c.brokers[1].start()
                restarted = True
        await prod
        await wait_for(lambda: acked <= consumed, 90, "every acknowledged message consumed")
    finally:
        prod.cancel()
        for pc in consumers:
            await pc.shutdown()
    assert len(acked) > SECONDS * RATE // 10

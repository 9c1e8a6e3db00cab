"""Helpers for the connector tests: topics, sends and pulls against real broker processes."""

from __future__ import annotations

import itertools

from client.blocking import BlockingAdmin, BlockingProducer
from client.message import Message, SendResult, SendStatus
from connectors.spark.range_puller import RangePuller
from connectors.spark.topic_metadata import TopicMetadata
from remoting.body.topic_config import TopicConfig
from tests.support import wait_until

_names = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}_{next(_names)}"


def create_topic(ns: str, topic: str, brokers, queues: int = 4) -> None:
    """UPDATE_AND_CREATE_TOPIC on each broker, then wait until the NameServer routes every one."""
    admin = BlockingAdmin(ns)
    try:
        for b in brokers:
            admin.create_topic(b.addr, TopicConfig(topicName=topic, readQueueNums=queues, writeQueueNums=queues))

        def routed():
            try:
                qds = admin.topic_route(topic).queueDatas
                return len(qds) == len(brokers) and all(q.readQueueNums == queues for q in qds)
            except Exception:
                return False

        wait_until(routed, 15, 0.05, f"route of {topic}")
    finally:
        admin.close()


def send(ns: str, msgs: list[Message], group: str | None = None) -> list[SendResult]:
    """Send each message synchronously (round robin over the queues); every one must be SEND_OK."""
    p = BlockingProducer(group or unique("pg"), ns)
    p.start()
    try:
        out = [p.send(m) for m in msgs]
    finally:
        p.shutdown()
    assert all(r.send_status == SendStatus.SEND_OK for r in out)
    return out


def pull_all(ns: str, topic: str) -> list:
    """Every message of ``topic`` pulled queue by queue from min to max (no Spark involved)."""
    meta = TopicMetadata(ns)
    try:
        queues = dict(meta.queues(topic))
        mins, maxs = meta.min_offsets(queues), meta.max_offsets(queues)
    finally:
        meta.close()
    out = []
    for k, addr in sorted(queues.items()):
        p = RangePuller(ns, addr, k[0], k[1], k[2], mins[k], maxs[k], group="connector-test-check")
        out.extend((k[1], m) for m in p.messages())
    return out


def consumer_offsets(ns: str, group: str, topic: str) -> dict[tuple[str, int], int]:
    admin = BlockingAdmin(ns)
    try:
        stats = admin.consume_stats(group, topic)
    finally:
        admin.close()
    return {(mq.brokerName, mq.queueId): w.consumerOffset for mq, w in stats.offsetTable.items()}

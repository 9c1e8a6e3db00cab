"""Routes turned into the queue lists producers and consumers use (broker-behaviour.md §19)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from common.perm import is_readable, is_writeable
from remoting.body.consumer import MessageQueue
from remoting.body.route import MASTER_ID, TopicRouteData

__all__ = ["TopicPublishInfo", "route_to_publish_info", "route_to_subscribe_info", "sort_key"]


def sort_key(mq: MessageQueue) -> tuple:
    """Java's MessageQueue.compareTo: topic, brokerName, queueId (UTF-16 order == code point order here)."""
    return (mq.topic, mq.brokerName, mq.queueId)


class _Index:
    """ThreadLocalIndex: a send counter starting at a random value."""

    __slots__ = ("v",)

    def __init__(self) -> None:
        self.v = random.randrange(1 << 16)

    def next(self) -> int:
        self.v = (self.v + 1) & 0x7FFFFFFF
        return self.v


@dataclass
class TopicPublishInfo:
    """Writable queues of a topic in publish order."""

    order_topic: bool = False
    have_topic_router_info: bool = False
    message_queues: list[MessageQueue] = field(default_factory=list)
    route: TopicRouteData | None = None
    send_which_queue: _Index = field(default_factory=_Index)

    def ok(self) -> bool:
        return bool(self.message_queues)

    def select_one_message_queue(self, last_broker_name: str | None = None) -> MessageQueue:
        """Round robin; on a retry avoid the broker that just failed when another exists."""
        mqs = self.message_queues
        if last_broker_name is None:
            return mqs[self.send_which_queue.next() % len(mqs)]
        for _ in range(len(mqs)):
            mq = mqs[self.send_which_queue.next() % len(mqs)]
            if mq.brokerName != last_broker_name:
                return mq
        return mqs[self.send_which_queue.next() % len(mqs)]

    def queue_id_by_broker(self, broker_name: str) -> int:
        for qd in self.route.queueDatas if self.route else ():
            if qd.brokerName == broker_name:
                return qd.writeQueueNums
        return -1


def route_to_publish_info(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    """Publish queues: orderTopicConf if set, else sorted QueueData with write perm and a master."""
    info = TopicPublishInfo(route=route)
    if route.orderTopicConf:
        for item in route.orderTopicConf.split(";"):
            name, _, count = item.partition(":")
            if name and count.strip().isdigit():
                info.message_queues.extend(MessageQueue(topic, name, i) for i in range(int(count)))
        info.order_topic = True
    else:
        brokers = {b.brokerName: b for b in route.brokerDatas}
        for qd in sorted(route.queueDatas, key=lambda q: q.brokerName):
            if not is_writeable(qd.perm):
                continue
            bd = brokers.get(qd.brokerName)
            if bd is None or MASTER_ID not in bd.brokerAddrs:
                continue
            info.message_queues.extend(MessageQueue(topic, qd.brokerName, i) for i in range(qd.writeQueueNums))
    info.have_topic_router_info = True
    return info


def route_to_subscribe_info(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """Subscribe queues: every readable QueueData, queues 0..readQueueNums-1."""
    out: set[MessageQueue] = set()
    for qd in route.queueDatas:
        if is_readable(qd.perm):
            out.update(MessageQueue(topic, qd.brokerName, i) for i in range(qd.readQueueNums))
    return out

"""mqadmin commands that read queues directly: consumeMessage, queryCq and producer."""

from __future__ import annotations

import json

from client.admin import MQAdmin
from client.exceptions import MQClientError
from common.message import MessageConst
from remoting.body.route import MASTER_ID
from tools.mqadmin_command import _group, _topic, command


def _setup_consume_message(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-b", dest="brokerName")
    p.add_argument("-i", dest="queueId", type=int)
    p.add_argument("-o", dest="offset", type=int)
    p.add_argument("-g", dest="consumerGroup")
    p.add_argument("-s", dest="beginTimestamp", type=int)
    p.add_argument("-e", dest="endTimestamp", type=int)
    p.add_argument("-c", dest="messageNumber", type=int, default=128)


@command("consumeMessage", "Consume message", _setup_consume_message)
async def consume_message(admin: MQAdmin, args) -> None:
    mqs = await admin.subscribe_queues(_topic(args.topic))
    if args.brokerName is not None:
        mqs = [q for q in mqs if q.brokerName == args.brokerName]
    if args.queueId is not None:
        mqs = [q for q in mqs if q.queueId == args.queueId]
    if not mqs:
        raise MQClientError("no such message queue")
    left = max(args.messageNumber, 0)
    for mq in mqs:
        addr = None
        route = await admin.topic_route(args.topic)
        for bd in route.brokerDatas:
            if bd.brokerName == mq.brokerName:
                addr = bd.brokerAddrs.get(MASTER_ID) or bd.select_broker_addr()
        lo = await admin.api.get_min_offset(addr, mq)
        hi = await admin.api.get_max_offset(addr, mq)
        if args.beginTimestamp is not None:
            lo = max(lo, await admin.api.search_offset(addr, mq, args.beginTimestamp))
        if args.offset is not None:
            lo = max(lo, args.offset)
        if args.endTimestamp is not None:
            hi = min(hi, await admin.api.search_offset(addr, mq, args.endTimestamp))
        off = lo
        while off < hi and left > 0:
            msgs = await admin.query_message_by_offset(args.topic, mq.brokerName, mq.queueId, off, min(32, left))
            if not msgs:
                break
            for m in msgs:
                if left <= 0:
                    break
                mid = m.properties.get(MessageConst.UNIQ_KEY) or m.msg_id
                print(f"MSGID: {mid} QUEUE: {mq.brokerName}:{mq.queueId} OFFSET: {m.queue_offset} "
                      f"TAGS: {m.properties.get(MessageConst.TAGS, '')} BODY: {m.body.decode('utf-8', 'replace')}")
                left -= 1
            off = msgs[-1].queue_offset + 1
    print("Consume ok")


# -- consume queues and producers (admin extras) ------------------------------------------------------------------


def _setup_query_cq(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-q", dest="queueId", type=int, required=True, help="queue num, ie. 1")
    p.add_argument("-i", dest="index", type=int, required=True, help="start queue index.")
    p.add_argument("-c", dest="count", type=int, default=10, help="how many.")
    p.add_argument("-b", dest="brokerAddr", help="broker addr.")
    p.add_argument("-g", dest="consumerGroup", help="consumer group.")


@command("queryCq", "Query cq command.", _setup_query_cq)
async def query_cq(admin: MQAdmin, args) -> None:
    topic = _topic(args.topic)
    group = _group(args.consumerGroup) if args.consumerGroup else None
    addr = args.brokerAddr
    if not addr:
        route = await admin.topic_route(topic)
        addrs = route.brokerDatas[0].brokerAddrs if route.brokerDatas else {}
        if MASTER_ID not in addrs:
            raise MQClientError("No topic route data!")
        addr = addrs[MASTER_ID]
    body = await admin.query_consume_queue(addr, topic, args.queueId, args.index, args.count, group)
    sep = "======================================"
    if body.subscriptionData is not None:
        pretty = json.dumps(body.subscriptionData.to_dict(), ensure_ascii=False, indent="\t", separators=(",", ":"))
        print(f"Subscription data: \n{pretty}")
        print(sep)
    if body.filterData is not None:
        print(f"Filter data: \n{body.filterData}")
        print(sep)
    print(f"Queue data: \nmax: {body.maxQueueIndex}, min: {body.minQueueIndex}")
    print(sep)
    for i, unit in enumerate(body.queueData or [], args.index):
        print(f"idx: {i}")
        print(unit)
        print(sep)


def _setup_producer(p):
    p.add_argument("-b", dest="brokerAddr", required=True, help="broker address")


@command("producer", "Query producer's instances, connection, status, etc.", _setup_producer)
async def producer_info(admin: MQAdmin, args) -> None:
    table = await admin.get_all_producer_info(args.brokerAddr)
    for group, instances in table.data.items():
        if not instances:
            print(f"producer group ({group}) instances are empty")
            continue
        for p in instances:
            print(f"producer group ({group}) instance : {p}")

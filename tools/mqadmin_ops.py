"""mqadmin commands over client.admin_ops: --json for the table commands, and the topic, group and
message commands of RocketMQ 4.9.7's tool that tools/mqadmin.py lacked.

Text output follows the Java tool's formats (column headers and widths); ``--json``
prints the admin layer's data, the same the dashboard's API answers.
"""

from __future__ import annotations

import json
from typing import Any

from client import admin_ops as ops
from client.admin_ext import MQAdminExt
from client.allocate_strategy import allocate_averagely
from client.exceptions import MQClientError
from common.message import MessageConst, MessageExt
from remoting.body.route import MASTER_ID
from tools.mqadmin_command import (
    JSON_DATA,
    UsageError,
    _bool,
    _group,
    _target_addrs,
    _topic,
    data_command,
    fmt_time,
    parse_reset_timestamp,
    print_msg,
)


def json_for(name: str):
    """--json for an existing text command of tools/mqadmin.py."""

    def deco(fn):
        JSON_DATA[name] = fn
        return fn

    return deco


# -- --json for the existing commands ----------------------------------------------------------------------


@json_for("topicList")
async def _topic_list_json(admin: MQAdminExt, args):
    return await ops.list_topics(admin)


@json_for("topicStatus")
async def _topic_status_json(admin: MQAdminExt, args):
    return await ops.topic_status(admin, _topic(args.topic))


@json_for("topicRoute")
async def _topic_route_json(admin: MQAdminExt, args):
    return (await admin.topic_route(_topic(args.topic))).to_obj()


@json_for("clusterList")
async def _cluster_list_json(admin: MQAdminExt, args):
    data = await ops.cluster_overview(admin)
    if args.clusterName:
        data["brokers"] = [b for b in data["brokers"] if b["cluster"] == args.clusterName]
    return data


@json_for("brokerStatus")
async def _broker_status_json(admin: MQAdminExt, args):
    return {addr: await admin.broker_runtime_info(addr) for addr in await _target_addrs(admin, args)}


@json_for("getBrokerConfig")
async def _broker_config_json(admin: MQAdminExt, args):
    return {addr: await admin.get_broker_config(addr) for addr in await _target_addrs(admin, args)}


@json_for("consumerProgress")
async def _consumer_progress_json(admin: MQAdminExt, args):
    if not args.groupName:
        return await ops.list_groups(admin, limit=500)
    return await ops.group_progress(admin, _group(args.groupName), args.topicName)


@json_for("consumerConnection")
async def _consumer_connection_json(admin: MQAdminExt, args):
    return await ops.group_connection(admin, _group(args.consumerGroup))


@json_for("resetOffsetByTime")
async def _reset_offset_json(admin: MQAdminExt, args):
    return await ops.reset_offset(admin, _group(args.group), _topic(args.topic),
                                  parse_reset_timestamp(args.timestamp), args.force)


@json_for("queryMsgByKey")
async def _query_by_key_json(admin: MQAdminExt, args):
    return await ops.search_messages(admin, _topic(args.topic), key=args.msgKey, begin=args.beginTimestamp,
                                     end=args.endTimestamp, limit=min(args.maxNum, ops.MAX_PAGE))


@json_for("queryMsgById")
async def _query_by_id_json(admin: MQAdminExt, args):
    return [await ops.message_detail(admin, mid.strip(), args.topic) for mid in args.msgId.split(",") if mid.strip()]


@json_for("queryMsgByOffset")
async def _query_by_offset_json(admin: MQAdminExt, args):
    msgs = await admin.query_message_by_offset(_topic(args.topic), args.brokerName, args.queueId, args.offset)
    if not msgs:
        raise MQClientError("no message at that offset")
    return ops.message_to_dict(msgs[0], with_body=True)


# -- topics ----------------------------------------------------------------------------------------------------


def _setup_topic_cluster(p):
    p.add_argument("-t", dest="topic", required=True)


def _print_lines(args, data) -> None:
    for line in data:
        print(line)


@data_command("topicClusterList", "get cluster info for topic", _setup_topic_cluster, _print_lines)
async def topic_cluster_list(admin: MQAdminExt, args):
    route = await admin.topic_route(_topic(args.topic))
    return sorted({bd.cluster for bd in route.brokerDatas})


def _setup_update_topic_perm(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-b", dest="brokerAddr")
    p.add_argument("-c", dest="clusterName")
    p.add_argument("-p", dest="perm", type=int, required=True, help="set topic's permission(2|4|6), intro[2:W; 4:R; 6:RW]")


def _print_topic_perm(args, data) -> None:
    if data.get("unchanged"):
        print("new perm equals to the old one!")
        return
    for addr in data["brokers"]:
        print(f"update topic perm from {data['oldPerm']} to {data['perm']} in {addr} success.")


@data_command("updateTopicPerm", "Update topic perm", _setup_update_topic_perm, _print_topic_perm)
async def update_topic_perm(admin: MQAdminExt, args):
    if args.perm not in (2, 4, 6):
        raise UsageError(f"bad perm {args.perm}: want 2 (W), 4 (R) or 6 (RW)")
    route = await admin.topic_route(_topic(args.topic))
    if not route.queueDatas:
        raise MQClientError(f"topic {args.topic} has no queue data")
    qd = route.queueDatas[0]
    out = {"topic": args.topic, "oldPerm": qd.perm, "perm": args.perm, "brokers": []}
    if qd.perm == args.perm:
        out["unchanged"] = True
        return out
    from remoting.body.topic_config import TopicConfig

    tc = TopicConfig(topicName=args.topic, readQueueNums=qd.readQueueNums, writeQueueNums=qd.writeQueueNums,
                     perm=args.perm, topicSysFlag=qd.topicSysFlag)
    for addr in await _target_addrs(admin, args):
        await admin.create_topic(addr, tc)
        out["brokers"].append(addr)
    return out


def _setup_allocate_mq(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-i", dest="ipList", required=True, help="ipList, comma separated")


def _print_compact_json(args, data) -> None:
    print(json.dumps(data, separators=(",", ":"), ensure_ascii=False))


@data_command("allocateMQ", "Allocate MQ", _setup_allocate_mq, _print_compact_json)
async def allocate_mq(admin: MQAdminExt, args):
    ips = [ip for ip in args.ipList.split(",")]
    mqs = await admin.subscribe_queues(_topic(args.topic))
    result = {ip: [mq.to_obj() for mq in allocate_averagely("aa", ip, mqs, ips)] for ip in ips}
    return {"result": result}


def _setup_update_order_conf(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-v", dest="orderConf", help="set order conf [eg. brokerName1:num;brokerName2:num]")
    p.add_argument("-m", dest="method", required=True, choices=["get", "put", "delete"])


def _print_order_conf(args, data) -> None:
    if args.method == "get":
        print(f"get orderConf success. topic=[{data['topic']}], orderConf=[{data['orderConf']}] ")
    elif args.method == "put":
        print(f"update orderConf success. topic=[{data['topic']}], orderConf=[{data['orderConf']}]")
    else:
        print(f"delete orderConf success. topic=[{data['topic']}]")


@data_command("updateOrderConf", "Create or update or delete order conf", _setup_update_order_conf, _print_order_conf)
async def update_order_conf(admin: MQAdminExt, args):
    topic = _topic(args.topic)
    if args.method == "get":
        return {"topic": topic, "orderConf": (await admin.kv_list("ORDER_TOPIC_CONFIG")).get(topic)}
    if args.method == "put":
        if not args.orderConf:
            raise UsageError("please set orderConf with option -v.")
        for part in args.orderConf.split(";"):
            name, sep, num = part.partition(":")
            if not sep or not name or not num.isdigit():
                raise UsageError(f"bad orderConf {args.orderConf!r}: want brokerName1:num;brokerName2:num")
        await admin.put_kv_config("ORDER_TOPIC_CONFIG", topic, args.orderConf)
        return {"topic": topic, "orderConf": args.orderConf}
    await admin.delete_kv_config("ORDER_TOPIC_CONFIG", topic)
    return {"topic": topic}


# -- messages --------------------------------------------------------------------------------------------------


def _java_msg(m: MessageExt, body: str) -> str:
    """One line as the Java tool's printMsg prints a MessageExt (fields of its toString)."""
    props = ", ".join(f"{k}={v}" for k, v in m.properties.items())
    return (f"MSGID: {m.msg_id} MessageExt [brokerName=null, queueId={m.queue_id}, storeSize={m.store_size}, "
            f"queueOffset={m.queue_offset}, sysFlag={m.sys_flag}, bornTimestamp={m.born_timestamp}, "
            f"bornHost=/{m.born_host[0]}:{m.born_host[1]}, storeTimestamp={m.store_timestamp}, "
            f"storeHost=/{m.store_host[0]}:{m.store_host[1]}, msgId={m.msg_id}, commitLogOffset={m.commit_log_offset}, "
            f"bodyCRC={m.body_crc}, reconsumeTimes={m.reconsume_times}, preparedTransactionOffset="
            f"{m.prepared_transaction_offset}, toString()=Message{{topic='{m.topic}', flag={m.flag}, "
            f"properties={{{props}}}, body=[...], transactionId='null'}}] BODY: {body}")


async def _scan_queue(admin: MQAdminExt, topic: str, broker: str, qid: int, begin: int | None, end: int | None,
                      limit: int) -> list[MessageExt]:
    from remoting.body.consumer import MessageQueue

    route = await admin.topic_route(topic)
    bd = next((b for b in route.brokerDatas if b.brokerName == broker), None)
    addr = bd and (bd.brokerAddrs.get(MASTER_ID) or bd.select_broker_addr())
    if not addr:
        raise MQClientError(f"broker {broker} not in the route of {topic}")
    mq = MessageQueue(topic, broker, qid)
    lo = await admin.api.get_min_offset(addr, mq)
    hi = await admin.api.get_max_offset(addr, mq)
    if begin is not None:
        lo = await admin.api.search_offset(addr, mq, begin)
    if end is not None:
        hi = await admin.api.search_offset(addr, mq, end)
    out: list[MessageExt] = []
    off = lo
    while off < hi and len(out) < limit:
        msgs = await admin.query_message_by_offset(topic, broker, qid, off, min(32, hi - off))
        if not msgs:
            break
        out.extend(msgs)
        off = msgs[-1].queue_offset + 1
    return out[:limit]


def _setup_print_msg(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-c", dest="charsetName", default="UTF-8")
    p.add_argument("-s", dest="subExpression", default="*")
    p.add_argument("-b", dest="beginTimestamp", help="Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
    p.add_argument("-e", dest="endTimestamp", help="End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
    p.add_argument("-d", dest="printBody", type=_bool, default=True)
    p.add_argument("-l", dest="lmit", type=int, default=10000, help="the most messages printed (bounded)")


def _body_text(m: MessageExt, charset: str) -> str:
    try:
        return m.body.decode(charset, errors="replace")
    except LookupError:
        raise UsageError(f"unknown charset {charset!r}") from None


def _tag_match(m: MessageExt, sub: str) -> bool:
    return sub in ("*", "") or m.properties.get(MessageConst.TAGS, "") in [t.strip() for t in sub.split("||")]


def _print_msgs(args, data) -> None:
    for q in data["queues"]:
        print(f"minOffset={q['minOffset']}, maxOffset={q['maxOffset']}, {q['queue']}")
        for m, text in q["lines"]:
            print(_java_msg(m, text if args.printBody else "NOT PRINT BODY"))


@data_command("printMsg", "Print Message Detail", _setup_print_msg, lambda a, d: _print_msgs(a, d))
async def print_msg_cmd(admin: MQAdminExt, args):
    topic = _topic(args.topic)
    begin = ops.parse_timestamp(args.beginTimestamp, "beginTimestamp") if args.beginTimestamp else None
    end = ops.parse_timestamp(args.endTimestamp, "endTimestamp") if args.endTimestamp else None
    queues = []
    left = max(0, args.lmit)
    for mq in await admin.subscribe_queues(topic):
        msgs = [m for m in await _scan_queue(admin, topic, mq.brokerName, mq.queueId, begin, end, left)
                if _tag_match(m, args.subExpression)]
        left -= len(msgs)
        lo = msgs[0].queue_offset if msgs else 0
        hi = msgs[-1].queue_offset + 1 if msgs else 0
        queues.append({"queue": f"MessageQueue [topic={topic}, brokerName={mq.brokerName}, queueId={mq.queueId}]",
                       "minOffset": lo, "maxOffset": hi,
                       "lines": [(m, _body_text(m, args.charsetName)) for m in msgs]})
    if args.json:
        return [{"queue": q["queue"], "messages": [ops.message_to_dict(m, with_body=args.printBody)
                                                   for m, _t in q["lines"]]} for q in queues]
    return {"queues": queues}


def _setup_print_by_queue(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-a", dest="brokerName", required=True)
    p.add_argument("-i", dest="queueId", type=int, required=True)
    p.add_argument("-c", dest="charsetName", default="UTF-8")
    p.add_argument("-s", dest="subExpression", default="*")
    p.add_argument("-b", dest="beginTimestamp")
    p.add_argument("-e", dest="endTimestamp")
    p.add_argument("-p", dest="printMsg", type=_bool, default=False)
    p.add_argument("-d", dest="printBody", type=_bool, default=False)
    p.add_argument("-f", dest="calculate", type=_bool, default=False, help="calculate by tag")
    p.add_argument("-l", dest="lmit", type=int, default=100000, help="the most messages read (bounded)")


def _print_by_queue(args, data) -> None:
    if args.printMsg:
        for m, text in data["lines"]:
            print(_java_msg(m, text if args.printBody else "NOT PRINT BODY"))
    if args.calculate:
        for tag, n in sorted(data["tags"].items(), key=lambda kv: -kv[1]):
            print(f"Tag: {tag:<30s} Count: {n}")


@data_command("printMsgByQueue", "Print Message Detail", _setup_print_by_queue, _print_by_queue)
async def print_msg_by_queue(admin: MQAdminExt, args):
    topic = _topic(args.topic)
    begin = ops.parse_timestamp(args.beginTimestamp, "beginTimestamp") if args.beginTimestamp else None
    end = ops.parse_timestamp(args.endTimestamp, "endTimestamp") if args.endTimestamp else None
    msgs = [m for m in await _scan_queue(admin, topic, args.brokerName, args.queueId, begin, end, max(0, args.lmit))
            if _tag_match(m, args.subExpression)]
    tags: dict[str, int] = {}
    for m in msgs:
        t = m.properties.get(MessageConst.TAGS, "")
        tags[t] = tags.get(t, 0) + 1
    if args.json:
        return {"messages": [ops.message_to_dict(m, with_body=args.printBody) for m in msgs], "tags": tags}
    return {"lines": [(m, _body_text(m, args.charsetName)) for m in msgs], "tags": tags}


def _setup_query_by_unique_key(p):
    p.add_argument("-i", dest="msgId", required=True)
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-g", dest="consumerGroup")
    p.add_argument("-d", dest="clientId")
    p.add_argument("-a", dest="showAll", action="store_true", help="print all message")


def _print_unique(args, data) -> None:
    for m in data["msgs"]:
        print_msg(m, args.msgId)
    if data.get("direct"):
        r = data["direct"]
        print(f"ConsumeMessageDirectlyResult [order={str(r.get('order', False)).lower()}, "
              f"autoCommit={str(r.get('autoCommit', True)).lower()}, consumeResult={r.get('consumeResult')}, "
              f"remark={r.get('remark')}, spentTimeMills={r.get('spentTimeMills')}]")


@data_command("queryMsgByUniqueKey", "Query Message by Unique key", _setup_query_by_unique_key, _print_unique)
async def query_by_unique_key(admin: MQAdminExt, args):
    if (args.consumerGroup is None) != (args.clientId is None):
        raise UsageError("-g consumerGroup and -d clientId go together")
    msgs = await admin.query_message(_topic(args.topic), args.msgId, 32, unique_key=True)
    if not msgs:
        raise MQClientError(f"message {args.msgId} not found")
    msgs = msgs if args.showAll else msgs[:1]
    direct = None
    if args.consumerGroup:
        direct = await admin.consume_message_directly(_group(args.consumerGroup), args.clientId, msgs[0].msg_id)
    if args.json:
        return {"messages": [ops.message_to_dict(m, with_body=True) for m in msgs], "consumeDirectly": direct}
    return {"msgs": msgs, "direct": direct}


# -- consumer groups ---------------------------------------------------------------------------------------


def _setup_skip(p):
    p.add_argument("-g", dest="group", required=True)
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-c", dest="cluster")
    p.add_argument("-f", dest="force", type=_bool, default=True)


def _print_offsets(args, data) -> None:
    print(f"{'#brokerName':<40s}  {'#queueId':<40s}  {'#offset':<40s}")
    for o in data["offsets"]:
        print(f"{o['brokerName']:<40s}  {o['queueId']:<40d}  {o['offset']:<40d}")


@data_command("skipAccumulatedMessage", "Skip all messages that are accumulated (not consumed) currently",
              _setup_skip, _print_offsets)
async def skip_accumulated(admin: MQAdminExt, args):
    return await ops.reset_offset(admin, _group(args.group), _topic(args.topic), -1, args.force)


def _setup_broker_consume_stats(p):
    p.add_argument("-b", dest="brokerAddr", required=True)
    p.add_argument("-t", dest="timeoutMillis", type=int, default=50000)
    p.add_argument("-l", dest="level", type=int, default=0, help="threshold of print diff")
    p.add_argument("-o", dest="order", type=_bool, default=False)


def _print_broker_consume_stats(args, data) -> None:
    print(f"{'#Topic':<32s}  {'#Group':<32s}  {'#Broker Name':<32s}  {'#QID':<4s}  {'#Broker Offset':<20s}  "
          f"{'#Consumer Offset':<20s}  {'#Diff':<20s}  #LastTime")
    for r in data["rows"]:
        if r["diff"] < args.level or r["lastTimestamp"] <= 0:
            continue
        print(f"{r['topic']:<64s}  {r['group']:<32s}  {r['brokerName']:<32s}  {r['queueId']:<4d}  "
              f"{r['brokerOffset']:<20d}  {r['consumerOffset']:<20d}  {r['diff']:<20d}  "
              f"{fmt_time(r['lastTimestamp']).split(',')[0]}")
    print()
    print(f"Diff Total: {data['totalDiff']}")


@data_command("brokerConsumeStats", "Fetch broker consume stats data", _setup_broker_consume_stats,
              _print_broker_consume_stats)
async def broker_consume_stats(admin: MQAdminExt, args):
    admin.timeout = max(admin.timeout, args.timeoutMillis / 1000)
    stats = await admin.broker_consume_stats(args.brokerAddr, args.order)
    rows = []
    total = 0
    for group, lst in stats.items():
        for cs in lst:
            for mq in sorted(cs.offsetTable, key=lambda q: (q.topic, q.brokerName, q.queueId)):
                ow = cs.offsetTable[mq]
                diff = ow.brokerOffset - ow.consumerOffset
                total += diff
                rows.append({"topic": mq.topic, "group": group, "brokerName": mq.brokerName, "queueId": mq.queueId,
                             "brokerOffset": ow.brokerOffset, "consumerOffset": ow.consumerOffset, "diff": diff,
                             "lastTimestamp": ow.lastTimestamp})
    return {"brokerAddr": args.brokerAddr, "rows": rows, "totalDiff": total}


def _setup_consumer_status(p):
    p.add_argument("-g", dest="consumerGroup", required=True)
    p.add_argument("-i", dest="clientId")
    p.add_argument("-s", dest="jstackEnable", action="store_true")
    p.add_argument("-b", dest="brokerAddr")


def _print_consumer_status(args, data) -> None:
    if args.clientId:
        print(json.dumps(data["clients"].get(args.clientId, {}), indent=2, ensure_ascii=False, default=str))
        return
    for i, (cid, info) in enumerate(sorted(data["clients"].items()), 1):
        props = info.get("properties") or {}
        print(f"{i:03d}  {cid:<40s} {props.get('PROP_CLIENT_VERSION', ''):<20s} "
              f"{'OK' if 'error' not in info else info['error']}")
    print()
    print("Same subscription in the same group of consumer" if data["sameSubscription"]
          else "WARN: Different subscription in the same group of consumer!!!")
    print()
    print("Rebalance OK" if data["rebalanceOk"] else "Rebalance Failed")


@data_command("consumerStatus", "Query consumer's internal data structure", _setup_consumer_status,
              _print_consumer_status)
async def consumer_status(admin: MQAdminExt, args):
    group = _group(args.consumerGroup)
    cc = await admin.consumer_connection(group, args.brokerAddr)
    clients: dict[str, Any] = {}
    for c in sorted(cc.connectionSet, key=lambda c: c.clientId):
        if args.clientId and c.clientId != args.clientId:
            continue
        try:
            clients[c.clientId] = await admin.consumer_running_info(group, c.clientId, args.jstackEnable)
        except (MQClientError, ValueError, OSError) as e:
            clients[c.clientId] = {"error": str(e)}
        except Exception as e:  # noqa: BLE001 - one client's failure is reported in its row
            clients[c.clientId] = {"error": " ".join(str(e).split())}
    subs = {json.dumps(info.get("subscriptionSet"), sort_keys=True, default=str) for info in clients.values()
            if "error" not in info}
    owned: list = []
    for info in clients.values():
        owned.extend((info.get("mqTable") or {}).keys())
    return {"group": group, "clients": clients, "sameSubscription": len(subs) <= 1,
            "rebalanceOk": len(owned) == len(set(owned))}


def _setup_clone_offset(p):
    p.add_argument("-s", dest="srcGroup", required=True)
    p.add_argument("-d", dest="destGroup", required=True)
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-o", dest="offline", type=_bool, default=False)


def _print_clone(args, data) -> None:
    print(f"clone group offset success. srcGroup[{data['srcGroup']}], destGroup={data['destGroup']}, "
          f"topic[{data['topic']}]")


@data_command("cloneGroupOffset", "clone offset from other group.", _setup_clone_offset, _print_clone)
async def clone_group_offset(admin: MQAdminExt, args):
    src, dest, topic = _group(args.srcGroup), _group(args.destGroup), _topic(args.topic)
    stats = await admin.consume_stats(src, topic)
    names = {mq.brokerName for mq in stats.offsetTable}
    route = await admin.topic_route(topic)
    done = []
    for bd in route.brokerDatas:
        addr = bd.brokerAddrs.get(MASTER_ID)
        if addr and bd.brokerName in names:
            await admin.clone_group_offset(addr, src, dest, topic, args.offline)
            done.append(addr)
    return {"srcGroup": src, "destGroup": dest, "topic": topic, "brokers": done}


def _setup_get_consumer_config(p):
    p.add_argument("-g", dest="groupName", required=True)


def _print_consumer_config(args, data) -> None:
    for addr, cfg in data.items():
        print(f"============Master: {addr}============")
        for k, v in cfg.items():
            print(f"{k:<50s}=  {str(v).lower() if isinstance(v, bool) else v}")


@data_command("getConsumerConfig", "get consumer config by subscription group name!", _setup_get_consumer_config,
              _print_consumer_config)
async def get_consumer_config(admin: MQAdminExt, args):
    group = _group(args.groupName)
    info = await admin.cluster_info()
    out = {}
    for name in sorted(info.brokerAddrTable):
        addr = info.brokerAddrTable[name].brokerAddrs.get(MASTER_ID)
        if not addr:
            continue
        cfg = (await admin.all_subscription_group(addr)).get(group)
        if cfg is not None:
            out[addr] = cfg.to_obj()
    if not out:
        raise MQClientError(f"subscription group {group} not found on any master")
    return out

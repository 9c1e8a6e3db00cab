"""mqadmin: RocketMQ's admin tool (run as ``bin/mqadmin <command> [options]``).

Sub-command names and option letters are the Java tool's (config-reference.md
§11). ``-n host:port[;host:port]`` or ``NAMESRV_ADDR`` names the NameServers.
Output is aligned text tables like the Java tool's. Exit status 0 on success,
1 with a one-line reason on stderr when the command fails, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import time

from client.admin_ext import MQAdminExt as MQAdmin  # MQAdmin with the batched reads the --json commands use
from client.exceptions import MQBrokerError, MQClientError
from client.message import Message, MessageQueue
from client.producer import Producer
from common.message import MessageConst
from common.perm import PermName
from remoting import RemotingError, run
from remoting.body.subscription_group import SubscriptionGroupConfig
from remoting.body.topic_config import TopicConfig
from tools import mqadmin_command as registry  # the tables every command module registers into
from tools.mqadmin_command import (
    UsageError,
    _bool,
    _group,
    _target_addrs,
    _topic,
    command,
    fmt_time,
    parse_reset_timestamp,
    print_msg,
)

# -- topics ---------------------------------------------------------------------------------------------


def _setup_update_topic(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-b", dest="brokerAddr")
    p.add_argument("-c", dest="clusterName")
    p.add_argument("-r", dest="readQueueNums", type=int, default=8)
    p.add_argument("-w", dest="writeQueueNums", type=int, default=8)
    p.add_argument("-p", dest="perm", type=int, default=6)
    p.add_argument("-o", dest="order", type=_bool, default=False)
    p.add_argument("-u", dest="unit", type=_bool, default=False)
    p.add_argument("-s", dest="hasUnitSub", type=_bool, default=False)


@command("updateTopic", "Update or create topic", _setup_update_topic)
async def update_topic(admin: MQAdmin, args) -> None:
    tc = TopicConfig(topicName=_topic(args.topic), readQueueNums=args.readQueueNums,
                     writeQueueNums=args.writeQueueNums, perm=args.perm, order=args.order)
    if args.readQueueNums <= 0 or args.writeQueueNums <= 0:
        raise UsageError("readQueueNums and writeQueueNums must be positive")
    if args.perm not in (PermName.PERM_READ, PermName.PERM_WRITE, PermName.PERM_READ | PermName.PERM_WRITE):
        raise UsageError(f"bad perm {args.perm}: want 2 (W), 4 (R) or 6 (RW)")
    if args.brokerAddr:
        await admin.create_topic(args.brokerAddr, tc)
        print(f"create topic to {args.brokerAddr} success.")
        print(tc.to_json().decode())
        return
    masters = await admin.cluster_master_addrs(args.clusterName) if args.clusterName else None
    if masters is None:
        raise UsageError("one of -b brokerAddr or -c clusterName is required")
    for addr in masters.values():
        await admin.create_topic(addr, tc)
        print(f"create topic to {addr} success.")
    if args.order:
        conf = ";".join(f"{name}:{args.writeQueueNums}" for name in masters)
        await admin.put_kv_config("ORDER_TOPIC_CONFIG", args.topic, conf)
        print(f"set cluster orderConf. isOrder={args.order}, orderConf=[{conf}]")
    print(tc.to_json().decode())


def _setup_delete_topic(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-c", dest="clusterName", required=True)


@command("deleteTopic", "Delete topic from broker and NameServer.", _setup_delete_topic)
async def delete_topic(admin: MQAdmin, args) -> None:
    await admin.delete_topic(_topic(args.topic), args.clusterName)
    print(f"delete topic [{args.topic}] from cluster [{args.clusterName}] success.")
    print(f"delete topic [{args.topic}] from NameServer success.")


def _setup_topic_list(p):
    p.add_argument("-c", dest="clusterModel", action="store_true")


@command("topicList", "Fetch all topic list from name server", _setup_topic_list)
async def topic_list(admin: MQAdmin, args) -> None:
    topics = sorted(await admin.topic_list())
    if not args.clusterModel:
        for t in topics:
            print(t)
        return
    info = await admin.cluster_info()
    broker_cluster = {b: c for c, names in info.clusterAddrTable.items() for b in names}
    print(f"{'#Cluster Name':<20s}  {'#Topic':<48s}  {'#Consumer Group':<48s}")
    for t in topics:
        if t.startswith(("%RETRY%", "%DLQ%")):
            continue
        try:
            route = await admin.topic_route(t)
            cluster = broker_cluster.get(route.brokerDatas[0].brokerName, "") if route.brokerDatas else ""
            groups = await admin.query_topic_consume_by_who(t)
        except (MQBrokerError, MQClientError):
            cluster, groups = "", []
        for g in groups or [""]:
            print(f"{cluster[:20]:<20s}  {t[:48]:<48s}  {g[:48]:<48s}")


def _setup_topic_route(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-l", dest="list", action="store_true")


@command("topicRoute", "Examine topic route info", _setup_topic_route)
async def topic_route(admin: MQAdmin, args) -> None:
    route = await admin.topic_route(_topic(args.topic))
    if not args.list:
        print(json.dumps(route.to_obj(), indent="\t", ensure_ascii=False))
        return
    print(f"{'#ClusterName':<45s} {'#BrokerName':<32s} {'#BrokerAddrs':<32s} {'#WriteQueueNum':<14s} "
          f"{'#ReadQueueNum':<14s} {'#Perm':<8s}")
    qds = {q.brokerName: q for q in route.queueDatas}
    for bd in sorted(route.brokerDatas, key=lambda b: b.brokerName):
        q = qds.get(bd.brokerName)
        addrs = json.dumps({str(k): v for k, v in bd.brokerAddrs.items()})
        print(f"{bd.cluster:<45s} {bd.brokerName:<32s} {addrs:<32s} {q.writeQueueNums if q else 0:<14d} "
              f"{q.readQueueNums if q else 0:<14d} {q.perm if q else 0:<8d}")


def _setup_topic_status(p):
    p.add_argument("-t", dest="topic", required=True)


@command("topicStatus", "Examine topic Status info", _setup_topic_status)
async def topic_status(admin: MQAdmin, args) -> None:
    stats = await admin.topic_stats(_topic(args.topic))
    print(f"{'#Broker Name':<32s}  {'#QID':<4s}  {'#Min Offset':<20s}  {'#Max Offset':<20s}    {'#Last Updated'}")
    for mq, to in stats.items():
        print(f"{mq.brokerName[:32]:<32s}  {mq.queueId:<4d}  {to.minOffset:<20d}  {to.maxOffset:<20d}    "
              f"{fmt_time(to.lastUpdateTimestamp)}")


# -- cluster / brokers -------------------------------------------------------------------------------------


def _setup_cluster_list(p):
    p.add_argument("-m", dest="moreStats", action="store_true")
    p.add_argument("-i", dest="interval", type=int)
    p.add_argument("-c", dest="clusterName")


def _first_float(v: str | None) -> float:
    try:
        return float((v or "0").split()[0])
    except (ValueError, IndexError):
        return 0.0


@command("clusterList", "List cluster infos", _setup_cluster_list)
async def cluster_list(admin: MQAdmin, args) -> None:
    info = await admin.cluster_info()
    print(f"{'#Cluster Name':<16s}  {'#Broker Name':<22s}  {'#BID':<4s}  {'#Addr':<22s}  {'#Version':<16s}  "
          f"{'#InTPS(LOAD)':>19s}  {'#OutTPS(LOAD)':>19s}  {'#PCWait(ms)':>10s}  {'#Hour':>5s}  {'#SPACE':>6s}")
    for cluster in sorted(info.clusterAddrTable):
        if args.clusterName and cluster != args.clusterName:
            continue
        for bname in sorted(info.clusterAddrTable[cluster]):
            bd = info.brokerAddrTable.get(bname)
            if bd is None:
                continue
            for bid, addr in sorted(bd.brokerAddrs.items()):
                try:
                    kv = await admin.broker_runtime_info(addr)
                except (MQBrokerError, MQClientError, RemotingError):
                    kv = {}
                version = kv.get("brokerVersionDesc", "")
                in_tps = _first_float(kv.get("putTps"))
                out_tps = _first_float(kv.get("getTransferedTps") or kv.get("getTotalTps"))
                pcwait = kv.get("pageCacheLockTimeMills", "0")
                earliest = int(kv.get("earliestMessageTimeStamp", "0") or 0)
                hours = (time.time() * 1000 - earliest) / 3600000 if earliest > 0 else 0.0
                space = _first_float(kv.get("commitLogDiskRatio"))
                print(f"{cluster:<16s}  {bname:<22s}  {bid:<4d}  {addr:<22s}  {version:<16s}  "
                      f"{f'{in_tps:9.2f}(0,0ms)':>19s}  {f'{out_tps:9.2f}(0,0ms)':>19s}  {pcwait:>10s}  "
                      f"{hours:5.2f}  {space:6.4f}")


def _setup_broker_status(p):
    p.add_argument("-b", dest="brokerAddr")
    p.add_argument("-c", dest="clusterName")


@command("brokerStatus", "Fetch broker runtime status data", _setup_broker_status)
async def broker_status(admin: MQAdmin, args) -> None:
    addrs = await _target_addrs(admin, args)
    for addr in addrs:
        kv = await admin.broker_runtime_info(addr)
        for k in sorted(kv):
            if len(addrs) > 1:
                print(f"{addr:<24s} {k:<32s}: {kv[k]}")
            else:
                print(f"{k:<32s}: {kv[k]}")


def _setup_get_broker_config(p):
    p.add_argument("-b", dest="brokerAddr")
    p.add_argument("-c", dest="clusterName")


@command("getBrokerConfig", "Get broker config by cluster or special broker!", _setup_get_broker_config)
async def get_broker_config(admin: MQAdmin, args) -> None:
    for addr in await _target_addrs(admin, args):
        cfg = await admin.get_broker_config(addr)
        print(f"============{addr}============")
        for k, v in cfg.items():
            print(f"{k:<50s}=  {v}")


def _setup_update_broker_config(p):
    p.add_argument("-b", dest="brokerAddr")
    p.add_argument("-c", dest="clusterName")
    p.add_argument("-k", dest="key", required=True)
    p.add_argument("-v", dest="value", required=True)


@command("updateBrokerConfig", "Update broker's config", _setup_update_broker_config)
async def update_broker_config(admin: MQAdmin, args) -> None:
    for addr in await _target_addrs(admin, args):
        await admin.update_broker_config(addr, {args.key: args.value})
        print(f"update broker config success, {addr}")


# -- groups ------------------------------------------------------------------------------------------------------


def _setup_update_sub_group(p):
    p.add_argument("-g", dest="groupName", required=True)
    p.add_argument("-b", dest="brokerAddr")
    p.add_argument("-c", dest="clusterName")
    p.add_argument("-s", dest="consumeEnable", type=_bool, default=True)
    p.add_argument("-m", dest="consumeFromMinEnable", type=_bool, default=False)
    p.add_argument("-d", dest="consumeBroadcastEnable", type=_bool, default=False)
    p.add_argument("-q", dest="retryQueueNums", type=int, default=1)
    p.add_argument("-r", dest="retryMaxTimes", type=int, default=16)
    p.add_argument("-i", dest="brokerId", type=int, default=0)
    p.add_argument("-w", dest="whichBrokerWhenConsumeSlowly", type=int, default=1)
    p.add_argument("-a", dest="notifyConsumerIdsChanged", type=_bool, default=True)


@command("updateSubGroup", "Update or create subscription group", _setup_update_sub_group)
async def update_sub_group(admin: MQAdmin, args) -> None:
    cfg = SubscriptionGroupConfig(
        groupName=_group(args.groupName), consumeEnable=args.consumeEnable,
        consumeFromMinEnable=args.consumeFromMinEnable, consumeBroadcastEnable=args.consumeBroadcastEnable,
        retryQueueNums=args.retryQueueNums, retryMaxTimes=args.retryMaxTimes, brokerId=args.brokerId,
        whichBrokerWhenConsumeSlowly=args.whichBrokerWhenConsumeSlowly,
        notifyConsumerIdsChangedEnable=args.notifyConsumerIdsChanged)
    for addr in await _target_addrs(admin, args):
        await admin.create_subscription_group(addr, cfg)
        print(f"create subscription group to {addr} success.")
    print(cfg.to_json().decode())


def _setup_delete_sub_group(p):
    p.add_argument("-g", dest="groupName", required=True)
    p.add_argument("-b", dest="brokerAddr")
    p.add_argument("-c", dest="clusterName")
    p.add_argument("-r", dest="removeOffset", type=_bool, default=False)


@command("deleteSubGroup", "Delete subscription group from broker.", _setup_delete_sub_group)
async def delete_sub_group(admin: MQAdmin, args) -> None:
    for addr in await _target_addrs(admin, args):
        await admin.delete_subscription_group(addr, _group(args.groupName), args.removeOffset)
        print(f"delete subscription group [{args.groupName}] from broker [{addr}] success.")


def _setup_consumer_progress(p):
    p.add_argument("-g", dest="groupName")
    p.add_argument("-t", dest="topicName")
    p.add_argument("-s", dest="showClientIP", type=_bool, default=False)


@command("consumerProgress", "Query consumers's progress, speed", _setup_consumer_progress)
async def consumer_progress(admin: MQAdmin, args) -> None:
    if not args.groupName:
        await _all_groups_progress(admin)
        return
    stats = await admin.consume_stats(_group(args.groupName), args.topicName)
    print(f"{'#Topic':<64s}  {'#Broker Name':<32s}  {'#QID':<4s}  {'#Broker Offset':<20s}  "
          f"{'#Consumer Offset':<20s}  {'#Diff':<20s}  {'#LastTime'}")
    diff_total = 0
    for mq in sorted(stats.offsetTable, key=lambda q: (q.topic, q.brokerName, q.queueId)):
        ow = stats.offsetTable[mq]
        diff = ow.brokerOffset - ow.consumerOffset
        diff_total += diff
        print(f"{mq.topic[:64]:<64s}  {mq.brokerName[:32]:<32s}  {mq.queueId:<4d}  {ow.brokerOffset:<20d}  "
              f"{ow.consumerOffset:<20d}  {diff:<20d}  {fmt_time(ow.lastTimestamp)}")
    print()
    print(f"Consume TPS: {stats.consumeTps:.2f}")
    print(f"Diff Total: {diff_total}")


async def _all_groups_progress(admin: MQAdmin) -> None:
    """Without -g: one line per consumer group (groups found through their %RETRY% topics)."""
    groups = sorted(t[len("%RETRY%"):] for t in await admin.topic_list() if t.startswith("%RETRY%"))
    print(f"{'#Group':<64s}  {'#Count':<6s}  {'#Version':<20s}  {'#Type':<8s}  {'#Model':<14s}  {'#TPS':<8s}  "
          f"{'#Diff Total'}")
    for g in groups:
        try:
            stats = await admin.consume_stats(g)
        except (MQBrokerError, MQClientError, RemotingError):
            continue
        diff = sum(ow.brokerOffset - ow.consumerOffset for ow in stats.offsetTable.values())
        count, version, ctype, model = 0, "OFFLINE", "", ""
        try:
            cc = await admin.consumer_connection(g)
            count = len(cc.connectionSet)
            version = str(max((c.version for c in cc.connectionSet), default=0))
            ctype = "PUSH" if cc.consumeType == "CONSUME_PASSIVELY" else "PULL"
            model = cc.messageModel or ""
        except (MQBrokerError, MQClientError, RemotingError):
            pass
        print(f"{g[:64]:<64s}  {count:<6d}  {version:<20s}  {ctype:<8s}  {model:<14s}  {stats.consumeTps:<8.0f}  {diff}")


def _setup_consumer_connection(p):
    p.add_argument("-g", dest="consumerGroup", required=True)
    p.add_argument("-b", dest="brokerAddr")


@command("consumerConnection", "Query consumer's socket connection, client version and subscription",
         _setup_consumer_connection)
async def consumer_connection(admin: MQAdmin, args) -> None:
    cc = await admin.consumer_connection(_group(args.consumerGroup), args.brokerAddr)
    for i, c in enumerate(sorted(cc.connectionSet, key=lambda c: c.clientId), 1):
        print(f"{i:03d}  {c.clientId:<36s} {c.clientAddr:<22s} {c.language:<10s} {c.version}")
    print()
    print("Below is subscription:")
    for i, (topic, sd) in enumerate(sorted(cc.subscriptionTable.items()), 1):
        print(f"{i:03d}  Topic: {topic:<40s} SubExpression: {sd.subString}")
    print()
    print(f"ConsumeType: {cc.consumeType}")
    print(f"MessageModel: {cc.messageModel}")
    print(f"ConsumeFromWhere: {cc.consumeFromWhere}")


def _setup_producer_connection(p):
    p.add_argument("-g", dest="producerGroup", required=True)
    p.add_argument("-t", dest="topic", required=True)


@command("producerConnection", "Query producer's socket connection and client version", _setup_producer_connection)
async def producer_connection(admin: MQAdmin, args) -> None:
    pc = await admin.producer_connection(_group(args.producerGroup), _topic(args.topic))
    for i, c in enumerate(pc.connectionSet, 1):
        print(f"{i:04d}  {c.clientId:<32s} {c.clientAddr:<22s} {c.language:<8s} {c.version}")


# -- messages --------------------------------------------------------------------------------------------------------


def _setup_query_by_id(p):
    p.add_argument("-i", dest="msgId", required=True)
    p.add_argument("-t", dest="topic")
    p.add_argument("-g", dest="consumerGroup")
    p.add_argument("-d", dest="clientId")


@command("queryMsgById", "Query Message by Id", _setup_query_by_id)
async def query_msg_by_id(admin: MQAdmin, args) -> None:
    if (args.consumerGroup is None) != (args.clientId is None):
        raise UsageError("-g consumerGroup and -d clientId go together")
    for mid in [s.strip() for s in args.msgId.split(",") if s.strip()]:
        try:
            m = await admin.view_message(mid)
            print_msg(m, m.properties.get(MessageConst.UNIQ_KEY) or mid)
            if args.consumerGroup:
                r = await admin.consume_message_directly(_group(args.consumerGroup), args.clientId, mid)
                print(f"ConsumeMessageDirectlyResult [order={str(r.get('order', False)).lower()}, "
                      f"autoCommit={str(r.get('autoCommit', True)).lower()}, consumeResult={r.get('consumeResult')}, "
                      f"remark={r.get('remark')}, spentTimeMills={r.get('spentTimeMills')}]")
            continue
        except (MQClientError, MQBrokerError, RemotingError, ValueError):
            if not args.topic:
                raise
        msgs = await admin.query_message(_topic(args.topic), mid, 32, unique_key=True)
        if not msgs:
            raise MQClientError(f"message {mid} not found")
        for m in msgs:
            print_msg(m, mid)


def _setup_query_by_key(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-k", dest="msgKey", required=True)
    p.add_argument("-b", dest="beginTimestamp", type=int, default=0)
    p.add_argument("-e", dest="endTimestamp", type=int, default=2**63 - 1)
    p.add_argument("-c", dest="maxNum", type=int, default=64)


@command("queryMsgByKey", "Query Message by Key", _setup_query_by_key)
async def query_msg_by_key(admin: MQAdmin, args) -> None:
    msgs = await admin.query_message(_topic(args.topic), args.msgKey, args.maxNum, args.beginTimestamp,
                                     args.endTimestamp)
    print(f"{'#Message ID':<50s} {'#QID':>4s} {'#Offset':>40s}")
    for m in msgs:
        mid = m.properties.get(MessageConst.UNIQ_KEY) or m.msg_id
        print(f"{mid:<50s} {m.queue_id:>4d} {m.queue_offset:>40d}")


def _setup_query_by_offset(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-b", dest="brokerName", required=True)
    p.add_argument("-i", dest="queueId", type=int, required=True)
    p.add_argument("-o", dest="offset", type=int, required=True)


@command("queryMsgByOffset", "Query Message by offset", _setup_query_by_offset)
async def query_msg_by_offset(admin: MQAdmin, args) -> None:
    msgs = await admin.query_message_by_offset(_topic(args.topic), args.brokerName, args.queueId, args.offset)
    if not msgs:
        raise MQClientError("no message at that offset")
    m = msgs[0]
    print_msg(m, m.properties.get(MessageConst.UNIQ_KEY) or m.msg_id)




def _setup_reset_offset(p):
    p.add_argument("-g", dest="group", required=True)
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-s", dest="timestamp", required=True)
    p.add_argument("-f", dest="force", type=_bool, default=True)
    p.add_argument("-c", dest="cplus", action="store_true")


@command("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).", _setup_reset_offset)
async def reset_offset_by_time(admin: MQAdmin, args) -> None:
    ts = parse_reset_timestamp(args.timestamp)
    table = await admin.reset_offset_by_time(_group(args.group), _topic(args.topic), ts, args.force)
    print(f"rollback consumer offset by specified group[{args.group}], topic[{args.topic}], force[{args.force}], "
          f"timestamp(string)[{args.timestamp}], timestamp(long)[{ts}]")
    print(f"{'#brokerName':<40s}  {'#queueId':<40s}  {'#offset':<40s}")
    for mq in sorted(table, key=lambda q: (q.brokerName, q.queueId)):
        print(f"{mq.brokerName:<40s}  {mq.queueId:<40d}  {table[mq]:<40d}")


def _setup_send_message(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-p", dest="body", required=True)
    p.add_argument("-k", dest="keys")
    p.add_argument("-c", dest="tags")
    p.add_argument("-b", dest="brokerName")
    p.add_argument("-i", dest="queueId", type=int)


@command("sendMessage", "Send a message", _setup_send_message)
async def send_message(admin: MQAdmin, args) -> None:
    if (args.brokerName is None) != (args.queueId is None):
        raise UsageError("-b brokerName and -i queueId go together")
    producer = Producer("PID_MQADMIN_" + str(os.getpid()), ";".join(admin.api.namesrv_addrs))
    await producer.start()
    try:
        msg = Message(_topic(args.topic), args.body.encode("utf-8"), tags=args.tags, keys=args.keys)
        mq = MessageQueue(args.topic, args.brokerName, args.queueId) if args.brokerName else None
        r = await producer.send(msg, mq)
    finally:
        await producer.shutdown()
    print(f"{'#Broker Name':<32s}  {'#QID':<4s}  {'#Send Result':<20s}  {'#MsgId'}")
    print(f"{r.message_queue.brokerName:<32s}  {r.message_queue.queueId:<4d}  {r.send_status.value:<20s}  {r.msg_id}")


# -- main ---------------------------------------------------------------------------------------------------------------

# The ACL commands and the credential options every command takes (imported after this module's own
# commands registered, so that the help lists those first).
from tools import mqadmin_acl  # noqa: E402


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        sys.stderr.write(f"{self.prog}: {message}\n")
        raise SystemExit(2)


# Modules whose commands register themselves on import (with tools.mqadmin_command's decorators);
# imported when the parser is built, once this module is complete.
PLUGINS = (
    "tools.mqadmin_consume",
    "tools.mqadmin_ops",
    "tools.mqadmin_more",
    "tools.mqadmin_trace",
)


def build_parser() -> argparse.ArgumentParser:
    for mod in PLUGINS:
        importlib.import_module(mod)
    parser = _Parser(prog="mqadmin", description="RocketMQ admin tool (Python)")
    sub = parser.add_subparsers(dest="cmd", metavar="<command>", parser_class=_Parser)
    for name, (help_text, setup, _fn) in registry.COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("-n", dest="namesrvAddr", help="Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'")
        mqadmin_acl.add_global_options(p)
        setup(p)
        p.add_argument("--json", dest="json", action="store_true", help="print the result as JSON")
    return parser


async def _run(args) -> None:
    admin = MQAdmin(args.namesrvAddr or os.environ.get("NAMESRV_ADDR"),
                    credentials=mqadmin_acl.credentials_from(args), use_tls=args.useTLS)
    try:
        if args.json:
            if args.cmd not in registry.JSON_DATA:
                raise UsageError("--json is not supported by this command")
            data = await registry.JSON_DATA[args.cmd](admin, args)
            print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
            return
        await registry.COMMANDS[args.cmd][2](admin, args)
    finally:
        await admin.close()


def main(argv: list[str] | None = None) -> int:
    # failures are reported as one line below; keep the library's retry warnings off stderr
    logging.getLogger("client").setLevel(logging.ERROR)
    logging.getLogger("remoting").setLevel(logging.ERROR)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.cmd:
        parser.print_help()
        return 2
    if not (args.namesrvAddr or os.environ.get("NAMESRV_ADDR")):
        sys.stderr.write(f"{args.cmd} command failed: no NameServer address, use -n or set NAMESRV_ADDR\n")
        return 2
    try:
        run(_run(args))
    except UsageError as e:
        sys.stderr.write(f"{args.cmd} command failed: {e}\n")
        return 2
    except (MQClientError, MQBrokerError, RemotingError, ValueError, LookupError, OSError, TimeoutError) as e:
        sys.stderr.write(f"{args.cmd} command failed: {' '.join(str(e).split())}\n")
        return 1
    return 0



if __name__ == "__main__":
    sys.exit(main())

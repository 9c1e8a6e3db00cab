"""mqadmin commands for NameServer config and KV, write permission, store maintenance, statistics and
send round trips (RocketMQ 4.9.7's names, option letters and output lines)."""

from __future__ import annotations

import os
import time

from client.admin_ext import MQAdminExt
from client.exceptions import MQBrokerError, MQClientError
from client.message import Message
from client.producer import Producer
from common.mixall import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from remoting import RemotingError
from remoting.body.route import MASTER_ID
from tools.mqadmin_command import UsageError, _bool, _target_addrs, _topic, data_command

MAX_SENDS = 100_000  # bound of the send loops (sendMsgStatus, checkMsgSendRT, clusterRT)

# -- NameServer: write permission, config, KV -----------------------------------------------------------------


def _setup_broker_name(p):
    p.add_argument("-b", dest="brokerName", required=True)


def _print_perm(verb: str):
    def printer(args, data) -> None:
        for ns, n in data["namesrvs"].items():
            print(f"{verb} write perm of broker[{data['brokerName']}] in name server[{ns}] OK, {n}")
    return printer


@data_command("wipeWritePerm", "Wipe write perm of broker in all name server you defined in the -n param",
              _setup_broker_name, _print_perm("wipe"))
async def wipe_write_perm(admin: MQAdminExt, args):
    return {"brokerName": args.brokerName, "namesrvs": await admin.wipe_write_perm(args.brokerName)}


@data_command("addWritePerm", "Add write perm of broker in all name server you defined in the -n param",
              _setup_broker_name, _print_perm("add"))
async def add_write_perm(admin: MQAdminExt, args):
    return {"brokerName": args.brokerName, "namesrvs": await admin.add_write_perm(args.brokerName)}


def _print_config(args, data) -> None:
    for addr, cfg in data.items():
        print(f"============{addr}============")
        for k, v in cfg.items():
            print(f"{k:<50s}=  {v}")


@data_command("getNamesrvConfig", "Get configs of name server.", lambda p: None, _print_config)
async def get_namesrv_config(admin: MQAdminExt, args):
    return await admin.get_namesrv_config()


def _setup_update_namesrv_config(p):
    p.add_argument("-k", dest="key", required=True)
    p.add_argument("-v", dest="value", required=True)


def _print_update_namesrv(args, data) -> None:
    print(f"update name server config success![{', '.join(data['namesrvs'])}]")
    print(f"{data['key']} : {data['value']}")


@data_command("updateNamesrvConfig", "Update configs of name server.", _setup_update_namesrv_config,
              _print_update_namesrv)
async def update_namesrv_config(admin: MQAdminExt, args):
    key, value = args.key.strip(), args.value.strip()
    if not key or any(c in key + value for c in "\r\n") or "=" in key:
        raise UsageError("key and value must be one line, and the key without '='")
    await admin.update_namesrv_config({key: value})
    return {"namesrvs": admin.api.namesrv_addrs, "key": key, "value": value}


def _setup_update_kv(p):
    p.add_argument("-s", dest="namespace", required=True)
    p.add_argument("-k", dest="key", required=True)
    p.add_argument("-v", dest="value", required=True)


@data_command("updateKvConfig", "Create or update KV config.", _setup_update_kv,
              lambda a, d: print("update kv config in namespace success."))
async def update_kv_config(admin: MQAdminExt, args):
    if any(c in args.namespace + args.key + args.value for c in "\r\n"):
        raise UsageError("namespace, key and value must be one line")
    await admin.put_kv_config(args.namespace, args.key, args.value)
    return {"namespace": args.namespace, "key": args.key, "value": args.value}


def _setup_delete_kv(p):
    p.add_argument("-s", dest="namespace", required=True)
    p.add_argument("-k", dest="key", required=True)


@data_command("deleteKvConfig", "Delete KV config.", _setup_delete_kv,
              lambda a, d: print("delete kv config from namespace success."))
async def delete_kv_config(admin: MQAdminExt, args):
    await admin.delete_kv_config(args.namespace, args.key)
    return {"namespace": args.namespace, "key": args.key}


# -- store maintenance ------------------------------------------------------------------------------------------


def _setup_b_or_c(p):
    p.add_argument("-b", dest="brokerAddr")
    p.add_argument("-c", dest="clusterName")


def _print_result(args, data) -> None:
    print("success" if all(data["results"].values()) else "false")


@data_command("cleanExpiredCQ", "Clean expired ConsumeQueue on broker.", _setup_b_or_c, _print_result)
async def clean_expired_cq(admin: MQAdminExt, args):
    return {"results": {a: await admin.clean_expired_cq(a) for a in await _all_or_target(admin, args)}}


@data_command("deleteExpiredCommitLog", "Delete expired CommitLog files", _setup_b_or_c, _print_result)
async def delete_expired_commitlog(admin: MQAdminExt, args):
    return {"results": {a: await admin.delete_expired_commitlog(a) for a in await _all_or_target(admin, args)}}


async def _all_or_target(admin: MQAdminExt, args) -> list[str]:
    """-b, -c, or (as the Java tool) every master of every cluster."""
    if args.brokerAddr or args.clusterName:
        return await _target_addrs(admin, args)
    info = await admin.cluster_info()
    return [bd.brokerAddrs[MASTER_ID] for _n, bd in sorted(info.brokerAddrTable.items()) if MASTER_ID in bd.brokerAddrs]


# -- statistics -------------------------------------------------------------------------------------------------


def _setup_stats_all(p):
    p.add_argument("-a", dest="activeTopic", action="store_true", help="print active topic only")
    p.add_argument("-t", dest="topic", help="print select topic only")


def _day_sum(bsd: dict) -> int:
    for k in ("statsDay", "statsHour", "statsMinute"):
        s = int((bsd.get(k) or {}).get("sum", 0) or 0)
        if s:
            return s
    return 0


def _print_stats_all(args, data) -> None:
    print(f"{'#Topic':<32s}  {'#Consumer Group':<32s} {'#Accumulation':>12s} {'#InTPS':>11s} {'#OutTPS':>11s} "
          f"{'#InMsg24Hour':>14s} {'#OutMsg24Hour':>14s}")
    for r in data["rows"]:
        if r["group"] is None:
            print(f"{r['topic']:<64s}  {'':<32s} {0:12d} {r['inTps']:11.2f} {'':>11s} {r['inMsg24Hour']:14d} "
                  f"{'NO_CONSUMER':>14s}")
        else:
            print(f"{r['topic']:<64s}  {r['group']:<64s} {r['accumulation']:12d} {r['inTps']:11.2f} "
                  f"{r['outTps']:11.2f} {r['inMsg24Hour']:14d} {r['outMsg24Hour']:14d}")


async def _stats(admin: MQAdminExt, addr: str, name: str, key: str) -> dict:
    try:
        return await admin.view_broker_stats(addr, name, key)
    except (MQBrokerError, MQClientError, RemotingError, OSError, TimeoutError):
        return {}


@data_command("statsAll", "Topic and Consumer tps stats", _setup_stats_all, _print_stats_all)
async def stats_all(admin: MQAdminExt, args):
    rows = []
    for topic in sorted(await admin.topic_list()):
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)) or (args.topic and topic != args.topic):
            continue
        try:
            route = await admin.topic_route(topic)
            groups = await admin.query_topic_consume_by_who(topic)
        except (MQBrokerError, MQClientError, RemotingError):
            continue
        masters = [bd.brokerAddrs[MASTER_ID] for bd in route.brokerDatas if MASTER_ID in bd.brokerAddrs]
        in_tps, in_day = 0.0, 0
        for addr in masters:
            bsd = await _stats(admin, addr, "TOPIC_PUT_NUMS", topic)
            in_tps += float((bsd.get("statsMinute") or {}).get("tps", 0) or 0)
            in_day += _day_sum(bsd)
        if not groups:
            if not args.activeTopic or in_day > 0:
                rows.append({"topic": topic, "group": None, "inTps": in_tps, "inMsg24Hour": in_day})
            continue
        for g in groups:
            out_tps, out_day = 0.0, 0
            for addr in masters:
                bsd = await _stats(admin, addr, "GROUP_GET_NUMS", f"{topic}@{g}")
                out_tps += float((bsd.get("statsMinute") or {}).get("tps", 0) or 0)
                out_day += _day_sum(bsd)
            try:
                cs = await admin.consume_stats(g, topic)
                acc = max(0, sum(o.brokerOffset - o.consumerOffset for o in cs.offsetTable.values()))
            except (MQBrokerError, MQClientError, RemotingError):
                acc = 0
            if not args.activeTopic or in_day > 0 or out_day > 0:
                rows.append({"topic": topic, "group": g, "accumulation": acc, "inTps": in_tps, "outTps": out_tps,
                             "inMsg24Hour": in_day, "outMsg24Hour": out_day})
    return {"rows": rows}


# -- send round trips -------------------------------------------------------------------------------------------


async def _producer(admin: MQAdminExt) -> Producer:
    p = Producer(f"PID_MQADMIN_{os.getpid()}_{int(time.time() * 1000)}", ";".join(admin.api.namesrv_addrs),
                 retry_times_when_send_failed=0)
    await p.start()
    return p


def _bounded(n: int, what: str) -> int:
    if not 1 <= n <= MAX_SENDS:
        raise UsageError(f"{what} must be between 1 and {MAX_SENDS}")
    return n


def _setup_send_status(p):
    p.add_argument("-b", dest="brokerName", required=True)
    p.add_argument("-s", dest="messageSize", type=int, default=128)
    p.add_argument("-c", dest="count", type=int, default=50)


def _print_send_status(args, data) -> None:
    for s in data["sends"]:
        print(f"rt:{s['rt']}ms, SendResult={s['result']}")


@data_command("sendMsgStatus", "send msg to broker.", _setup_send_status, _print_send_status)
async def send_msg_status(admin: MQAdminExt, args):
    count = _bounded(args.count, "count")
    body = b"a" * _bounded(args.messageSize, "messageSize")
    producer = await _producer(admin)
    sends = []
    try:
        for _ in range(count):
            t0 = time.monotonic()
            r = await producer.send(Message(args.brokerName, body))
            sends.append({"rt": int((time.monotonic() - t0) * 1000), "result": str(r), "sendStatus": r.send_status.value})
    finally:
        await producer.shutdown()
    return {"brokerName": args.brokerName, "sends": sends}


def _setup_check_rt(p):
    p.add_argument("-t", dest="topic", required=True)
    p.add_argument("-a", dest="amount", type=int, default=100)
    p.add_argument("-s", dest="size", type=int, default=128)


def _print_check_rt(args, data) -> None:
    print(f"{'#Broker Name':<32s}  {'#QID':<4s}  {'#Send Result':<20s}    #RT")
    for s in data["sends"]:
        print(f"{s['brokerName']:<32s}  {s['queueId']:<4d}  {str(s['ok']).lower():<20s}    {s['rt']}")
    print(f"Avg RT: {data['avgRT']:.2f}")


@data_command("checkMsgSendRT", "check message send response time", _setup_check_rt, _print_check_rt)
async def check_msg_send_rt(admin: MQAdminExt, args):
    topic = _topic(args.topic)
    amount = _bounded(args.amount, "amount")
    body = b"a" * _bounded(args.size, "size")
    producer = await _producer(admin)
    sends, elapsed = [], 0.0
    try:
        for i in range(amount):
            chosen = {}

            def select(mqs, msg, arg, chosen=chosen):
                mq = mqs[arg % len(mqs)]
                chosen["mq"] = mq
                return mq

            t0 = time.monotonic()
            try:
                await producer.send(Message(topic, body), selector=select, arg=i)
                ok = True
            except (MQBrokerError, MQClientError, RemotingError, OSError, TimeoutError):
                ok = False
            rt = (time.monotonic() - t0) * 1000
            if i:
                elapsed += rt
            mq = chosen.get("mq")
            sends.append({"brokerName": mq.brokerName if mq else "", "queueId": mq.queueId if mq else -1,
                          "ok": ok, "rt": int(rt)})
    finally:
        await producer.shutdown()
    return {"topic": topic, "sends": sends, "avgRT": elapsed / (amount - 1) if amount > 1 else 0.0}


def _setup_cluster_rt(p):
    p.add_argument("-a", dest="amount", type=int, default=50)
    p.add_argument("-s", dest="size", type=int, default=128)
    p.add_argument("-c", dest="cluster")
    p.add_argument("-p", dest="printAsTlog", type=_bool, default=False)
    p.add_argument("-m", dest="machineRoom", default="noname")
    p.add_argument("-i", dest="interval", type=int, default=10, help="print interval (with -r rounds)")
    p.add_argument("-r", dest="rounds", type=int, default=1, help="rounds to run (the Java tool loops forever)")


def _print_cluster_rt(args, data) -> None:
    if not args.printAsTlog:
        print(f"{'#Cluster Name':<24s}  {'#Broker Name':<24s}  {'#RT':<4s}  {'#successCount':<8s}  {'#failCount':<8s}")
    for r in data["rows"]:
        if args.printAsTlog:
            print(f"{r['time']}|{args.machineRoom}|{r['cluster']}|{r['brokerName']}|{round(r['rt'])}")
        else:
            print(f"{r['cluster']:<24s}  {r['brokerName']:<24s}  {r['rt']:<8.2f}  {r['success']:<16d}  "
                  f"{r['fail']:<16d}")


@data_command("clusterRT", "List All clusters Message Send RT", _setup_cluster_rt, _print_cluster_rt)
async def cluster_rt(admin: MQAdminExt, args):
    import asyncio

    amount = _bounded(args.amount, "amount")
    body = b"a" * _bounded(args.size, "size")
    rounds = max(1, min(args.rounds, 1000))
    info = await admin.cluster_info()
    clusters = [args.cluster] if args.cluster else sorted(info.clusterAddrTable)
    producer = await _producer(admin)
    rows = []
    try:
        for rnd in range(rounds):
            if rnd:
                await asyncio.sleep(max(0, args.interval))  # the command's own pacing between rounds
            for cluster in clusters:
                names = info.clusterAddrTable.get(cluster)
                if names is None:
                    raise MQClientError(f"cluster [{cluster}] not exist")
                for name in sorted(names):
                    ok = fail = 0
                    elapsed = 0.0
                    for i in range(amount):
                        t0 = time.monotonic()
                        try:
                            await producer.send(Message(name, body))
                            ok += 1
                        except (MQBrokerError, MQClientError, RemotingError, OSError, TimeoutError):
                            fail += 1
                        if i:
                            elapsed += (time.monotonic() - t0) * 1000
                    rows.append({"time": time.strftime("%Y-%m-%d %H:%M:%S"), "cluster": cluster, "brokerName": name,
                                 "rt": elapsed / (amount - 1) if amount > 1 else 0.0, "success": ok, "fail": fail})
    finally:
        await producer.shutdown()
    return {"rows": rows}

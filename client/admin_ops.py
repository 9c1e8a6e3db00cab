"""The operations behind mqadmin --json and the dashboard's JSON API, returning plain data (dicts and lists).

One place for each operation: mqadmin prints these in the Java tool's text format
or as JSON, the dashboard serves the same JSON. List reads are batched: one
GET_ALL_TOPIC_CONFIG / GET_ALL_SUBSCRIPTIONGROUP_CONFIG / GET_BROKER_CONSUME_STATS
per master broker, concurrent across brokers, so the RPCs of a list page do not
grow with the number of topics or groups. Bad input raises :class:`AdminInputError`
(the dashboard answers it 400, mqadmin exits 1 with its message).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime
import time
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from typing import Any

from client.admin_ext import MQAdminExt
from client.consume_lag import consume_lag
from client.exceptions import MQBrokerError, MQClientError
from client.message import Message
from common import mixall
from common.message import MessageConst, MessageExt, decode_offset_msg_id
from common.mixall import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    get_dlq_topic,
    get_retry_topic,
    is_sys_consumer_group,
)
from common.perm import PermName
from common.topic_validator import check_topic, is_system_topic, validate_group
from remoting import RemotingError, ResponseCode
from remoting.body import BodyError, as_bool, as_int
from remoting.body.route import MASTER_ID
from remoting.body.topic_config import TopicConfig

__all__ = [
    "AdminInputError", "topic_kind", "check_topic_name", "check_group_name", "cluster_overview", "list_topics",
    "topic_status", "topic_detail", "create_topic", "delete_topic", "GroupTables", "fetch_group_tables",
    "group_rows", "list_groups", "group_progress",
    "group_connection", "reset_offset", "search_messages", "message_detail", "message_to_dict",
    "resend_messages", "parse_timestamp", "MAX_PAGE",
]

MAX_PAGE = 200  # the largest page of messages one search call returns
KEY_BATCH = 64  # the broker's maxMsgsNumBatch: the most one QUERY_MESSAGE answers
# The groups every broker creates for itself and the tools (RocketMQ's MixAll names)
SYSTEM_GROUPS = frozenset({mixall.TOOLS_CONSUMER_GROUP, mixall.FILTERSRV_CONSUMER_GROUP,
                           mixall.SELF_TEST_CONSUMER_GROUP, mixall.ONS_HTTP_PROXY_GROUP, mixall.CID_ONSAPI_PULL_GROUP,
                           mixall.CID_ONSAPI_PERMISSION_GROUP, mixall.CID_ONSAPI_OWNER_GROUP,
                           mixall.CID_SYS_RMQ_TRANS})
FAILURES = (MQBrokerError, MQClientError, RemotingError, OSError, TimeoutError)


class AdminInputError(ValueError):
    """Bad input from an operator: a name, a number or a time that cannot be used (HTTP 400)."""


def check_topic_name(topic: str) -> str:
    err = check_topic(topic or "")
    if err:
        raise AdminInputError(err)
    return topic


def check_group_name(group: str) -> str:
    err = validate_group(group or "")
    if err:
        raise AdminInputError(err)
    return group


def topic_kind(topic: str) -> str:
    """normal, retry, dlq or system (the dashboard's filter)."""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return "retry"
    if topic.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return "dlq"
    if is_system_topic(topic) or topic.startswith("rmq_sys_") or topic.endswith("REPLY_TOPIC"):
        return "system"
    return "normal"


async def _gather(aws: list[Awaitable[Any]]) -> list[Any]:
    """Concurrent calls; a failed one yields its exception instead of failing the page."""
    return await asyncio.gather(*aws, return_exceptions=True)


def _err(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


async def _masters(admin: MQAdminExt) -> dict[str, tuple[str, str]]:
    """brokerName -> (cluster, master address) of every broker group with a master."""
    info = await admin.cluster_info()
    cluster_of = {b: c for c, names in info.clusterAddrTable.items() for b in names}
    out = {}
    for name in sorted(info.brokerAddrTable):
        bd = info.brokerAddrTable[name]
        if MASTER_ID in bd.brokerAddrs:
            out[name] = (cluster_of.get(name, bd.cluster), bd.brokerAddrs[MASTER_ID])
    return out


def _f(v: str | None) -> float:
    try:
        return float((v or "0").split()[0])
    except (ValueError, IndexError):
        return 0.0


# -- cluster ---------------------------------------------------------------------------------------------------


async def cluster_overview(admin: MQAdminExt) -> dict:
    """Every broker of every cluster with its role, version, TPS, disk ratio and store lag."""
    info = await admin.cluster_info()
    rows = []
    for cluster in sorted(info.clusterAddrTable):
        for name in sorted(info.clusterAddrTable[cluster]):
            bd = info.brokerAddrTable.get(name)
            for bid, addr in sorted((bd.brokerAddrs if bd else {}).items()):
                rows.append((cluster, name, bid, addr))
    infos = await _gather([admin.broker_runtime_info(r[3]) for r in rows])
    brokers = []
    for (cluster, name, bid, addr), kv in zip(rows, infos, strict=True):
        b: dict[str, Any] = {"cluster": cluster, "brokerName": name, "brokerId": bid, "addr": addr,
                             "role": "MASTER" if bid == MASTER_ID else "SLAVE"}
        if isinstance(kv, BaseException):
            b["error"] = _err(kv)
            brokers.append(b)
            continue
        cl_max = int(kv.get("commitLogMaxOffset", "0") or 0)
        b.update({
            "version": kv.get("brokerVersionDesc", ""),
            "inTps": _f(kv.get("putTps")),
            "outTps": _f(kv.get("getTransferedTps") or kv.get("getTotalTps")),
            "diskRatio": _f(kv.get("commitLogDiskRatio")),
            "commitLogMaxOffset": cl_max,
            "commitLogBehind": int(kv.get("remainHowManyDataToFlush", "0") or 0),
            "dispatchBehind": int(kv.get("dispatchBehindBytes", "0") or 0),
            "msgPutTotalTodayNow": int(kv.get("msgPutTotalTodayNow", "0") or 0),
            "msgGetTotalTodayNow": int(kv.get("msgGetTotalTodayNow", "0") or 0),
            "bootTimestamp": int(kv.get("bootTimestamp", "0") or 0),
        })
        if "dLedgerGroup" in kv:
            b["dledger"] = {"group": kv["dLedgerGroup"], "selfId": kv.get("dLedgerSelfId", ""),
                            "role": kv.get("dLedgerRole", ""), "term": int(kv.get("dLedgerTerm", "0") or 0),
                            "leader": kv.get("dLedgerLeader", ""),
                            "commitLag": int(kv.get("dLedgerCommitLag", "0") or 0)}
        brokers.append(b)
    return {"clusters": sorted(info.clusterAddrTable), "brokers": brokers}


# -- topics ----------------------------------------------------------------------------------------------------


async def list_topics(admin: MQAdminExt, kind: str | None = None, query: str | None = None) -> dict:
    """All topics from one GET_ALL_TOPIC_CONFIG per master: queues, perm, order and brokers of each."""
    if kind not in (None, "", "all", "normal", "retry", "dlq", "system"):
        raise AdminInputError(f"bad topic kind {kind!r}: want normal, retry, dlq, system or all")
    masters = await _masters(admin)
    tables = await _gather([admin.all_topic_config_raw(addr) for _c, addr in masters.values()])
    topics: dict[str, dict] = {}
    errors = {}
    for (name, (cluster, _addr)), table in zip(masters.items(), tables, strict=True):
        if isinstance(table, BaseException):
            errors[name] = _err(table)
            continue
        for t, tc in table.items():
            t = str(t)
            row = topics.get(t)
            if row is None:
                row = topics[t] = {"topic": t, "kind": topic_kind(t), "readQueueNums": 0, "writeQueueNums": 0,
                                   "perm": int(tc.get("perm", 6)), "order": bool(tc.get("order", False)),
                                   "brokers": [], "clusters": []}
            row["readQueueNums"] += int(tc.get("readQueueNums", 0))
            row["writeQueueNums"] += int(tc.get("writeQueueNums", 0))
            row["brokers"].append(name)
            if cluster not in row["clusters"]:
                row["clusters"].append(cluster)
    names = set(masters) | {c for c, _a in masters.values()}
    for t in names & topics.keys():  # the topics named after each cluster and broker (route probes)
        topics[t]["kind"] = "system"
    rows = [r for t, r in sorted(topics.items())
            if (not kind or kind == "all" or r["kind"] == kind) and (not query or query.lower() in t.lower())]
    out: dict[str, Any] = {"topics": rows, "total": len(rows)}
    if errors:
        out["errors"] = errors
    return out


async def topic_status(admin: MQAdminExt, topic: str) -> list[dict]:
    """Per queue: {brokerName, queueId, minOffset, maxOffset, lastUpdateTimestamp}."""
    stats = await admin.topic_stats(check_topic_name(topic))
    return [{"brokerName": mq.brokerName, "queueId": mq.queueId, "minOffset": to.minOffset,
             "maxOffset": to.maxOffset, "lastUpdateTimestamp": to.lastUpdateTimestamp} for mq, to in stats.items()]


async def topic_detail(admin: MQAdminExt, topic: str) -> dict:
    route = await admin.topic_route(check_topic_name(topic))
    status, groups = await _gather([topic_status(admin, topic), admin.query_topic_consume_by_who(topic)])
    return {"topic": topic, "route": route.to_obj(),
            "status": status if not isinstance(status, BaseException) else [],
            "groups": groups if not isinstance(groups, BaseException) else []}


def _int(v: Any, name: str, lo: int, hi: int) -> int:
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise AdminInputError(f"{name} must be an integer, got {v!r}") from None
    if not lo <= n <= hi:
        raise AdminInputError(f"{name} must be between {lo} and {hi}, got {n}")
    return n


async def create_topic(admin: MQAdminExt, topic: str, cluster: str | None = None, broker_addr: str | None = None,
                       read_queue_nums: int = 8, write_queue_nums: int = 8, perm: int = 6,
                       order: bool = False) -> dict:
    """UPDATE_AND_CREATE_TOPIC on one broker or every master of a cluster (the order conf to the NameServer)."""
    tc = TopicConfig(topicName=check_topic_name(topic), readQueueNums=_int(read_queue_nums, "readQueueNums", 1, 1024),
                     writeQueueNums=_int(write_queue_nums, "writeQueueNums", 1, 1024), perm=_int(perm, "perm", 0, 7),
                     order=bool(order))
    if tc.perm not in (PermName.PERM_READ, PermName.PERM_WRITE, PermName.PERM_READ | PermName.PERM_WRITE):
        raise AdminInputError(f"bad perm {tc.perm}: want 2 (W), 4 (R) or 6 (RW)")
    if broker_addr:
        if broker_addr not in await _broker_addrs(admin):
            raise AdminInputError(f"{broker_addr} is no broker of this cluster")
        targets = {"": broker_addr}
    else:
        if not cluster:
            masters = await _masters(admin)
            clusters = sorted({c for c, _a in masters.values()})
            if len(clusters) != 1:
                raise AdminInputError("cluster is required (more than one cluster)")
            cluster = clusters[0]
        try:
            targets = await admin.cluster_master_addrs(cluster)
        except MQClientError as e:
            raise AdminInputError(str(e)) from None
    for addr in targets.values():
        await admin.create_topic(addr, tc)
    result: dict[str, Any] = {"topic": topic, "brokers": list(targets.values()), "config": tc.to_obj()}
    if order and cluster:
        conf = ";".join(f"{name}:{tc.writeQueueNums}" for name in targets)
        await admin.put_kv_config("ORDER_TOPIC_CONFIG", topic, conf)
        result["orderConf"] = conf
    return result


async def delete_topic(admin: MQAdminExt, topic: str, cluster: str | None = None) -> dict:
    check_topic_name(topic)
    if not cluster:
        route = await admin.topic_route(topic)
        clusters = sorted({bd.cluster for bd in route.brokerDatas})
    else:
        clusters = [cluster]
    for c in clusters:
        await admin.delete_topic(topic, c)
    return {"topic": topic, "clusters": clusters}


# -- consumer groups -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class GroupTables:
    """What the group list is computed from: per master, its subscription groups and consume lag."""

    addrs: list[str]
    configs: list[Any]  # group -> its config as the wire's object, or the exception of that broker
    stats: list[Any]  # dict[str, GroupLag] or the exception of that broker
    at: int  # when fetched (ms)


async def fetch_group_tables(admin: MQAdminExt) -> GroupTables:
    """One GET_ALL_SUBSCRIPTIONGROUP_CONFIG and one GET_BROKER_CONSUME_STATS per master, concurrently."""
    masters = await _masters(admin)
    addrs = [a for _c, a in masters.values()]
    results = await _gather([admin.all_subscription_group_raw(a) for a in addrs]
                            + [admin.broker_consume_lag(a) for a in addrs])
    return GroupTables(addrs, results[:len(addrs)], results[len(addrs):], int(time.time() * 1000))


def _settings(cfg: dict) -> dict:
    """The SubscriptionGroupConfig fields a group row shows (RocketMQ's defaults where absent or unreadable)."""
    try:
        return {"retryMaxTimes": as_int(cfg.get("retryMaxTimes"), 16, "retryMaxTimes"),
                "consumeEnable": as_bool(cfg.get("consumeEnable"), True),
                "broadcast": as_bool(cfg.get("consumeBroadcastEnable"), True)}
    except BodyError:
        return {"retryMaxTimes": 16, "consumeEnable": True, "broadcast": True}


def _answered(results: list[Any]) -> Iterator[Any]:
    """The brokers' answers of a gather, without the failures (those are shown elsewhere)."""
    return (r for r in results if not isinstance(r, BaseException))


def _config_rows(configs: list[Any]) -> dict[str, dict]:
    groups: dict[str, dict] = {}
    for table in _answered(configs):
        for g, cfg in table.items():
            row = groups.get(g)
            if row is None:
                if not isinstance(cfg, dict):
                    continue
                row = groups[g] = {"group": g, "system": g in SYSTEM_GROUPS or is_sys_consumer_group(g),
                                   "brokers": 0, "consumeTps": 0.0, "diff": 0, "lagMillis": 0, **_settings(cfg)}
            row["brokers"] += 1
    return groups


def _add_lag(groups: dict[str, dict], stats: list[Any], at: int) -> None:
    for per_broker in _answered(stats):
        for g, row in groups.items():
            lag = per_broker.get(g)
            if lag is None:
                continue
            row["consumeTps"] += lag.consumeTps
            row["diff"] += lag.diff
            if lag.oldest > 0:  # lag in time: how old the last consumed message of a lagging queue is
                row["lagMillis"] = max(row["lagMillis"], at - lag.oldest)


def group_rows(tables: GroupTables) -> dict[str, dict]:
    """group -> {group, brokers, consumeTps, diff, lagMillis, retryMaxTimes, consumeEnable, broadcast}."""
    groups = _config_rows(tables.configs)
    _add_lag(groups, tables.stats, tables.at)
    return groups


def _page_lag(body: bytes, names: set[str]) -> dict[str, Any] | BaseException:
    try:
        return consume_lag(body, names) if body else {}
    except (ValueError, AttributeError, TypeError) as e:  # a body of another shape: that broker's rows stay 0
        return e


async def list_groups(admin: MQAdminExt, query: str | None = None, offset: int = 0, limit: int = 50,
                      with_clients: bool = True, tables: GroupTables | None = None, system: bool = True) -> dict:
    """Groups with TPS and lag (messages, time) read live (one GET_ALL_SUBSCRIPTIONGROUP_CONFIG and one
    GET_BROKER_CONSUME_STATS per master) or from the ``tables`` given (e.g. a recent sample), and the
    clients of the rows on this page: at most ``limit`` GET_CONSUMER_CONNECTION_LIST calls, so the RPCs of
    a page stay fixed as groups grow. Read live, the page's connection calls overlap the consume stats
    (the page's rows follow from the group names alone)."""
    offset = _int(offset, "offset", 0, 10**9)
    limit = _int(limit, "limit", 1, 500)
    lag_task: asyncio.Future | None = None
    try:
        if tables is None:
            addrs = [a for _c, a in (await _masters(admin)).values()]
            lag_task = asyncio.ensure_future(_gather([admin.broker_consume_stats_body(a) for a in addrs]))
            configs = await _gather([admin.all_subscription_group_raw(a) for a in addrs])
        else:
            addrs, configs = tables.addrs, tables.configs
        groups = _config_rows(configs)
        rows = [groups[g] for g in sorted(groups)
                if (not query or query.lower() in g.lower()) and (system or not groups[g]["system"])]
        page = rows[offset:offset + limit]
        conns = []
        if with_clients and page and addrs:
            conns = await _gather([admin.consumer_connection(r["group"], addrs[0]) for r in page])
        if lag_task is not None:  # only the page's groups are read out of the answers
            names = {r["group"] for r in page}
            stats = [b if isinstance(b, BaseException) else _page_lag(b, names) for b in await lag_task]
            tables = GroupTables(addrs, configs, stats, int(time.time() * 1000))
    finally:
        if lag_task is not None and not lag_task.done():
            lag_task.cancel()
    _add_lag({r["group"]: r for r in page}, tables.stats, tables.at)
    for r, cc in zip(page, conns, strict=False):
        if isinstance(cc, BaseException):
            r.update(clients=0, consumeType="", messageModel="")
        else:
            r.update(clients=len(cc.connectionSet), consumeType=cc.consumeType or "",
                     messageModel=cc.messageModel or "")
    return {"groups": page, "total": len(rows), "offset": offset, "limit": limit, "sampledAt": tables.at}


async def group_progress(admin: MQAdminExt, group: str, topic: str | None = None) -> dict:
    """{"topics":[{topic, brokerName, queueId, brokerOffset, consumerOffset, diff, lastTimestamp}], "diffTotal"}."""
    check_group_name(group)
    if topic:
        check_topic_name(topic)
    try:
        stats = await admin.consume_stats(group, topic)
    except MQBrokerError as e:
        if e.code in (ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST):
            raise LookupError(f"consumer group {group} not found") from None
        raise
    rows = []
    total = 0
    for mq in sorted(stats.offsetTable, key=lambda q: (q.topic, q.brokerName, q.queueId)):
        ow = stats.offsetTable[mq]
        diff = ow.brokerOffset - ow.consumerOffset
        total += diff
        rows.append({"topic": mq.topic, "brokerName": mq.brokerName, "queueId": mq.queueId,
                     "brokerOffset": ow.brokerOffset, "consumerOffset": ow.consumerOffset, "diff": diff,
                     "lastTimestamp": ow.lastTimestamp})
    return {"group": group, "topics": rows, "diffTotal": total, "consumeTps": stats.consumeTps}


async def group_connection(admin: MQAdminExt, group: str) -> dict:
    check_group_name(group)
    try:
        cc = await admin.consumer_connection(group)
    except MQBrokerError as e:
        if e.code == ResponseCode.CONSUMER_NOT_ONLINE:
            return {"group": group, "online": False, "connections": [], "subscriptions": []}
        if e.code == ResponseCode.TOPIC_NOT_EXIST:
            raise LookupError(f"consumer group {group} not found") from None
        raise
    return {"group": group, "online": True, "consumeType": cc.consumeType, "messageModel": cc.messageModel,
            "consumeFromWhere": cc.consumeFromWhere,
            "connections": [{"clientId": c.clientId, "clientAddr": c.clientAddr, "language": c.language,
                             "version": c.version} for c in sorted(cc.connectionSet, key=lambda c: c.clientId)],
            "subscriptions": [{"topic": t, "subString": sd.subString, "expressionType": sd.expressionType}
                              for t, sd in sorted(cc.subscriptionTable.items())]}


async def reset_offset(admin: MQAdminExt, group: str, topic: str, timestamp: int, force: bool = True) -> dict:
    """Reset ``group`` on ``topic`` to the first message stored at or after ``timestamp`` (ms; -1: the end)."""
    check_group_name(group)
    check_topic_name(topic)
    if timestamp != -1 and timestamp < 0:
        raise AdminInputError(f"bad timestamp {timestamp}")
    table = await admin.reset_offset_by_time(group, topic, timestamp, force)
    return {"group": group, "topic": topic, "timestamp": timestamp,
            "offsets": [{"brokerName": mq.brokerName, "queueId": mq.queueId, "offset": off}
                        for mq, off in sorted(table.items(), key=lambda kv: (kv[0].brokerName, kv[0].queueId))]}


# -- messages --------------------------------------------------------------------------------------------------


def message_to_dict(m: MessageExt, with_body: bool = False) -> dict:
    d: dict[str, Any] = {
        "msgId": m.properties.get(MessageConst.UNIQ_KEY) or m.msg_id, "offsetMsgId": m.msg_id, "topic": m.topic,
        "tags": m.properties.get(MessageConst.TAGS, ""), "keys": m.properties.get(MessageConst.KEYS, ""),
        "queueId": m.queue_id, "queueOffset": m.queue_offset, "commitLogOffset": m.commit_log_offset,
        "bornTimestamp": m.born_timestamp, "storeTimestamp": m.store_timestamp,
        "bornHost": f"{m.born_host[0]}:{m.born_host[1]}", "storeHost": f"{m.store_host[0]}:{m.store_host[1]}",
        "reconsumeTimes": m.reconsume_times, "sysFlag": m.sys_flag, "bodySize": len(m.body),
        # a retried or dead message keeps the topic it was first sent to in RETRY_TOPIC
        "originTopic": m.properties.get("RETRY_TOPIC") or m.topic,
    }
    if with_body:
        d["properties"] = dict(m.properties)
        d["bodyBase64"] = base64.b64encode(m.body).decode("ascii")
        try:
            d["bodyText"] = m.body.decode("utf-8")
        except UnicodeDecodeError:
            d["bodyText"] = None
    return d


def _encode_cursor(queue_index: int, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{queue_index}:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[int, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        qi, off = raw.split(":")
        return int(qi), int(off)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise AdminInputError(f"bad cursor {cursor!r}") from None


async def search_messages(admin: MQAdminExt, topic: str, *, key: str | None = None, msg_id: str | None = None,
                          begin: int | None = None, end: int | None = None, cursor: str | None = None,
                          limit: int = 32) -> dict:
    """By msgId (offset id or unique key), by key, or by store-time range with a cursor to the next page."""
    limit = _int(limit, "limit", 1, MAX_PAGE)
    if msg_id:
        return {"messages": [message_to_dict(m) for m in await _by_id(admin, msg_id, topic)], "next": None}
    check_topic_name(topic)
    if key:
        return await _by_key(admin, topic, key, begin or 0, end if end is not None else 2**63 - 1, cursor, limit)
    if begin is None or end is None:
        raise AdminInputError("give msgId, key, or begin and end (ms)")
    if end < begin:
        raise AdminInputError("end is before begin")
    return await _by_time(admin, topic, begin, end, cursor, limit)


async def _by_key(admin: MQAdminExt, topic: str, key: str, begin: int, end: int, cursor: str | None,
                  limit: int) -> dict:
    """Newest first, ``limit`` per page. The broker's index answers the newest matches up to a count, so
    the next page asks up to the oldest store time shown (the cursor: that time and how many messages of
    it the pages already showed). Exact while fewer than KEY_BATCH messages of the key share a second."""
    skip = 0
    if cursor:
        end, skip = _decode_cursor(cursor)
        if skip < 0:
            raise AdminInputError(f"bad cursor {cursor!r}")
    # The index keeps store times in whole seconds, so its answer may hold messages a little newer than
    # ``end``: ask for the broker's largest batch and bound each message here.
    msgs = await admin.query_message(topic, key, max(KEY_BATCH, limit + skip), begin, end)
    msgs = [m for m in msgs if begin <= m.store_timestamp <= end]
    msgs.sort(key=lambda m: (-m.store_timestamp, m.msg_id))
    seen_at_end = 0
    page = []
    for m in msgs:
        if m.store_timestamp == end and seen_at_end < skip:
            seen_at_end += 1
            continue
        page.append(m)
        if len(page) == limit:
            break
    nxt = None
    if len(page) == limit:  # there may be more (the last page may then come back empty)
        last = page[-1].store_timestamp
        same = sum(1 for m in page if m.store_timestamp == last) + (skip if last == end else 0)
        nxt = _encode_cursor(last, same)
    return {"messages": [message_to_dict(m) for m in page], "next": nxt}


def _offset_id_addr(msg_id: str) -> str | None:
    """The store address an offset id names, or None (4.9's unique keys have the same length)."""
    try:
        (host, port), _off = decode_offset_msg_id(msg_id)
    except ValueError:
        return None
    if not 0 < port < 65536:
        return None
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _broker_addrs(admin: MQAdminExt) -> set[str]:
    info = await admin.cluster_info()
    return {a for bd in info.brokerAddrTable.values() for a in bd.brokerAddrs.values()}


async def _by_id(admin: MQAdminExt, msg_id: str, topic: str | None) -> list[MessageExt]:
    """A unique key (with the topic) or an offset id (VIEW_MESSAGE_BY_ID at the address inside it)."""
    if topic:
        found = await admin.query_message(check_topic_name(topic), msg_id, 32, unique_key=True)
        if found:
            return found
    addr = _offset_id_addr(msg_id)
    if addr is not None:
        # only a broker of this cluster is asked: an id from outside must not make us connect anywhere
        if addr not in await _broker_addrs(admin):
            if topic:
                return []
            raise AdminInputError(f"message id {msg_id} names {addr}, no broker of this cluster")
        try:
            return [await admin.view_message(msg_id)]
        except FAILURES:
            if topic:
                return []
            raise
    if not topic:
        raise AdminInputError("a unique message id needs the topic")
    return []


async def _by_time(admin: MQAdminExt, topic: str, begin: int, end: int, cursor: str | None, limit: int) -> dict:
    route = await admin.topic_route(topic)
    addr_of = {bd.brokerName: bd.brokerAddrs.get(MASTER_ID) or bd.select_broker_addr() for bd in route.brokerDatas}
    queues = [q for q in await admin.subscribe_queues(topic) if addr_of.get(q.brokerName)]
    qi, start = _decode_cursor(cursor) if cursor else (0, -1)
    out: list[MessageExt] = []
    while qi < len(queues) and len(out) < limit:
        mq = queues[qi]
        addr = addr_of[mq.brokerName]
        # The broker's time search answers the nearest stored offset, not a bound: scan from it to the
        # queue's end and stop at the first message stored after ``end`` (store times rise within a queue).
        hi = await admin.api.get_max_offset(addr, mq)
        lo = start if start >= 0 else await admin.api.search_offset(addr, mq, begin)
        off = lo
        while off < hi and len(out) < limit:
            try:
                msgs = await admin.query_message_by_offset(topic, mq.brokerName, mq.queueId, off,
                                                           min(32, limit - len(out), hi - off))
            except MQBrokerError:
                msgs = []
            if not msgs:
                break
            for m in msgs:
                if m.queue_offset >= hi or m.store_timestamp > end:
                    hi = off
                    break
                if m.store_timestamp >= begin:
                    out.append(m)
                off = m.queue_offset + 1
                if len(out) >= limit:
                    break
        if len(out) >= limit and off < hi:
            return {"messages": [message_to_dict(m) for m in out], "next": _encode_cursor(qi, off)}
        qi, start = qi + 1, -1
    nxt = _encode_cursor(qi, -1) if qi < len(queues) else None
    return {"messages": [message_to_dict(m) for m in out], "next": nxt}


async def message_detail(admin: MQAdminExt, msg_id: str, topic: str | None = None) -> dict:
    msgs = await _by_id(admin, msg_id, topic)
    if not msgs:
        raise LookupError(f"message {msg_id} not found")
    return message_to_dict(msgs[0], with_body=True)


_DROP_ON_RESEND = (MessageConst.UNIQ_KEY, "MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME", "REAL_TOPIC", "REAL_QID",
                   "DELAY", "RETRY_TOPIC", "TRAN_MSG", "PGROUP")


async def resend_messages(admin: MQAdminExt, producer: Any, group: str, msg_ids: list[str],
                          client_id: str | None = None, topic: str | None = None) -> dict:
    """Re-deliver stored messages to ``group``: CONSUME_MESSAGE_DIRECTLY to ``client_id``, or else a copy sent
    to %RETRY%group (its RETRY_TOPIC names the original topic, so the consumer sees the original topic).
    ``producer`` is a started :class:`client.producer.Producer`. Reports the result of each message."""
    check_group_name(group)
    if not msg_ids:
        raise AdminInputError("no message ids")
    if len(msg_ids) > MAX_PAGE:
        raise AdminInputError(f"at most {MAX_PAGE} messages per resend")
    results = []
    for mid in msg_ids:
        r: dict[str, Any] = {"msgId": mid}
        try:
            msgs = await _by_id(admin, mid, topic)
            if not msgs:
                raise LookupError(f"message {mid} not found")
            m = msgs[0]
            if client_id:
                ans = await admin.consume_message_directly(group, client_id, m.msg_id)
                r["ok"] = ans.get("consumeResult") in ("CR_SUCCESS", "SUCCESS")
                r["result"] = ans.get("consumeResult")
                if not r["ok"]:
                    r["error"] = ans.get("remark") or f"consume result {ans.get('consumeResult')}"
            else:
                r.update(await _resend_to_retry(producer, group, m))
        except (AdminInputError, LookupError) as e:
            r.update(ok=False, error=str(e))
        except FAILURES as e:
            r.update(ok=False, error=_err(e))
        results.append(r)
    return {"group": group, "results": results, "ok": sum(1 for r in results if r.get("ok"))}


async def _resend_to_retry(producer: Any, group: str, m: MessageExt) -> dict:
    original = m.topic
    if original.startswith(RETRY_GROUP_TOPIC_PREFIX) or original == get_dlq_topic(group):
        original = m.properties.get("RETRY_TOPIC") or original
    props = {k: v for k, v in m.properties.items() if k not in _DROP_ON_RESEND and k not in (
        MessageConst.TAGS, MessageConst.KEYS)}
    props["RETRY_TOPIC"] = original
    msg = Message(get_retry_topic(group), m.body, tags=m.properties.get(MessageConst.TAGS) or None,
                  keys=m.properties.get(MessageConst.KEYS) or None, properties=props)
    res = await producer.send(msg)
    return {"ok": res.send_status.value == "SEND_OK", "result": res.send_status.value, "newMsgId": res.msg_id,
            "brokerName": res.message_queue.brokerName, "queueId": res.message_queue.queueId}


def parse_timestamp(v: str | int | None, name: str = "timestamp") -> int:
    """Milliseconds since the epoch from: an integer, ``now`` (-1), ``yyyy-MM-dd#HH:mm:ss:SSS`` (the Java
    tool's), or ISO ``yyyy-MM-ddTHH:mm[:ss[.fff]]`` (a browser's datetime-local); local time."""

    if v is None or v == "":
        raise AdminInputError(f"{name} is required")
    if isinstance(v, int):
        return v
    v = v.strip()
    if v == "now":
        return -1
    if v.lstrip("-").isdigit():
        return int(v)
    for fmt in ("%Y-%m-%d#%H:%M:%S:%f",):
        try:
            return int(datetime.datetime.strptime(v, fmt).timestamp() * 1000)
        except ValueError:
            pass
    try:
        return int(datetime.datetime.fromisoformat(v).timestamp() * 1000)
    except ValueError:
        raise AdminInputError(f"bad {name} {v!r}: want now, milliseconds, yyyy-MM-dd#HH:mm:ss:SSS or "
                              "yyyy-MM-ddTHH:mm:ss") from None

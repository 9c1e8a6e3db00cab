"""MQAdmin: the admin client behind bin/mqadmin (Java DefaultMQAdminExt, the parts mqadmin uses).

Plain request/response calls to the NameServer and brokers over one
RemotingClient; each method raises :class:`MQBrokerError` with the server's
code and remark, or :class:`MQClientError` for client-side problems.
"""

from __future__ import annotations

from client.acl import SessionCredentials
from client.client_config import ClientConfig
from client.exceptions import MQBrokerError, MQClientError
from client.mq_client_api import MQClientAPI, check, request
from client.pull_api_wrapper import PullSysFlag, decompress_body
from client.topic_publish_info import route_to_subscribe_info, sort_key
from common.message import MessageConst, MessageExt, decode_messages, decode_offset_msg_id
from common.mixall import get_retry_topic
from remoting import RemotingClient, RemotingCommand, RequestCode, ResponseCode, fastjson
from remoting.body.admin import GroupList, TopicOffset, TopicStatsTable
from remoting.body.admin_extra import (
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    QueryCorrectionOffsetBody,
)
from remoting.body.cluster import ClusterInfo
from remoting.body.consumer import (
    ConsumerConnection,
    ConsumeStats,
    MessageQueue,
    ProducerConnection,
    ResetOffsetBody,
)
from remoting.body.kv import KVTable
from remoting.body.route import MASTER_ID, TopicRouteData
from remoting.body.subscription_group import SubscriptionGroupConfig
from remoting.body.topic_config import TopicConfig
from remoting.header.admin_extra import (
    GetAllProducerInfoRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryCorrectionOffsetHeader,
    ResumeCheckHalfMessageRequestHeader,
)
from remoting.header.broker import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryMessageRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from remoting.header.client_extra import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
)
from remoting.header.namesrv import DeleteTopicFromNamesrvRequestHeader, PutKVConfigRequestHeader

__all__ = ["MQAdmin", "parse_properties_text"]

LONG_MAX = 2**63 - 1


def parse_properties_text(text: str) -> dict[str, str]:
    """``key=value`` lines (Java Properties, simplified: no escapes or continuations) into an ordered dict."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        k, sep, v = line.partition("=")
        if sep:
            out[k.strip()] = v.strip()
    return out


class MQAdmin:
    """Admin operations; ``async with MQAdmin("127.0.0.1:9876") as admin: ...``."""

    def __init__(self, namesrv_addr: str | None = None, timeout: float = 5.0, *,
                 credentials: SessionCredentials | None = None, use_tls: bool = False,
                 api_class: type[MQClientAPI] = MQClientAPI):
        # api_class: the dashboard passes a subclass that counts RPCs per page view
        cfg = ClientConfig(namesrv_addr=namesrv_addr) if namesrv_addr else ClientConfig()
        cfg.credentials, cfg.use_tls = credentials, use_tls
        self.remoting = RemotingClient(name="mqadmin", ssl_context=cfg.ssl_context())
        self.api = api_class(self.remoting, cfg.namesrv_list(), timeout, rpc_hook=cfg.rpc_hook())
        self.timeout = timeout

    async def close(self) -> None:
        await self.remoting.close()

    async def __aenter__(self) -> MQAdmin:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _call(self, addr: str, code: int, header=None, body: bytes | None = None,
                    ok: tuple[int, ...] = (ResponseCode.SUCCESS,)):
        return check(await self.api.invoke(addr, request(code, header, body), self.timeout), addr, ok)

    # -- NameServer -----------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        return await self.api.get_cluster_info()

    async def topic_list(self) -> list[str]:
        return list((await self.api.get_topic_list()).topicList)

    async def topic_route(self, topic: str) -> TopicRouteData:
        route = await self.api.get_topic_route(topic)
        if route is None:
            raise MQBrokerError(ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}")
        return route

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        for addr in self.api.namesrv_addrs:
            await self._call(addr, RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader(namespace=namespace, key=key,
                                                                                        value=value))

    async def cluster_master_addrs(self, cluster: str) -> dict[str, str]:
        """brokerName -> master address of every broker in ``cluster``."""
        info = await self.cluster_info()
        names = info.clusterAddrTable.get(cluster)
        if names is None:
            raise MQClientError(f"cluster [{cluster}] not exist")
        out = {}
        for name in sorted(names):
            bd = info.brokerAddrTable.get(name)
            if bd is not None and MASTER_ID in bd.brokerAddrs:
                out[name] = bd.brokerAddrs[MASTER_ID]
        return out

    # -- topics ---------------------------------------------------------------------------------------

    async def create_topic(self, addr: str, tc: TopicConfig) -> None:
        h = CreateTopicRequestHeader(topic=tc.topicName, defaultTopic="TBW102", readQueueNums=tc.readQueueNums,
                                     writeQueueNums=tc.writeQueueNums, perm=tc.perm,
                                     topicFilterType=str(tc.topicFilterType), topicSysFlag=tc.topicSysFlag,
                                     order=tc.order)
        await self._call(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, h)

    async def delete_topic(self, topic: str, cluster: str) -> None:
        for addr in (await self.cluster_master_addrs(cluster)).values():
            await self._call(addr, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic=topic))
        for addr in self.api.namesrv_addrs:
            await self._call(addr, RequestCode.DELETE_TOPIC_IN_NAMESRV,
                             DeleteTopicFromNamesrvRequestHeader(topic=topic, clusterName=cluster))

    async def topic_stats(self, topic: str) -> dict[MessageQueue, TopicOffset]:
        route = await self.topic_route(topic)
        out: dict[MessageQueue, TopicOffset] = {}
        for bd in route.brokerDatas:
            addr = bd.select_broker_addr()
            if addr is None:
                continue
            resp = await self._call(addr, RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic=topic))
            out.update(TopicStatsTable.from_json(resp.body).offsetTable)
        return dict(sorted(out.items(), key=lambda kv: sort_key(kv[0])))

    async def query_topic_consume_by_who(self, topic: str) -> list[str]:
        route = await self.topic_route(topic)
        groups: set[str] = set()
        for bd in route.brokerDatas:
            addr = bd.select_broker_addr()
            if addr:
                resp = await self._call(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
                                        QueryTopicConsumeByWhoRequestHeader(topic=topic))
                groups.update(GroupList.from_json(resp.body).groupList)
        return sorted(groups)

    # -- brokers ---------------------------------------------------------------------------------------

    async def broker_runtime_info(self, addr: str) -> dict[str, str]:
        resp = await self._call(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        return dict(KVTable.from_json(resp.body).table)

    async def get_broker_config(self, addr: str) -> dict[str, str]:
        resp = await self._call(addr, RequestCode.GET_BROKER_CONFIG)
        return parse_properties_text((resp.body or b"").decode("utf-8"))

    async def update_broker_config(self, addr: str, props: dict[str, str]) -> None:
        body = "".join(f"{k}={v}\n" for k, v in props.items()).encode("utf-8")
        await self._call(addr, RequestCode.UPDATE_BROKER_CONFIG, None, body)

    # -- groups ------------------------------------------------------------------------------------------

    async def create_subscription_group(self, addr: str, cfg: SubscriptionGroupConfig) -> None:
        await self._call(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, cfg.to_json())

    async def delete_subscription_group(self, addr: str, group: str, remove_offset: bool = False) -> None:
        await self._call(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP,
                         DeleteSubscriptionGroupRequestHeader(groupName=group, removeOffset=remove_offset))

    async def _group_broker_addrs(self, group: str, topic: str | None = None) -> list[str]:
        route = None
        for t in ([get_retry_topic(group)] + ([topic] if topic else [])):
            route = await self.api.get_topic_route(t)
            if route is not None:
                break
        if route is None:
            raise MQBrokerError(ResponseCode.TOPIC_NOT_EXIST, f"no route for consumer group {group}")
        return [a for a in (bd.select_broker_addr() for bd in route.brokerDatas) if a]

    async def consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        total = ConsumeStats()
        for addr in await self._group_broker_addrs(group, topic):
            resp = await self._call(addr, RequestCode.GET_CONSUME_STATS,
                                    GetConsumeStatsRequestHeader(consumerGroup=group, topic=topic))
            cs = ConsumeStats.from_json(resp.body)
            total.offsetTable.update(cs.offsetTable)
            total.consumeTps += cs.consumeTps
        return total

    async def consumer_connection(self, group: str, addr: str | None = None) -> ConsumerConnection:
        addrs = [addr] if addr else await self._group_broker_addrs(group)
        last: Exception | None = None
        for a in addrs:
            try:
                resp = await self._call(a, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                        GetConsumerConnectionListRequestHeader(consumerGroup=group))
                return ConsumerConnection.from_json(resp.body)
            except MQBrokerError as e:
                last = e
        raise last or MQClientError(f"no broker for group {group}")

    async def consumer_running_info(self, group: str, client_id: str, jstack: bool = False) -> dict:
        """GET_CONSUMER_RUNNING_INFO relayed by a broker the consumer is connected to."""
        h = GetConsumerRunningInfoRequestHeader(consumerGroup=group, clientId=client_id, jstackEnable=jstack)
        resp = await self._relay(group, RequestCode.GET_CONSUMER_RUNNING_INFO, h, None)
        return fastjson.loads(resp.body) if resp.body else {}

    async def consume_message_directly(self, group: str, client_id: str, offset_msg_id: str) -> dict:
        """CONSUME_MESSAGE_DIRECTLY: have one consumer run its listener on one stored message."""
        addr, raw = await self._view_by_id(offset_msg_id)
        h = ConsumeMessageDirectlyResultRequestHeader(consumerGroup=group, clientId=client_id, msgId=offset_msg_id)
        resp = await self._relay(group, RequestCode.CONSUME_MESSAGE_DIRECTLY, h, raw.body, prefer=addr)
        return fastjson.loads(resp.body) if resp.body else {}

    async def _relay(self, group: str, code: int, h, body: bytes | None, prefer: str | None = None):
        addrs = await self._group_broker_addrs(group)
        if prefer in addrs:
            addrs.remove(prefer)
            addrs.insert(0, prefer)
        last: Exception | None = None
        for addr in addrs:
            try:
                return await self._call(addr, code, h, body)
            except MQBrokerError as e:
                last = e
        raise last or MQClientError(f"no broker for group {group}")

    async def producer_connection(self, group: str, topic: str) -> ProducerConnection:
        route = await self.topic_route(topic)
        merged = ProducerConnection()
        seen = set()
        for bd in route.brokerDatas:
            addr = bd.select_broker_addr()
            if not addr:
                continue
            resp = await self._call(addr, RequestCode.GET_PRODUCER_CONNECTION_LIST,
                                    GetProducerConnectionListRequestHeader(producerGroup=group))
            for c in ProducerConnection.from_json(resp.body).connectionSet:
                if (c.clientId, c.clientAddr) not in seen:
                    seen.add((c.clientId, c.clientAddr))
                    merged.connectionSet.append(c)
        return merged

    # -- messages --------------------------------------------------------------------------------------------

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """The message of an offset msgId (VIEW_MESSAGE_BY_ID at the broker encoded in the id)."""
        _addr, resp = await self._view_by_id(offset_msg_id)
        msgs = decode_messages(resp.body or b"")
        if not msgs:
            raise MQClientError(f"message {offset_msg_id} not found")
        decompress_body(msgs[0])
        return msgs[0]

    async def _view_by_id(self, offset_msg_id: str) -> tuple[str, RemotingCommand]:
        """(broker address, VIEW_MESSAGE_BY_ID answer) of the broker and offset an offset msgId encodes."""
        try:
            (host, port), offset = decode_offset_msg_id(offset_msg_id)
        except ValueError as e:
            raise MQClientError(f"bad offset message id {offset_msg_id!r}: {e}") from e
        addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return addr, await self._call(addr, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=offset))

    async def query_message(self, topic: str, key: str, max_num: int = 64, begin: int = 0, end: int = LONG_MAX,
                            unique_key: bool = False) -> list[MessageExt]:
        """Messages of ``topic`` whose KEYS (or UNIQ_KEY with ``unique_key``) contain ``key``, from every broker."""
        route = await self.topic_route(topic)
        found: list[MessageExt] = []
        for bd in route.brokerDatas:
            addr = bd.select_broker_addr()
            if not addr:
                continue
            cmd = request(RequestCode.QUERY_MESSAGE, QueryMessageRequestHeader(
                topic=topic, key=key, maxNum=max_num, beginTimestamp=begin, endTimestamp=end))
            if unique_key:
                cmd.add_ext_field("_UNIQUE_KEY_QUERY", "true")
            resp = await self.api.invoke(addr, cmd, self.timeout)
            if resp.code == ResponseCode.QUERY_NOT_FOUND:
                continue
            check(resp, addr)
            for m in decode_messages(resp.body or b""):
                if m.topic != topic:
                    continue
                if unique_key:
                    ok = m.properties.get(MessageConst.UNIQ_KEY) == key
                else:
                    ok = key in (m.properties.get(MessageConst.KEYS) or "").split(MessageConst.KEY_SEPARATOR)
                if ok:
                    decompress_body(m)
                    found.append(m)
        return found

    async def query_message_by_offset(self, topic: str, broker_name: str, queue_id: int, offset: int,
                                      max_nums: int = 1) -> list[MessageExt]:
        """Pull ``max_nums`` messages at ``offset`` of one queue (no subscription needed)."""
        route = await self.topic_route(topic)
        bd = next((b for b in route.brokerDatas if b.brokerName == broker_name), None)
        if bd is None or bd.select_broker_addr() is None:
            raise MQClientError(f"broker {broker_name} not in the route of {topic}")
        h = PullMessageRequestHeader(consumerGroup="TOOLS_CONSUMER", topic=topic, queueId=queue_id, queueOffset=offset,
                                     maxMsgNums=max_nums, sysFlag=PullSysFlag.SUBSCRIPTION, commitOffset=0,
                                     suspendTimeoutMillis=0, subVersion=0, subscription="*", expressionType="TAG")
        addr = bd.select_broker_addr()
        resp = await self.api.invoke(addr, request(RequestCode.PULL_MESSAGE, h), self.timeout)
        if resp.code != ResponseCode.SUCCESS:
            rh = resp.decode_header(PullMessageResponseHeader) if resp.ext_fields else None
            hint = f" (queue offsets {rh.minOffset}..{rh.maxOffset})" if rh else ""
            raise MQBrokerError(resp.code, (resp.remark or "no message") + hint, addr)
        msgs = decode_messages(resp.body or b"")
        for m in msgs:
            decompress_body(m)
        return msgs

    async def subscribe_queues(self, topic: str) -> list[MessageQueue]:
        return sorted(route_to_subscribe_info(topic, await self.topic_route(topic)), key=sort_key)

    async def reset_offset_by_time(self, group: str, topic: str, timestamp: int, force: bool = True
                                   ) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET on every broker of ``topic``; offline fallback when no consumer is online."""
        route = await self.topic_route(topic)
        result: dict[MessageQueue, int] = {}
        for bd in route.brokerDatas:
            addr = bd.select_broker_addr()
            if not addr:
                continue
            h = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp, isForce=force)
            resp = await self.api.invoke(addr, request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, h), self.timeout)
            if resp.code == ResponseCode.CONSUMER_NOT_ONLINE:
                result.update(await self._reset_offset_offline(addr, bd.brokerName, group, topic, timestamp, force))
                continue
            check(resp, addr)
            if resp.body:
                result.update(ResetOffsetBody.from_json(resp.body).offsetTable)
        return result

    async def _reset_offset_offline(self, addr: str, broker_name: str, group: str, topic: str, timestamp: int,
                                    force: bool) -> dict[MessageQueue, int]:
        resp = await self._call(addr, RequestCode.GET_CONSUME_STATS,
                                GetConsumeStatsRequestHeader(consumerGroup=group, topic=topic))
        stats = ConsumeStats.from_json(resp.body).offsetTable
        out = {}
        for mq, ow in stats.items():
            if mq.topic != topic:
                continue
            target = (await self.api.get_max_offset(addr, mq) if timestamp == -1
                      else await self.api.search_offset(addr, mq, timestamp))
            new = target if (force or target < ow.consumerOffset) else ow.consumerOffset
            await self.api.update_consumer_offset(addr, group, mq, new)
            out[mq] = new
        return out


    # -- consume queues, correction offsets, half messages, producers (admin extras) ----------------------------

    async def query_consume_queue(self, addr: str, topic: str, queue_id: int, index: int, count: int = 10,
                                  consumer_group: str | None = None) -> QueryConsumeQueueResponseBody:
        """QUERY_CONSUME_QUEUE (mqadmin queryCq): ``count`` units of one queue from unit ``index``.

        An index outside the queue is answered SUCCESS without a body; that raises MQBrokerError
        carrying the broker's remark (the Java tool fails on it too)."""
        h = QueryConsumeQueueRequestHeader(topic=topic, queueId=queue_id, index=index, count=count,
                                           consumerGroup=consumer_group)
        resp = await self._call(addr, RequestCode.QUERY_CONSUME_QUEUE, h)
        if not resp.body:
            raise MQBrokerError(resp.code, resp.remark or "no consume queue data", addr)
        return QueryConsumeQueueResponseBody.from_json(resp.body)

    async def query_correction_offset(self, addr: str, topic: str, compare_group: str,
                                      filter_groups: list[str] | set[str] | None = None) -> dict[int, int]:
        """QUERY_CORRECTION_OFFSET: queueId -> smallest committed offset of the other groups
        (Long.MAX_VALUE where ``compare_group`` is already behind it)."""
        h = QueryCorrectionOffsetHeader(compareGroup=compare_group, topic=topic,
                                        filterGroups=",".join(filter_groups) if filter_groups is not None else None)
        resp = await self._call(addr, RequestCode.QUERY_CORRECTION_OFFSET, h)
        return QueryCorrectionOffsetBody.from_json(resp.body).correctionOffsets if resp.body else {}

    async def resume_check_half_message(self, offset_msg_id: str) -> bool:
        """RESUME_CHECK_HALF_MESSAGE at the broker that stored the half message (or its discarded copy);
        True when the broker put it back into the half queue (Java's DefaultMQAdminExt answer)."""
        msg = await self.view_message(offset_msg_id)
        host, port = msg.store_host
        addr = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        resp = await self.api.invoke(addr, request(RequestCode.RESUME_CHECK_HALF_MESSAGE,
                                                   ResumeCheckHalfMessageRequestHeader(msgId=offset_msg_id)),
                                     self.timeout)
        return resp.code == ResponseCode.SUCCESS

    async def get_all_producer_info(self, addr: str) -> ProducerTableInfo:
        """GET_ALL_PRODUCER_INFO (mqadmin producer): producer group -> instances known to one broker."""
        resp = await self._call(addr, RequestCode.GET_ALL_PRODUCER_INFO, GetAllProducerInfoRequestHeader())
        return ProducerTableInfo.from_json(resp.body) if resp.body else ProducerTableInfo()

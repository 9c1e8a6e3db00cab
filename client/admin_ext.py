"""MQAdminExt: the admin RPCs beyond :class:`client.admin.MQAdmin` (Java DefaultMQAdminExt's remaining parts).

Batched reads (one GET_ALL_TOPIC_CONFIG / GET_ALL_SUBSCRIPTIONGROUP_CONFIG /
GET_BROKER_CONSUME_STATS per broker), NameServer config and KV, write-permission
switches, offset cloning and store maintenance. Every method is one request to one
server (or one per NameServer) and returns decoded data.
"""

from __future__ import annotations

from typing import Any

from client.admin import MQAdmin, parse_properties_text
from client.consume_lag import GroupLag, consume_lag, loads_mq_keyed
from client.exceptions import MQClientError
from client.mq_client_api import check, request
from remoting import RequestCode, ResponseCode, fastjson
from remoting.body.admin import ConsumerOffsetSerializeWrapper
from remoting.body.consumer import ConsumeStats, MessageQueue, OffsetWrapper
from remoting.body.kv import KVTable
from remoting.body.subscription_group import SubscriptionGroupConfig, SubscriptionGroupWrapper
from remoting.body.topic_config import TopicConfig, TopicConfigSerializeWrapper
from remoting.header.broker import CloneGroupOffsetRequestHeader, ViewBrokerStatsDataRequestHeader
from remoting.header.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    DeleteKVConfigRequestHeader,
    GetKVListByNamespaceRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)

__all__ = ["MQAdminExt"]

class MQAdminExt(MQAdmin):
    """MQAdmin plus the batched reads and the rarer admin calls."""

    # -- batched reads (one RPC per broker) ----------------------------------------------------------

    async def all_topic_config(self, addr: str) -> dict[str, TopicConfig]:
        resp = await self._call(addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        return TopicConfigSerializeWrapper.from_json(resp.body).topicConfigTable if resp.body else {}

    async def all_topic_config_raw(self, addr: str) -> dict[str, dict[str, Any]]:
        """GET_ALL_TOPIC_CONFIG as the wire's objects (a list page of thousands of topics skips building
        TopicConfig objects: ~40 us each)."""
        resp = await self._call(addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        table = (fastjson.loads(resp.body) or {}).get("topicConfigTable") if resp.body else None
        return table if isinstance(table, dict) else {}

    async def all_subscription_group(self, addr: str) -> dict[str, SubscriptionGroupConfig]:
        resp = await self._call(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        return SubscriptionGroupWrapper.from_json(resp.body).subscriptionGroupTable if resp.body else {}

    async def all_subscription_group_raw(self, addr: str) -> dict[str, dict[str, Any]]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG as the wire's objects (a list page of hundreds of groups skips
        building SubscriptionGroupConfig objects)."""
        resp = await self._call(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        table = (fastjson.loads(resp.body) or {}).get("subscriptionGroupTable") if resp.body else None
        return table if isinstance(table, dict) else {}

    async def broker_consume_stats(self, addr: str, is_order: bool = False) -> dict[str, list[ConsumeStats]]:
        """GET_BROKER_CONSUME_STATS: group -> its ConsumeStats (one per topic) on one broker."""
        resp = await self._call(addr, RequestCode.GET_BROKER_CONSUME_STATS,
                                {"isOrder": str(is_order).lower(), "timeoutMillis": str(int(self.timeout * 1000))})
        if not resp.body:
            return {}
        fast = loads_mq_keyed(resp.body)
        if fast is None:
            obj = fastjson.loads(resp.body)
            return {str(group): [ConsumeStats.from_obj(s) for s in stats or []]
                    for entry in obj.get("consumeStatsList") or [] for group, stats in entry.items()}
        out: dict[str, list[ConsumeStats]] = {}
        for entry in fast.get("consumeStatsList") or []:
            for group, stats in entry.items():
                lst = out[group] = []
                for st in stats or []:
                    cs = ConsumeStats(consumeTps=float(st.get("consumeTps") or 0.0))
                    for key, w in (st.get("offsetTable") or {}).items():
                        broker, qid, topic = key.rsplit("\t", 2)
                        cs.offsetTable[MessageQueue(topic, broker, int(qid))] = OffsetWrapper(
                            int(w.get("brokerOffset", 0)), int(w.get("consumerOffset", 0)),
                            int(w.get("lastTimestamp", 0)))
                    lst.append(cs)
        return out

    async def broker_consume_stats_body(self, addr: str) -> bytes:
        """GET_BROKER_CONSUME_STATS as the wire's bytes, for :func:`client.consume_lag.consume_lag`."""
        resp = await self._call(addr, RequestCode.GET_BROKER_CONSUME_STATS,
                                {"isOrder": "false", "timeoutMillis": str(int(self.timeout * 1000))})
        return bytes(resp.body or b"")

    async def broker_consume_lag(self, addr: str) -> dict[str, GroupLag]:
        """GET_BROKER_CONSUME_STATS summed per group (what a group list shows): no MessageQueue or
        OffsetWrapper object per queue."""
        body = await self.broker_consume_stats_body(addr)
        return consume_lag(body) if body else {}

    async def all_consumer_offset(self, addr: str) -> dict[str, dict[int, int]]:
        resp = await self._call(addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        return ConsumerOffsetSerializeWrapper.from_json(resp.body).offsetTable if resp.body else {}

    async def view_broker_stats(self, addr: str, name: str, key: str) -> dict[str, Any]:
        """VIEW_BROKER_STATS_DATA: {"statsMinute":{sum,tps,avgpt},"statsHour":...,"statsDay":...}."""
        resp = await self._call(addr, RequestCode.VIEW_BROKER_STATS_DATA,
                                ViewBrokerStatsDataRequestHeader(statsName=name, statsKey=key))
        return fastjson.loads(resp.body) if resp.body else {}

    # -- NameServer config, KV and write permission -----------------------------------------------------

    def _namesrvs(self, addrs: list[str] | None) -> list[str]:
        targets = addrs or self.api.namesrv_addrs
        if not targets:
            raise MQClientError("no NameServer address")
        return targets

    async def get_namesrv_config(self, addrs: list[str] | None = None) -> dict[str, dict[str, str]]:
        out = {}
        for addr in self._namesrvs(addrs):
            resp = await self._call(addr, RequestCode.GET_NAMESRV_CONFIG)
            out[addr] = parse_properties_text((resp.body or b"").decode("utf-8"))
        return out

    async def update_namesrv_config(self, props: dict[str, str], addrs: list[str] | None = None) -> None:
        for k, v in props.items():
            if "\n" in k or "\r" in k or "\n" in v or "\r" in v or "=" in k:
                raise MQClientError(f"bad config key or value: {k!r}")
        body = "".join(f"{k}={v}\n" for k, v in props.items()).encode("utf-8")
        for addr in self._namesrvs(addrs):
            await self._call(addr, RequestCode.UPDATE_NAMESRV_CONFIG, None, body)

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        for addr in self._namesrvs(None):
            await self._call(addr, RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader(namespace=namespace,
                                                                                              key=key))

    async def kv_list(self, namespace: str) -> dict[str, str]:
        resp = await self.api.invoke_namesrv(
            lambda: request(RequestCode.GET_KVLIST_BY_NAMESPACE, GetKVListByNamespaceRequestHeader(namespace=namespace)))
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return {}
        return dict(KVTable.from_json(check(resp).body).table) if resp.body else {}

    async def wipe_write_perm(self, broker_name: str, addrs: list[str] | None = None) -> dict[str, int]:
        return await self._write_perm(RequestCode.WIPE_WRITE_PERM_OF_BROKER,
                                      WipeWritePermOfBrokerRequestHeader(brokerName=broker_name), "wipeTopicCount", addrs)

    async def add_write_perm(self, broker_name: str, addrs: list[str] | None = None) -> dict[str, int]:
        return await self._write_perm(RequestCode.ADD_WRITE_PERM_OF_BROKER,
                                      AddWritePermOfBrokerRequestHeader(brokerName=broker_name), "addTopicCount", addrs)

    async def _write_perm(self, code: int, header: Any, count_key: str, addrs: list[str] | None) -> dict[str, int]:
        """Ask each NameServer to change a broker's write permission: {namesrv: topics changed}."""
        out = {}
        for addr in self._namesrvs(addrs):
            resp = await self._call(addr, code, header)
            out[addr] = int((resp.ext_fields or {}).get(count_key, 0) or 0)
        return out

    # -- offsets and store maintenance ----------------------------------------------------------------

    async def clone_group_offset(self, addr: str, src: str, dest: str, topic: str | None, offline: bool) -> None:
        await self._call(addr, RequestCode.CLONE_GROUP_OFFSET,
                         CloneGroupOffsetRequestHeader(srcGroup=src, destGroup=dest, topic=topic, offline=offline))

    async def clean_expired_cq(self, addr: str) -> bool:
        resp = await self._call(addr, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
        return resp.code == ResponseCode.SUCCESS

    async def delete_expired_commitlog(self, addr: str) -> bool:
        resp = await self._call(addr, RequestCode.DELETE_EXPIRED_COMMITLOG)
        return resp.code == ResponseCode.SUCCESS

    async def consumer_status(self, group: str, topic: str, client_addr: str | None = None) -> dict[str, Any]:
        """INVOKE_BROKER_TO_GET_CONSUMER_STATUS: clientId -> {MessageQueue key: offset}."""
        h = {"topic": topic, "group": group}
        if client_addr:
            h["clientAddr"] = client_addr
        resp = await self._relay(group, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, h, None)
        return (fastjson.loads(resp.body) or {}).get("consumerTable") or {} if resp.body else {}


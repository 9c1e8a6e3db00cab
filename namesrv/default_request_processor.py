"""DefaultRequestProcessor: one handler per NameServer request code (remoting-protocol.md §12).

Handlers take ``(request, connection)`` and return the response. Most are
synchronous (the server's fast path); the ones that write files (KV config,
UPDATE_NAMESRV_CONFIG) are coroutines that hand the blocking write to
``run_io`` so the event loop never waits on fsync, and answer only after the
write is done.
"""

from __future__ import annotations

import dataclasses
import logging
import zlib
from collections.abc import Awaitable, Callable
from typing import Any

from common.config import (
    ConfigError,
    format_properties,
    has_line_break,
    parse_properties,
    to_properties,
    update_from_wire,
)
from namesrv.config import NamesrvConfig
from namesrv.kv_config_manager import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from namesrv.route_info_manager import RouteInfoManager
from remoting.body import BodyError
from remoting.body.register_broker import RegisterBrokerBody
from remoting.body.route import TopicRouteData
from remoting.body.topic_config import DataVersion, TopicConfigSerializeWrapper
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.header.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    RegisterTopicRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)

__all__ = ["DefaultRequestProcessor", "TOPIC_NOT_EXIST_FAQ", "V3_0_11", "V4_9_4", "REGISTER_TOPIC_IN_NAMESRV"]

log = logging.getLogger("namesrv.processor")

#: MQVersion ordinals that change the NameServer's behaviour.
V3_0_11 = 37  # from here REGISTER_BROKER carries a RegisterBrokerBody (with filter servers)
V4_9_4 = 401  # from here routes are written in standard JSON

#: 5.x code, not in 4.9.7's RequestCode; served because it is cheap.
REGISTER_TOPIC_IN_NAMESRV = int(getattr(RequestCode, "REGISTER_TOPIC_IN_NAMESRV", 217))

TOPIC_NOT_EXIST_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."

#: Keys 4.9.7 refuses by name (CVE-2023-37582); other wire=False keys are refused too.
_PATH_KEYS = ("kvConfigPath", "configStorePath")

RunIo = Callable[..., Awaitable[Any]]


def _crc32(data: bytes | None) -> int:
    """RocketMQ's UtilAll.crc32: CRC32 masked to a non-negative int."""
    return zlib.crc32(data or b"") & 0x7FFFFFFF


class DefaultRequestProcessor:
    """Serves every NameServer request; collaborators are passed in explicitly."""

    def __init__(
        self,
        route_info_manager: RouteInfoManager,
        kv_config_manager: KVConfigManager,
        config: NamesrvConfig,
        run_io: RunIo,
        persist_config: Callable[[bytes], None] | None = None,
    ):
        self.routes = route_info_manager
        self.kv = kv_config_manager
        self.config = config
        self.run_io = run_io
        self.persist_config = persist_config

    def handlers(self) -> dict[int, Callable[[RemotingCommand, Any], Any]]:
        """Request code -> handler, for ``RemotingServer.register_processor``."""
        return {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.QUERY_DATA_VERSION: self.query_broker_topic_config,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            REGISTER_TOPIC_IN_NAMESRV: self.register_topic_in_namesrv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self.get_unit_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self.get_has_unit_sub_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.get_has_unit_sub_ununit_topic_list,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_config,
            RequestCode.GET_NAMESRV_CONFIG: self.get_config,
        }

    def register(self, server: Any) -> None:
        """Register every handler on a ``RemotingServer``."""
        for code, handler in self.handlers().items():
            server.register_processor(int(code), handler)

    # ------------------------------------------------------------------ KV config

    async def put_kv_config(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(PutKVConfigRequestHeader)
        snapshot = self.kv.put(h.namespace, h.key, h.value)
        return await self._persist_kv(req, snapshot)

    async def delete_kv_config(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(DeleteKVConfigRequestHeader)
        snapshot = self.kv.delete(h.namespace, h.key)
        if snapshot is None:
            return req.response_to(ResponseCode.SUCCESS)
        return await self._persist_kv(req, snapshot)

    async def _persist_kv(self, req: RemotingCommand, snapshot: bytes) -> RemotingCommand:
        try:
            await self.run_io(self.kv.persist, snapshot)
        except OSError as e:
            log.error("persist KV config to %s failed: %s", self.kv.path, e)
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"persist KV config failed: {e}")
        return req.response_to(ResponseCode.SUCCESS)

    def get_kv_config(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(GetKVConfigRequestHeader)
        value = self.kv.get(h.namespace, h.key)
        if value is None:
            return req.response_to(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace} Key: {h.key}"
            )
        return req.response_to(ResponseCode.SUCCESS, header=GetKVConfigResponseHeader(value))

    def get_kv_list_by_namespace(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(GetKVListByNamespaceRequestHeader)
        body = self.kv.get_kv_list_by_namespace(h.namespace)
        if body is None:
            return req.response_to(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace}")
        return req.response_to(ResponseCode.SUCCESS, body=body)

    # ------------------------------------------------------------- broker registry

    def register_broker(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(RegisterBrokerRequestHeader)
        if h.bodyCrc32 != 0 and _crc32(req.body) != h.bodyCrc32:
            log.warning("receive registerBroker request, crc32 not match, from %s", _addr(conn))
            return req.response_to(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        filter_servers: list[str] | None
        try:
            if req.version >= V3_0_11:
                if req.body:
                    body = RegisterBrokerBody.decode(req.body, h.compressed, lazy=True)
                else:
                    body = RegisterBrokerBody(TopicConfigSerializeWrapper(dataVersion=DataVersion(0, 0)))
                wrapper, filter_servers = body.topicConfigSerializeWrapper, body.filterServerList
            else:
                wrapper = (
                    TopicConfigSerializeWrapper.from_json(req.body)
                    if req.body
                    else TopicConfigSerializeWrapper(dataVersion=DataVersion(0, 0))
                )
                filter_servers = None
        except BodyError as e:
            log.warning("bad REGISTER_BROKER body from %s: %s", _addr(conn), e)
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"bad register broker body: {e}")
        try:
            # The topic table is decoded here, only if the DataVersion changed; nothing changes on error.
            result = self.routes.register_broker(
                h.clusterName,
                h.brokerAddr,
                h.brokerName,
                h.brokerId,
                h.haServerAddr,
                wrapper,
                filter_servers,
                conn,
            )
        except BodyError as e:
            log.warning("bad REGISTER_BROKER topic table from %s: %s", _addr(conn), e)
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"bad register broker body: {e}")
        return req.response_to(
            ResponseCode.SUCCESS,
            header=RegisterBrokerResponseHeader(result.ha_server_addr, result.master_addr),
            body=self.kv.get_kv_list_by_namespace(NAMESPACE_ORDER_TOPIC_CONFIG),
        )

    def unregister_broker(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(UnRegisterBrokerRequestHeader)
        self.routes.unregister_broker(h.clusterName, h.brokerAddr, h.brokerName, h.brokerId)
        return req.response_to(ResponseCode.SUCCESS)

    def query_broker_topic_config(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(QueryDataVersionRequestHeader)
        try:
            dv = DataVersion.from_json(req.body)
        except BodyError as e:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"bad QUERY_DATA_VERSION body: {e}")
        changed = self.routes.is_broker_topic_config_changed(h.brokerAddr, dv)
        if not changed:
            self.routes.update_broker_info_update_timestamp(h.brokerAddr)
        ns_dv = self.routes.query_broker_topic_config(h.brokerAddr)
        return req.response_to(
            ResponseCode.SUCCESS,
            header=QueryDataVersionResponseHeader(changed),
            body=None if ns_dv is None else ns_dv.to_json(),
        )

    def wipe_write_perm_of_broker(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(WipeWritePermOfBrokerRequestHeader)
        count = self.routes.wipe_write_perm_of_broker(h.brokerName)
        log.info("wipe write perm of broker[%s], client: %s, %d", h.brokerName, _addr(conn), count)
        return req.response_to(ResponseCode.SUCCESS, header=WipeWritePermOfBrokerResponseHeader(count))

    def add_write_perm_of_broker(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(AddWritePermOfBrokerRequestHeader)
        count = self.routes.add_write_perm_of_broker(h.brokerName)
        log.info("add write perm of broker[%s], client: %s, %d", h.brokerName, _addr(conn), count)
        return req.response_to(ResponseCode.SUCCESS, header=AddWritePermOfBrokerResponseHeader(count))

    # --------------------------------------------------------------------- routes

    def get_route_info_by_topic(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(GetRouteInfoRequestHeader)
        route = self.routes.pickup_topic_route_data(h.topic)
        if route is None:
            return req.response_to(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {h.topic}{TOPIC_NOT_EXIST_FAQ}",
            )
        if self.config.orderMessageEnable:
            route.orderTopicConf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, h.topic)
        standard = req.version >= V4_9_4 or bool(h.acceptStandardJsonOnly)
        return req.response_to(ResponseCode.SUCCESS, body=route.to_json(standard=standard))

    def get_broker_cluster_info(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        return req.response_to(ResponseCode.SUCCESS, body=self.routes.get_all_cluster_info().to_json())

    def get_all_topic_list(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        return req.response_to(ResponseCode.SUCCESS, body=self.routes.get_all_topic_list().to_json())

    def delete_topic_in_namesrv(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(DeleteTopicFromNamesrvRequestHeader)
        self.routes.delete_topic(h.topic, h.clusterName or None)
        return req.response_to(ResponseCode.SUCCESS)

    def register_topic_in_namesrv(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(RegisterTopicRequestHeader)
        if req.body:
            try:
                route = TopicRouteData.from_json(req.body)
            except BodyError as e:
                return req.response_to(ResponseCode.SYSTEM_ERROR, f"bad REGISTER_TOPIC_IN_NAMESRV body: {e}")
            if route.queueDatas:
                self.routes.register_topic(h.topic, route.queueDatas)
        return req.response_to(ResponseCode.SUCCESS)

    def get_topics_by_cluster(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        h = req.decode_header(GetTopicsByClusterRequestHeader)
        return req.response_to(
            ResponseCode.SUCCESS, body=self.routes.get_topics_by_cluster(h.cluster).to_json()
        )

    def get_system_topic_list(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        return req.response_to(ResponseCode.SUCCESS, body=self.routes.get_system_topic_list().to_json())

    def get_unit_topic_list(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        return req.response_to(ResponseCode.SUCCESS, body=self.routes.get_unit_topics().to_json())

    def get_has_unit_sub_topic_list(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        return req.response_to(ResponseCode.SUCCESS, body=self.routes.get_has_unit_sub_topic_list().to_json())

    def get_has_unit_sub_ununit_topic_list(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        return req.response_to(
            ResponseCode.SUCCESS, body=self.routes.get_has_unit_sub_ununit_topic_list().to_json()
        )

    # --------------------------------------------------------------------- config

    async def update_config(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        if not req.body:
            return req.response_to(ResponseCode.SUCCESS)
        try:
            props = parse_properties(bytes(req.body).decode("utf-8"))
        except UnicodeDecodeError:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "string2Properties error")
        log.info("updateConfig called by %s: %s", _addr(conn), props)
        broken = sorted(k for k, v in props.items() if has_line_break(k) or has_line_break(v))
        if broken:
            # An escaped line break would add a key (configStorePath...) to the persisted file, which
            # a restart would then obey (CVE-2023-37582's class; 4.9.7 accepts it).
            return req.response_to(
                ResponseCode.SYSTEM_ERROR, f"the value of config key {broken[0]} contains a line break"
            )
        if any(k in props for k in _PATH_KEYS):
            return req.response_to(ResponseCode.NO_PERMISSION, "Can not update config path")
        fields = {f.name: f for f in dataclasses.fields(self.config)}
        forbidden = sorted(k for k in props if k in fields and not fields[k].metadata.get("wire", True))
        if forbidden:
            return req.response_to(
                ResponseCode.NO_PERMISSION,
                f"Can not update config over the wire: {', '.join(forbidden)} (paths, ports and start-up "
                "settings are read-only at runtime)",
            )
        unknown = sorted(k for k in props if k not in fields)
        if unknown:
            # As RocketMQ's Configuration.update: keys no config object has are ignored.
            log.warning("updateConfig ignores unknown keys: %s", ", ".join(unknown))
        try:
            update_from_wire(self.config, {k: v for k, v in props.items() if k in fields})
        except ConfigError as e:
            return req.response_to(ResponseCode.SYSTEM_ERROR, str(e))
        if self.persist_config is not None:
            data = format_properties(to_properties(self.config)).encode("utf-8")
            try:
                await self.run_io(self.persist_config, data)
            except OSError as e:
                log.error("persist namesrv config failed: %s", e)
                return req.response_to(ResponseCode.SYSTEM_ERROR, f"config updated but not persisted: {e}")
        return req.response_to(ResponseCode.SUCCESS)

    def get_config(self, req: RemotingCommand, conn: Any) -> RemotingCommand:
        body = format_properties(to_properties(self.config)).encode("utf-8")
        return req.response_to(ResponseCode.SUCCESS, body=body)


def _addr(conn: Any) -> str:
    return getattr(conn, "remote_addr", None) or "?"

"""RouteInfoManager: the NameServer's in-memory route model (broker-behaviour.md §14).

Tables (RocketMQ's names):

* ``topic_queue_table``   topic -> {brokerName -> QueueData}
* ``broker_addr_table``   brokerName -> BrokerData (cluster, name, {brokerId -> addr})
* ``cluster_addr_table``  cluster -> {brokerName}
* ``broker_live_table``   brokerAddr -> BrokerLiveInfo (last update, DataVersion, channel, HA addr)
* ``filter_server_table`` brokerAddr -> [filter server addr]

Pure logic: no sockets, no event loop. A "channel" is whatever object the
caller uses for a broker's connection; it is only compared by identity and
handed back to the caller for closing. Time comes from an injectable clock in
milliseconds. The NameServer runs on one event loop, so no locks are needed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from common.perm import PERM_READ, PERM_WRITE
from common.util import now_ms
from remoting.body.cluster import ClusterInfo, TopicList
from remoting.body.route import MASTER_ID, BrokerData, QueueData, TopicRouteData
from remoting.body.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper

__all__ = ["BrokerLiveInfo", "RegisterBrokerResult", "RouteInfoManager", "TopicSysFlag"]

log = logging.getLogger("namesrv.route")


class TopicSysFlag:
    """Topic system flag bits (unit / unit-sub topics)."""

    FLAG_UNIT = 0x1 << 0
    FLAG_UNIT_SUB = 0x1 << 1

    @staticmethod
    def has_unit_flag(flag: int) -> bool:
        return (flag & TopicSysFlag.FLAG_UNIT) == TopicSysFlag.FLAG_UNIT

    @staticmethod
    def has_unit_sub_flag(flag: int) -> bool:
        return (flag & TopicSysFlag.FLAG_UNIT_SUB) == TopicSysFlag.FLAG_UNIT_SUB


@dataclass(slots=True)
class BrokerLiveInfo:
    """What the NameServer knows about a registered broker address."""

    last_update_timestamp: int
    data_version: DataVersion
    channel: Any
    ha_server_addr: str | None


@dataclass(slots=True)
class RegisterBrokerResult:
    """REGISTER_BROKER outcome for a slave: its master's HA address and address (else None)."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


class RouteInfoManager:
    """Route tables with RocketMQ 4.9.7's register/unregister/expiry semantics."""

    def __init__(self, broker_channel_expired_time: int = 120_000, clock: Callable[[], int] = now_ms):
        self.broker_channel_expired_time = broker_channel_expired_time
        self.clock = clock
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, dict[str, None]] = {}  # ordered set of broker names
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.filter_server_table: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ register

    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str | None,
        topic_config_wrapper: TopicConfigSerializeWrapper | None,
        filter_server_list: list[str] | None,
        channel: Any,
    ) -> RegisterBrokerResult:
        """Record a broker's (re-)registration; see broker-behaviour.md §14."""
        result = RegisterBrokerResult()
        broker_data = self.broker_addr_table.get(broker_name)
        register_first = broker_data is None or broker_data.brokerAddrs.get(broker_id) is None
        data_version = (
            topic_config_wrapper.dataVersion if topic_config_wrapper is not None else DataVersion(0, 0)
        )
        topic_configs: list[TopicConfig] = []
        if topic_config_wrapper is not None and broker_id == MASTER_ID:
            if register_first or self.is_broker_topic_config_changed(broker_addr, data_version):
                # Read (and so validate) the whole table before changing anything.
                topic_configs = list(topic_config_wrapper.topicConfigTable.values())

        self.cluster_addr_table.setdefault(cluster_name, {})[broker_name] = None
        if broker_data is None:
            broker_data = BrokerData(cluster_name, broker_name, {})
            self.broker_addr_table[broker_name] = broker_data
        addrs = broker_data.brokerAddrs
        # One address has one id: a slave switched to master (or back) drops its old entry.
        for bid in [bid for bid, addr in addrs.items() if addr == broker_addr and bid != broker_id]:
            del addrs[bid]
        addrs[broker_id] = broker_addr
        for tc in topic_configs:
            self._create_and_update_queue_data(broker_name, tc)

        prev = self.broker_live_table.get(broker_addr)
        self.broker_live_table[broker_addr] = BrokerLiveInfo(
            self.clock(), data_version.copy(), channel, ha_server_addr
        )
        if prev is None:
            log.info("new broker registered, %s HAServer: %s", broker_addr, ha_server_addr)

        if filter_server_list is not None:
            if filter_server_list:
                self.filter_server_table[broker_addr] = list(filter_server_list)
            else:
                self.filter_server_table.pop(broker_addr, None)

        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            if master_addr is not None:
                master_live = self.broker_live_table.get(master_addr)
                if master_live is not None:
                    result.ha_server_addr = master_live.ha_server_addr
                    result.master_addr = master_addr
        return result

    def _create_and_update_queue_data(self, broker_name: str, tc: TopicConfig) -> None:
        qd = QueueData(broker_name, tc.readQueueNums, tc.writeQueueNums, tc.perm, tc.topicSysFlag)
        table = self.topic_queue_table.get(tc.topicName)
        if table is None:
            self.topic_queue_table[tc.topicName] = {broker_name: qd}
            log.info("new topic registered, %s %s", tc.topicName, qd)
            return
        old = table.get(broker_name)
        if old != qd:
            if old is not None:
                log.info("topic changed, %s OLD: %s NEW: %s", tc.topicName, old, qd)
            table[broker_name] = qd

    def is_broker_topic_config_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        prev = self.query_broker_topic_config(broker_addr)
        return prev is None or prev != data_version

    def query_broker_topic_config(self, broker_addr: str) -> DataVersion | None:
        live = self.broker_live_table.get(broker_addr)
        return None if live is None else live.data_version

    def update_broker_info_update_timestamp(self, broker_addr: str, ts: int | None = None) -> None:
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update_timestamp = self.clock() if ts is None else ts

    def register_topic(self, topic: str, queue_datas: Iterable[QueueData]) -> None:
        """5.x REGISTER_TOPIC_IN_NAMESRV: add queue data for brokers that are registered."""
        for qd in queue_datas:
            if qd.brokerName not in self.broker_addr_table:
                log.warning("registerTopic %s: broker %s is not registered, skipped", topic, qd.brokerName)
                continue
            self.topic_queue_table.setdefault(topic, {})[qd.brokerName] = qd.copy()

    # ---------------------------------------------------------------- unregister

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        """UNREGISTER_BROKER: forget one address; the last one takes the broker name with it."""
        live = self.broker_live_table.pop(broker_addr, None)
        log.info(
            "unregisterBroker, remove from brokerLiveTable %s, %s", "OK" if live else "Failed", broker_addr
        )
        self.filter_server_table.pop(broker_addr, None)
        remove_broker_name = False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is not None:
            broker_data.brokerAddrs.pop(broker_id, None)
            if not broker_data.brokerAddrs:
                del self.broker_addr_table[broker_name]
                remove_broker_name = True
        if remove_broker_name:
            names = self.cluster_addr_table.get(cluster_name)
            if names is not None:
                names.pop(broker_name, None)
                if not names:
                    del self.cluster_addr_table[cluster_name]
            self._remove_topic_by_broker_name(broker_name)

    def _remove_topic_by_broker_name(self, broker_name: str) -> None:
        for topic in list(self.topic_queue_table):
            table = self.topic_queue_table[topic]
            if table.pop(broker_name, None) is not None:
                log.info("removeTopicByBrokerName, remove one broker's topic %s %s", topic, broker_name)
            if not table:
                log.info("removeTopicByBrokerName, remove the topic all queue %s", topic)
                del self.topic_queue_table[topic]

    # ------------------------------------------------------------------ liveness

    def scan_not_active_broker(self, now: int | None = None) -> list[tuple[str, Any]]:
        """Remove brokers silent for longer than the expiry; returns ``[(addr, channel)]`` to close."""
        now = self.clock() if now is None else now
        expired = [
            (addr, live.channel)
            for addr, live in self.broker_live_table.items()
            if live.last_update_timestamp + self.broker_channel_expired_time < now
        ]
        for addr, _channel in expired:
            log.warning("The broker channel expired, %s %dms", addr, self.broker_channel_expired_time)
            del self.broker_live_table[addr]
            self._remove_broker_addr(addr)
        return expired

    def on_channel_destroy(self, remote_addr: str | None, channel: Any) -> list[str]:
        """A connection closed: remove every broker address registered over it at once.

        As RocketMQ, when no registration used this channel the remote address
        itself is tried as a broker address. Returns the addresses removed.
        """
        found = []
        if channel is not None:
            found = [addr for addr, live in self.broker_live_table.items() if live.channel is channel]
        if not found:
            if not remote_addr:
                return []
            found = [remote_addr]
        removed = []
        for addr in found:
            live = self.broker_live_table.pop(addr, None)
            if live is not None:
                log.info("the broker's channel destroyed, %s, clean it's data structure at once", addr)
            if self._remove_broker_addr(addr) or live is not None:
                removed.append(addr)
        return removed

    def _remove_broker_addr(self, broker_addr: str) -> bool:
        """Drop an address from every table; returns whether it was known."""
        self.filter_server_table.pop(broker_addr, None)
        broker_name_found = None
        remove_broker_name = False
        for name, bd in list(self.broker_addr_table.items()):
            ids = [bid for bid, addr in bd.brokerAddrs.items() if addr == broker_addr]
            if not ids:
                continue
            for bid in ids:
                del bd.brokerAddrs[bid]
                log.info(
                    "remove brokerAddr[%s, %s] from brokerAddrTable, because channel destroyed",
                    bid,
                    broker_addr,
                )
            broker_name_found = name
            if not bd.brokerAddrs:
                remove_broker_name = True
                del self.broker_addr_table[name]
                log.info("remove brokerName[%s] from brokerAddrTable, because channel destroyed", name)
            break
        if broker_name_found is not None and remove_broker_name:
            for cluster, names in list(self.cluster_addr_table.items()):
                if broker_name_found in names:
                    del names[broker_name_found]
                    log.info(
                        "remove brokerName[%s], clusterName[%s] from clusterAddrTable",
                        broker_name_found,
                        cluster,
                    )
                    if not names:
                        del self.cluster_addr_table[cluster]
                    break
            self._remove_topic_by_broker_name(broker_name_found)
        return broker_name_found is not None

    # -------------------------------------------------------------------- queries

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """The route of ``topic``, or None when it has no queue data or none of its brokers is known."""
        table = self.topic_queue_table.get(topic)
        if not table:
            return None
        route = TopicRouteData(queueDatas=[qd.copy() for qd in table.values()])
        for broker_name in table:
            bd = self.broker_addr_table.get(broker_name)
            if bd is None:
                continue
            copy = bd.copy()
            route.brokerDatas.append(copy)
            if self.filter_server_table:
                for addr in copy.brokerAddrs.values():
                    fs = self.filter_server_table.get(addr)
                    if fs is not None:
                        route.filterServerTable[addr] = list(fs)
        if not route.brokerDatas:
            return None
        return route

    def get_all_cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            brokerAddrTable={k: v.copy() for k, v in self.broker_addr_table.items()},
            clusterAddrTable={k: list(v) for k, v in self.cluster_addr_table.items()},
        )

    def get_all_topic_list(self) -> TopicList:
        return TopicList(list(self.topic_queue_table))

    def get_topics_by_cluster(self, cluster: str) -> TopicList:
        names = self.cluster_addr_table.get(cluster, {})
        topics: dict[str, None] = {}
        for broker_name in names:
            for topic, table in self.topic_queue_table.items():
                if broker_name in table:
                    topics[topic] = None
        return TopicList(list(topics))

    def get_system_topic_list(self) -> TopicList:
        """Cluster names and broker names (they double as system topics) plus one broker address."""
        topics: dict[str, None] = {}
        for cluster, names in self.cluster_addr_table.items():
            topics[cluster] = None
            for n in names:
                topics[n] = None
        result = TopicList(list(topics))
        for bd in self.broker_addr_table.values():
            for addr in bd.brokerAddrs.values():
                result.brokerAddr = addr
                break
            break
        return result

    def _topics_where(self, pred: Callable[[int], bool]) -> TopicList:
        out = []
        for topic, table in self.topic_queue_table.items():
            if table:
                first = next(iter(table.values()))
                if pred(first.topicSysFlag):
                    out.append(topic)
        return TopicList(out)

    def get_unit_topics(self) -> TopicList:
        return self._topics_where(TopicSysFlag.has_unit_flag)

    def get_has_unit_sub_topic_list(self) -> TopicList:
        return self._topics_where(TopicSysFlag.has_unit_sub_flag)

    def get_has_unit_sub_ununit_topic_list(self) -> TopicList:
        return self._topics_where(
            lambda f: not TopicSysFlag.has_unit_flag(f) and TopicSysFlag.has_unit_sub_flag(f)
        )

    # ------------------------------------------------------------------- admin

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """Forget a topic; with ``cluster_name`` only for that cluster's brokers."""
        if not cluster_name:
            self.topic_queue_table.pop(topic, None)
            return
        names = self.cluster_addr_table.get(cluster_name)
        table = self.topic_queue_table.get(topic)
        if not names or table is None:
            return
        for n in names:
            table.pop(n, None)
        if not table:
            del self.topic_queue_table[topic]

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        """Clear PERM_WRITE on every queue data of ``broker_name``; returns how many topics."""
        count = 0
        for table in self.topic_queue_table.values():
            qd = table.get(broker_name)
            if qd is not None:
                qd.perm &= ~PERM_WRITE
                count += 1
        return count

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        """Set read+write on every queue data of ``broker_name``; returns how many topics."""
        count = 0
        for table in self.topic_queue_table.values():
            qd = table.get(broker_name)
            if qd is not None:
                qd.perm = PERM_READ | PERM_WRITE
                count += 1
        return count

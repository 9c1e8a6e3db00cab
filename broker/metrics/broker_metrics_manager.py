"""BrokerMetricsManager: the broker's Prometheus endpoint (RocketMQ 5.x's PROM exporter).

Owns one CollectorRegistry (never prometheus-client's global one: two brokers in one
process keep their own series), the send-path counters (:class:`PutMetrics`), the RPC
latency hook, the timer-driven :class:`ConsumerLagCalculator` and the HTTP endpoint.
Every series carries ``cluster``, ``node_type="broker"``, ``node_id`` (the broker name, as
5.x) and the ``metricsLabel`` pairs. Names are the wire forms: 5.x's OpenTelemetry
exporter appends the unit to a few (``..._milliseconds``, ``rocketmq_storage_size_bytes``).
The rocketmq-exporter names (Grafana dashboard 10477) keep that project's own labels.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from broker.config import BrokerConfig
from broker.metrics.lag_calculator import ConsumerLagCalculator, LagSnapshot
from broker.metrics.request_path_metrics import RequestPathMetrics, broker_base_labels
from broker.metrics.snapshot_collector import SnapshotCollector, SnapshotExposition
from broker.role_state import RoleState
from common.metrics_exporter import PromHttpServer
from common.util import cancel_all
from store.config import MessageStoreConfig
from store.message_store import MessageStore

__all__ = ["BrokerMetricsManager", "MetricsSources", "StoreFigures"]

log = logging.getLogger("broker.metrics")


@dataclass(slots=True)
class StoreFigures:
    size_bytes: int = 0
    flush_behind: int = 0
    dispatch_behind: int = 0
    reserve_ms: int = 0
    disk_ratio: float = 0.0


@dataclass
class MetricsSources:
    """What the metrics read: the broker's parts, passed in by the composition root."""

    broker_config: BrokerConfig
    store_config: MessageStoreConfig
    #: the live role (health's role and brokerId, the info gauge's role label)
    role: RoleState
    store: MessageStore
    topics: Any
    groups: Any
    offsets: Any
    consumers: Any
    producers: Any
    stats: Any
    broker_ip: str
    #: processor name -> queued work (5.x's thread-pool queue sizes; here waiting puts, held pulls)
    watermarks: Callable[[], dict[str, int]]
    #: the DLedger server when the commit log is DLedger's, else None
    dledger: Callable[[], Any]
    version: str = "V4_9_7"


class BrokerMetricsManager:
    """Build with the sources; ``install`` the hooks, ``start``/``stop`` with the broker."""

    def __init__(self, src: MetricsSources, recorders: RequestPathMetrics):
        bc = src.broker_config
        self.src = src
        self.base_labels = broker_base_labels(bc)
        self._names = list(self.base_labels)
        self._base = list(self.base_labels.values())
        self.registry = CollectorRegistry(auto_describe=False)
        # written by the request path (passed to the processors when they were made); read here
        self.put_metrics = recorders.puts
        self.pull_offsets = recorders.pull_offsets
        self.rpc_hook = recorders.rpc_latency
        self.lag = ConsumerLagCalculator(src.store, src.topics, src.offsets, src.consumers, src.producers,
                                         src.stats, self.pull_offsets)
        self.store_figures = StoreFigures()
        self.watermarks: dict[str, int] = {}
        self.registry.register(self)
        self.snapshot_collector = SnapshotCollector(self.base_labels, bc, src.broker_ip,
                                                    also=(self.put_metrics.collect, self._collect_out))
        self.snapshot_exposition = SnapshotExposition(self.snapshot_collector)
        host = bc.metricsPromExporterHost or bc.broker_ip1()
        self.http = PromHttpServer(host, bc.metricsPromExporterPort, self.registry, self.health, name="broker-metrics",
                                   tail=self.snapshot_exposition.tail)
        self._task: asyncio.Task | None = None

    # -- life cycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Listen and start the refresh timer; OSError when the port cannot be had."""
        await self.refresh()
        await self.http.start()
        self._task = asyncio.get_running_loop().create_task(self._refresh_loop(), name="broker-metrics-refresh")

    async def stop(self) -> None:
        await cancel_all((self._task,))
        self._task = None
        await self.http.stop()

    async def _refresh_loop(self) -> None:
        period = max(self.src.broker_config.metricsRefreshIntervalMillis, 100) / 1000.0
        while True:
            await asyncio.sleep(period)
            try:
                await self.refresh()
            except Exception:  # noqa: BLE001 - the next round may succeed
                log.exception("metrics refresh failed")

    async def refresh(self) -> LagSnapshot:
        """Recompute the walked gauges (lag, connections, store figures) and publish them."""
        snap = await self.lag.refresh()
        self.put_metrics.forget(set(self.src.topics.table))
        self.watermarks = dict(self.src.watermarks())
        self.store_figures = self._store_figures()
        await self.http.run_render(self.snapshot_exposition.publish, snap)
        return snap

    def _store_figures(self) -> StoreFigures:
        store, sc = self.src.store, self.src.store_config
        f = StoreFigures()
        try:
            st = os.statvfs(sc.storePathRootDir)
            f.size_bytes = (st.f_blocks - st.f_bfree) * st.f_frsize
            path = sc.commit_log_dir if os.path.isdir(sc.commit_log_dir) else sc.storePathRootDir
            st = os.statvfs(path)
            f.disk_ratio = (st.f_blocks - st.f_bfree) / st.f_blocks if st.f_blocks else 0.0
        except OSError:
            pass
        cl = store.commit_log
        f.flush_behind = max(0, cl.get_max_offset() - cl.flushed_where)
        f.dispatch_behind = max(0, store.dispatch_behind_bytes())
        earliest = store.get_earliest_message_time_all()
        f.reserve_ms = max(0, int(time.time() * 1000) - earliest) if earliest > 0 else 0
        return f

    # -- health ---------------------------------------------------------------------------

    def health_info(self) -> tuple[bool, dict[str, Any]]:
        bc, store, live = self.src.broker_config, self.src.store, self.src.role
        ratio = self.store_figures.disk_ratio
        reasons = []
        role = live.broker_role.name
        if role == "SLAVE":
            reasons.append("slave: writes go to the master")
        if not store.writeable:  # the store's disk-full guard (clean service) refuses puts
            reasons.append(f"store not writeable: disk full (used ratio {ratio:.3f})")
        info: dict[str, Any] = {"role": role, "brokerId": live.broker_id, "brokerName": bc.brokerName,
                                "cluster": bc.brokerClusterName, "diskRatio": round(ratio, 4)}
        server = self.src.dledger()
        if server is not None:
            core = server.core
            if core is None:
                info["dledger"] = {"role": "STOPPED"}
                reasons.append("DLedger not running")
            else:
                ms = core.member_state
                info["dledger"] = {"role": core.role.name, "term": core.term, "leaderId": core.leader_id,
                                   "selfId": core.self_id, "committedIndex": core.committed_index,
                                   "commitLag": max(0, ms.ledger_end_index - core.committed_index)}
                if core.role.name != "LEADER":
                    reasons.append("no quorum leadership here: DLedger role " + core.role.name)
        info["writable"] = not reasons
        if reasons:
            info["reasons"] = reasons
        return not reasons, info

    def health(self) -> tuple[int, bytes]:
        ok, info = self.health_info()
        return (200 if ok else 503), json.dumps(info, sort_keys=True).encode() + b"\n"

    # -- collector (runs on the scrape thread: reads only published or atomic values) ------

    def _gauge(self, name: str, doc: str, extra: list[str] | None = None) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, doc, labels=[*self._names, *(extra or [])])

    def collect(self) -> Iterator[Metric]:
        """The live part: rpc latency and the small gauges (per-topic families: SnapshotCollector)."""
        yield from self.rpc_hook.collect()
        yield from self._collect_broker()
        yield from self._collect_store()
        yield from self._collect_dledger()

    def _collect_out(self) -> Iterator[Metric]:
        names, base = self._names, self._base
        sets = self.src.stats.sets
        out_n = CounterMetricFamily("rocketmq_messages_out", "Total number of outgoing messages",
                                    labels=[*names, "topic", "consumer_group"])
        out_b = CounterMetricFamily("rocketmq_throughput_out", "Total traffic of outgoing messages",
                                    labels=[*names, "topic", "consumer_group"])
        sizes = sets["GROUP_GET_SIZE"]
        for key, it in list(sets["GROUP_GET_NUMS"].items()):
            topic, _, group = key.rpartition("@")
            out_n.add_metric([*base, topic, group], it.value)
            s = sizes.get(key)
            out_b.add_metric([*base, topic, group], s.value if s is not None else 0)
        yield out_n
        yield out_b

    def _collect_broker(self) -> Iterator[Metric]:
        base = self._base
        bc = self.src.broker_config
        g = self._gauge("rocketmq_topic_number", "Active topic number")
        g.add_metric(base, len(self.src.topics.table))
        yield g
        g = self._gauge("rocketmq_consumer_group_number", "Active subscription group number")
        g.add_metric(base, len(self.src.groups.table))
        yield g
        g = self._gauge("rocketmq_processor_watermark", "Request processor watermark", ["processor"])
        for proc, n in self.watermarks.items():
            g.add_metric([*base, proc], n)
        yield g
        g = self._gauge("rocketmq_broker_permission", "Broker permission")
        g.add_metric(base, bc.brokerPermission)
        yield g
        g = self._gauge("rocketmq_broker_info", "Broker version and role", ["version", "role"])
        g.add_metric([*base, self.src.version, self.src.role.broker_role.name], 1)
        yield g

    def _collect_store(self) -> Iterator[Metric]:
        base, f = self._base, self.store_figures
        for name, doc, v in (
            ("rocketmq_storage_size_bytes", "Broker storage size", f.size_bytes),
            ("rocketmq_storage_flush_behind_bytes", "Broker flush behind bytes", f.flush_behind),
            ("rocketmq_storage_dispatch_behind_bytes", "Broker dispatch behind bytes", f.dispatch_behind),
            ("rocketmq_storage_message_reserve_time_milliseconds", "Broker message reserve time", f.reserve_ms),
            ("rocketmq_storage_disk_usage_ratio", "Used fraction of the commit log's partition", f.disk_ratio),
        ):
            g = self._gauge(name, doc, ["storage_type", "storage_medium"])
            g.add_metric([*base, "local", "disk"], v)
            yield g

    def _collect_dledger(self) -> Iterator[Metric]:
        server = self.src.dledger()
        if server is None or server.core is None:
            return
        core = server.core
        base = self._base
        role = {"FOLLOWER": 0, "CANDIDATE": 1, "LEADER": 2}.get(core.role.name, 0)
        for name, doc, v in (
            ("rocketmq_dledger_role", "DLedger role: 0 follower, 1 candidate, 2 leader", role),
            ("rocketmq_dledger_term", "DLedger current term", core.term),
            ("rocketmq_dledger_commit_lag_entries", "Entries written here but not yet committed",
             max(0, core.member_state.ledger_end_index - core.committed_index)),
        ):
            g = self._gauge(name, doc, ["group", "self_id"])
            g.add_metric([*base, core.member_state.group, core.self_id], v)
            yield g
        yield from server.timings.collect(self._names, base, core.member_state.group, core.self_id)



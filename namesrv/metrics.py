"""The NameServer's Prometheus endpoint: route table sizes, live brokers, request latency.

Same keys as the broker (metricsExporterType, metricsPromExporterHost/Port, metricsLabel);
series carry ``cluster`` (the NameServer serves many: empty), ``node_type="nameserver"``,
``node_id`` (host:port) and the metricsLabel pairs. The gauges are dict sizes, read at
scrape time (a ``len`` is atomic; nothing is walked).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from common.metrics_exporter import MetricsStartError, PromHttpServer, parse_metrics_label
from remoting.rpc_latency import RpcLatencyHook

__all__ = ["NamesrvMetrics"]


class NamesrvMetrics:
    """Registry, rpc hook and endpoint of one NameServer."""

    def __init__(self, config: Any, routes: Any, node_id: str):
        self.routes = routes  # RouteInfoManager
        labels = {"cluster": "", "node_type": "nameserver", "node_id": node_id,
                  **parse_metrics_label(config.metricsLabel)}
        self._names = list(labels)
        self._base = list(labels.values())
        self.registry = CollectorRegistry(auto_describe=False)
        self.rpc_hook = RpcLatencyHook(labels)
        self.registry.register(self)
        host = config.metricsPromExporterHost or "127.0.0.1"
        self.http = PromHttpServer(host, config.metricsPromExporterPort, self.registry, self.health,
                                   name="namesrv-metrics")

    async def start(self) -> None:
        try:
            await self.http.start()
        except OSError as e:
            raise MetricsStartError(
                f"cannot serve metrics on {self.http.host}:{self.http.port} (config keys metricsPromExporterHost/"
                f"metricsPromExporterPort): {e.strerror or e}"
            ) from e

    async def stop(self) -> None:
        await self.http.stop()

    def health(self) -> tuple[int, bytes]:
        r = self.routes
        body = {"role": "NAMESRV", "brokersAlive": len(r.broker_live_table), "topics": len(r.topic_queue_table)}
        return 200, json.dumps(body, sort_keys=True).encode() + b"\n"

    def collect(self) -> Iterator[Metric]:
        r = self.routes
        for name, doc, v in (
            ("rocketmq_namesrv_topic_number", "Topics in the route table", len(r.topic_queue_table)),
            ("rocketmq_namesrv_broker_number", "Broker names in the route table", len(r.broker_addr_table)),
            ("rocketmq_namesrv_cluster_number", "Clusters in the route table", len(r.cluster_addr_table)),
            ("rocketmq_namesrv_brokers_alive", "Broker addresses with a live registration", len(r.broker_live_table)),
        ):
            g = GaugeMetricFamily(name, doc, labels=self._names)
            g.add_metric(self._base, v)
            yield g
        yield from self.rpc_hook.collect()

"""The per-topic and per-group part of the exposition, published once per refresh.

The families built from the last :class:`LagSnapshot` (lag, DLQ, connections,
rocketmq-exporter's names) and the per-topic counters and size histograms (counted live on
the send path, *read* here) are rendered by :class:`SnapshotExposition` with
prometheus-client's encoders once per refresh (``metricsRefreshIntervalMillis``) and per
format asked for, on the render thread; a scrape appends those bytes to the small live part
(rpc latency, store, DLedger, broker gauges). With 1,000 topics and 200 groups this is
nearly all of the ~21,000 series, and no scrape pays for them again: they are as fresh as
the last refresh.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from broker.config import BrokerConfig
from broker.metrics.lag_calculator import LagSnapshot
from common import topic_validator

__all__ = ["SnapshotCollector", "SnapshotExposition"]


class SnapshotCollector:
    """Lag, DLQ, connections, half messages and rocketmq-exporter's names of one snapshot."""

    def __init__(self, base_labels: dict[str, str], broker_config: BrokerConfig, broker_ip: str,
                 also: Sequence[Callable[[], Iterable[Metric]]] = ()):
        self.also = also  # more per-topic / per-group families published at the same pace
        self._names = list(base_labels)
        self._base = list(base_labels.values())
        self.bc = broker_config
        self.broker_ip = broker_ip
        self.snapshot = LagSnapshot()

    def _gauge(self, name: str, doc: str, extra: list[str] | None = None) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, doc, labels=[*self._names, *(extra or [])])

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot
        for fn in self.also:
            yield from fn()
        yield from self._collect_lag(snap)
        base = self._base
        g = self._gauge("rocketmq_producer_connections", "Producer connections", ["language", "version", "protocol_type"])
        for (lang, ver), n in snap.producer_connections.items():
            g.add_metric([*base, lang, str(ver), "remoting"], n)
        yield g
        g = self._gauge("rocketmq_consumer_connections", "Consumer connections",
                        ["consumer_group", "language", "version", "consume_mode", "protocol_type", "is_system"])
        for (group, lang, ver, mode), n in snap.consumer_connections.items():
            g.add_metric([*base, group, lang, str(ver), mode, "remoting", _b(_is_system("", group))], n)
        yield g
        g = self._gauge("rocketmq_half_messages", "Half messages")
        g.add_metric(base, snap.half_messages)
        yield g
        yield from _exporter_families(snap, self.bc, self.broker_ip)

    def _collect_lag(self, snap: LagSnapshot) -> Iterator[Metric]:
        base = self._base
        extra = ["consumer_group", "topic", "is_retry", "is_system"]
        lag = self._gauge("rocketmq_consumer_lag_messages", "Consumer lag messages", extra)
        lat = self._gauge("rocketmq_consumer_lag_latency_milliseconds", "Consumer lag time", extra)
        inf = self._gauge("rocketmq_consumer_inflight_messages", "Consumer inflight messages", extra)
        ready = self._gauge("rocketmq_consumer_ready_messages", "Consumer ready messages", extra)
        for r in snap.lags:
            labels = [*base, r.group, r.topic, _b(r.is_retry), _b(_is_system(r.topic, r.group))]
            lag.add_metric(labels, r.lag)
            lat.add_metric(labels, r.lag_latency_ms)
            inf.add_metric(labels, r.inflight)
            ready.add_metric(labels, max(0, r.lag - r.inflight))
        dlq = CounterMetricFamily("rocketmq_send_to_dlq_messages", "Consumer send to DLQ messages",
                                  labels=[*self._names, "consumer_group", "is_system"])
        for group, n in snap.dlq.items():
            dlq.add_metric([*base, group, _b(_is_system("", group))], n)
        yield from (lag, lat, inf, ready, dlq)




class SnapshotExposition:
    """Rendered bytes of the snapshot families, per content type, for the current snapshot."""

    def __init__(self, collector: SnapshotCollector):
        self.collector = collector
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self._lock = threading.Lock()  # the render thread and a first-time scrape may both render
        self._rendered: dict[str, bytes] = {}
        # content type -> an Accept header that selects it; the text format from the start, so that
        # even the first scrape finds the snapshot rendered by the refresh (OpenMetrics once asked for)
        self._wanted: dict[str, str] = {choose_encoder("")[1]: ""}

    def publish(self, snap: LagSnapshot) -> None:
        """Render ``snap`` for every format scraped so far (call on the render thread)."""
        rendered = {}
        with self._lock:
            self.collector.snapshot = snap
            for ctype, accept in self._wanted.items():
                encoder, _ = choose_encoder(accept)
                rendered[ctype] = encoder(self.registry)
            self._rendered = rendered

    @property
    def rendered_types(self) -> frozenset[str]:
        """The content types whose snapshot part a scrape finds ready (no render on the scrape)."""
        return frozenset(self._rendered)

    def tail(self, accept: str, content_type: str) -> bytes:
        """The snapshot part for this format (rendered now the first time a format is asked for)."""
        body = self._rendered.get(content_type)
        if body is None:
            with self._lock:
                self._wanted[content_type] = accept
                encoder, _ = choose_encoder(accept)
                body = encoder(self.registry)
                self._rendered = {**self._rendered, content_type: body}
        return body


def _b(v: bool) -> str:
    return "true" if v else "false"


def _is_system(topic: str, group: str) -> bool:
    return (bool(topic) and topic_validator.is_system_topic(topic)) or group.lower().startswith("cid_rmq_sys_")


def _exporter_families(snap: LagSnapshot, bc: BrokerConfig, broker_ip: str) -> Iterator[Metric]:
    """rocketmq-exporter's gauges with that project's label names (dashboard 10477)."""
    cluster, broker = bc.brokerClusterName, bc.brokerName
    g = GaugeMetricFamily("rocketmq_broker_tps", "BrokerPutNums", labels=["cluster", "brokerIP", "broker"])
    g.add_metric([cluster, broker_ip, broker], snap.broker_tps)
    yield g
    g = GaugeMetricFamily("rocketmq_broker_qps", "BrokerGetNums", labels=["cluster", "brokerIP", "broker"])
    g.add_metric([cluster, broker_ip, broker], snap.broker_qps)
    yield g
    tps = GaugeMetricFamily("rocketmq_producer_tps", "TopicPutNums", labels=["cluster", "broker", "topic"])
    off = GaugeMetricFamily("rocketmq_producer_offset", "TopicOffset", labels=["cluster", "broker", "topic"])
    for t in snap.topics:
        tps.add_metric([cluster, broker, t.topic], t.put_tps)
        off.add_metric([cluster, broker, t.topic], t.max_offset)
    yield tps
    yield off
    names = ["cluster", "broker", "topic", "group"]
    ctps = GaugeMetricFamily("rocketmq_consumer_tps", "GroupGetNums", labels=names)
    coff = GaugeMetricFamily("rocketmq_consumer_offset", "GroupConsumeOffset", labels=names)
    glat = GaugeMetricFamily("rocketmq_group_get_latency_by_storetime", "GroupGetLatencyByStoreTime", labels=names)
    diff = GaugeMetricFamily("rocketmq_group_diff", "GroupDiff",
                             labels=["group", "topic", "countOfOnlineConsumers", "msgModel"])
    for r in snap.lags:
        labels = [cluster, broker, r.topic, r.group]
        ctps.add_metric(labels, r.consumer_tps)
        coff.add_metric(labels, r.consumer_offset)
        glat.add_metric(labels, r.lag_latency_ms)
        diff.add_metric([r.group, r.topic, str(r.online), r.msg_model], r.lag)
    yield from (ctps, coff, glat, diff)

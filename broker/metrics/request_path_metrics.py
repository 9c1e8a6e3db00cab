"""The recorders the request path writes to when metricsExporterType=PROM.

They are made before the processors, from the broker config alone, and handed to the send and pull
processors and the long-polling service through their constructors; BrokerMetricsManager is built
later with the same objects and only reads them. With metrics off there are none, and each hot path
tests one attribute for None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from broker.config import BrokerConfig
from broker.metrics.put_metrics import PullOffsets, PutCounterSource, PutMetrics
from common.metrics_exporter import check_exporter_type, parse_metrics_label, validate_metrics_keys
from remoting.rpc_latency import RpcLatencyHook

__all__ = ["RequestPathMetrics", "LateAnswerTimer", "PullOffsetRecorder", "broker_base_labels",
           "make_request_path_metrics"]


class LateAnswerTimer(Protocol):
    def observe(self, code: int, response_code: int, received_at: float, n: int = 1,
                long_polling: bool = False) -> None: ...

    def timer(self, code: int, response_code: int) -> Callable[[float, int], None]: ...


class PullOffsetRecorder(Protocol):
    def record(self, group: str, topic: str, queue_id: int, next_begin_offset: int) -> None: ...


@dataclass(frozen=True)
class RequestPathMetrics:
    """Per-topic put counters, the rpc latency histograms, and the offsets handed out by pulls."""

    puts: PutMetrics
    rpc_latency: RpcLatencyHook
    pull_offsets: PullOffsets


def broker_base_labels(bc: BrokerConfig) -> dict[str, str]:
    """The labels on every broker series: cluster, node_type, node_id, then metricsLabel's pairs."""
    return {"cluster": bc.brokerClusterName, "node_type": "broker", "node_id": bc.brokerName,
            **parse_metrics_label(bc.metricsLabel)}


def make_request_path_metrics(bc: BrokerConfig, stats: PutCounterSource) -> RequestPathMetrics | None:
    """The recorders, or None when metrics are off; ConfigError naming the key for a bad metrics key.
    ``stats``: the broker's put statistics, whose counters (kept by its inc_put) the put families render."""
    validate_metrics_keys(bc)
    if check_exporter_type(bc.metricsExporterType) != "PROM":
        return None
    labels = broker_base_labels(bc)
    return RequestPathMetrics(PutMetrics(labels, stats), RpcLatencyHook(labels), PullOffsets())

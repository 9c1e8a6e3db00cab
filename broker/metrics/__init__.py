"""The broker's metrics: Prometheus endpoint, collectors, health (see broker_metrics_manager)."""

from broker.metrics.broker_metrics_manager import BrokerMetricsManager, MetricsSources

__all__ = ["BrokerMetricsManager", "MetricsSources"]

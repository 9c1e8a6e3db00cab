"""Wire the metrics into a built broker (called by create_broker when metricsExporterType=PROM)."""

from __future__ import annotations

from typing import Any

from broker.metrics.broker_metrics_manager import BrokerMetricsManager, MetricsSources
from broker.processor.broker_config_processor import BROKER_VERSION_DESC
from common.metrics_exporter import check_exporter_type, validate_metrics_keys

__all__ = ["install_metrics", "validate_metrics_config"]


def validate_metrics_config(bc: Any) -> None:
    """ConfigError naming the key for a bad metricsExporterType / metricsLabel / port."""
    validate_metrics_keys(bc)


def install_metrics(b: Any, start_error: type[Exception]) -> BrokerMetricsManager | None:
    """Build the manager, hook the send/pull processors and both remoting servers, and add
    the endpoint as a broker service (a taken port fails start-up with ``start_error``)."""
    bc, sc = b.configs.broker, b.configs.store
    validate_metrics_config(bc)
    if check_exporter_type(bc.metricsExporterType) != "PROM":
        return None
    send, pull = b.send_processor, b.pull_processor
    store = b.store
    src = MetricsSources(
        broker_config=bc, store_config=sc, store=store, topics=b.topic_config_manager,
        groups=b.subscription_group_manager, offsets=b.consumer_offset_manager, consumers=b.consumer_manager,
        producers=b.producer_manager, stats=b.stats, broker_ip=bc.broker_ip1(),
        watermarks=lambda: {"send": send.waiting_puts, "pull": pull.hold_service.parked_count()},
        dledger=(lambda: store.commit_log.server) if sc.enableDLegerCommitLog else (lambda: None),
        version=BROKER_VERSION_DESC,
    )
    m = BrokerMetricsManager(src)
    send.put_metrics = m.put_metrics
    send.rpc_latency = m.rpc_hook  # the send path times its late answers itself, once per read
    pull.pull_offsets = m.pull_offsets
    pull.hold_service.rpc_latency = m.rpc_hook  # held pulls are answered late: timed by the holder
    for srv in (b.server, b.fast_server):
        if srv is not None:
            m.rpc_hook.install(srv)

    async def start() -> None:
        try:
            await m.start()
        except OSError as e:
            raise start_error(
                f"cannot serve metrics on {m.http.host}:{m.http.port} (config keys metricsPromExporterHost/"
                f"metricsPromExporterPort): {e.strerror or e}"
            ) from e

    b.add_service(start, m.stop)
    b.metrics_manager = m
    return m

"""Build the broker's metrics manager (called by the BrokerController; only when metricsExporterType=PROM)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from broker.broker_stats_manager import BrokerStatsManager
from broker.config import BrokerConfigs
from broker.consumer_manager import ConsumerManager
from broker.consumer_offset_manager import ConsumerOffsetManager
from broker.errors import BrokerStartError
from broker.metrics.broker_metrics_manager import BrokerMetricsManager, MetricsSources
from broker.metrics.request_path_metrics import RequestPathMetrics
from broker.processor.broker_config_processor import BROKER_VERSION_DESC
from broker.producer_manager import ProducerManager
from broker.role_state import RoleState
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from remoting.server import RemotingServer

__all__ = ["install_metrics", "start_metrics"]


def install_metrics(
    configs: BrokerConfigs, role: RoleState, store: Any, recorders: RequestPathMetrics | None, *,
    topics: TopicConfigManager, groups: SubscriptionGroupManager, offsets: ConsumerOffsetManager,
    consumers: ConsumerManager, producers: ProducerManager, stats: BrokerStatsManager,
    watermarks: Callable[[], dict[str, int]], servers: Sequence[RemotingServer],
) -> BrokerMetricsManager | None:
    """Build the manager over the request path's ``recorders`` (None when metrics are off: then no
    manager) and register the rpc latency hook on the remoting servers. The caller runs
    :func:`start_metrics` and ``manager.stop`` with the broker."""
    if recorders is None:
        return None
    bc, sc = configs.broker, configs.store
    src = MetricsSources(
        broker_config=bc, store_config=sc, role=role, store=store, topics=topics, groups=groups, offsets=offsets,
        consumers=consumers, producers=producers, stats=stats, broker_ip=bc.broker_ip1(), watermarks=watermarks,
        dledger=(lambda: store.commit_log.server) if sc.enableDLegerCommitLog else (lambda: None),
        version=BROKER_VERSION_DESC,
    )
    m = BrokerMetricsManager(src, recorders)
    for srv in servers:
        recorders.rpc_latency.install(srv)
    return m


async def start_metrics(m: BrokerMetricsManager) -> None:
    """Open the endpoint; a taken port fails the broker's start-up (BrokerStartError naming the keys)."""
    try:
        await m.start()
    except OSError as e:
        raise BrokerStartError(
            f"cannot serve metrics on {m.http.host}:{m.http.port} (config keys metricsPromExporterHost/"
            f"metricsPromExporterPort): {e.strerror or e}"
        ) from e

"""Build the broker's metrics (called by create_broker; a manager only when metricsExporterType=PROM)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from broker.broker_stats_manager import BrokerStatsManager
from broker.config import BrokerConfig, BrokerConfigs
from broker.consumer_manager import ConsumerManager
from broker.consumer_offset_manager import ConsumerOffsetManager
from broker.errors import BrokerStartError
from broker.metrics.broker_metrics_manager import BrokerMetricsManager, MetricsSources
from broker.processor.broker_config_processor import BROKER_VERSION_DESC
from broker.processor.pull_message_processor import PullMessageProcessor
from broker.processor.send_message_processor import SendMessageProcessor
from broker.producer_manager import ProducerManager
from broker.role_state import RoleState
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from common.metrics_exporter import check_exporter_type, validate_metrics_keys
from remoting.server import RemotingServer

__all__ = ["install_metrics", "start_metrics", "validate_metrics_config"]


def validate_metrics_config(bc: BrokerConfig) -> None:
    """ConfigError naming the key for a bad metricsExporterType / metricsLabel / port."""
    validate_metrics_keys(bc)


def install_metrics(
    configs: BrokerConfigs, role: RoleState, store: Any, *, topics: TopicConfigManager,
    groups: SubscriptionGroupManager, offsets: ConsumerOffsetManager, consumers: ConsumerManager,
    producers: ProducerManager, stats: BrokerStatsManager, send: SendMessageProcessor, pull: PullMessageProcessor,
    servers: Sequence[RemotingServer],
) -> BrokerMetricsManager | None:
    """Build the manager and hook it into the send/pull processors and the remoting servers; None when
    metrics are off. The caller runs :func:`start_metrics` and ``manager.stop`` with the broker."""
    bc, sc = configs.broker, configs.store
    validate_metrics_config(bc)
    if check_exporter_type(bc.metricsExporterType) != "PROM":
        return None
    src = MetricsSources(
        broker_config=bc, store_config=sc, role=role, store=store, topics=topics, groups=groups, offsets=offsets,
        consumers=consumers, producers=producers, stats=stats, broker_ip=bc.broker_ip1(),
        watermarks=lambda: {"send": send.waiting_puts, "pull": pull.hold_service.parked_count()},
        dledger=(lambda: store.commit_log.server) if sc.enableDLegerCommitLog else (lambda: None),
        version=BROKER_VERSION_DESC,
    )
    m = BrokerMetricsManager(src)
    send.put_metrics = m.put_metrics
    send.rpc_latency = m.rpc_hook  # the send path times its late answers itself, once per read
    pull.pull_offsets = m.pull_offsets
    pull.hold_service.rpc_latency = m.rpc_hook  # held pulls are answered late: timed by the holder
    for srv in servers:
        m.rpc_hook.install(srv)
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

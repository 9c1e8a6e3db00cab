"""Managers: the broker's metadata managers and client registries, built and loaded by the
controller and passed as one to the processors that work on most of them."""

from __future__ import annotations

from dataclasses import dataclass

from broker.broker_stats_manager import BrokerStatsManager
from broker.consumer_manager import ConsumerManager
from broker.consumer_offset_manager import ConsumerOffsetManager
from broker.filter import ConsumerFilterManager
from broker.producer_manager import ProducerManager
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager

__all__ = ["Managers"]


@dataclass
class Managers:
    """The broker's metadata managers and client registries (built and loaded by the controller)."""

    topics: TopicConfigManager
    groups: SubscriptionGroupManager
    offsets: ConsumerOffsetManager
    consumers: ConsumerManager
    producers: ProducerManager
    filters: ConsumerFilterManager
    stats: BrokerStatsManager

"""What the push and the lite pull consumer share: group settings, start-up, routes, start offsets.

Both own a client instance, a rebalance, an offset store (remote for clustering, a local
file for broadcasting) and a pull API wrapper, built the same way at start; both compute a
queue's first pull offset as RocketMQ's RebalancePushImpl/RebalanceLitePullImpl do.
"""

from __future__ import annotations

import asyncio
import logging

from client.allocate_strategy import AllocateStrategy
from client.client_config import ClientConfig, group_config
from client.consumer_common import (
    ConsumeFromWhere,
    default_consume_timestamp,
    make_subscription,
    parse_consume_timestamp,
)
from client.mq_client_instance import MQClientInstance
from client.offset_store import LocalFileOffsetStore, OffsetStore, ReadOffsetType, RemoteBrokerOffsetStore
from client.pull_api_wrapper import PullAPIWrapper
from client.rebalance_impl import MessageModel, RebalanceImpl
from common.mixall import is_retry_topic
from remoting.body.consumer import MessageQueue
from remoting.body.heartbeat import SubscriptionData

__all__ = ["ConsumerBase"]

log = logging.getLogger("client")


class ConsumerBase:
    """Base of :class:`~client.push_consumer.PushConsumer` and :class:`~client.lite_pull_consumer.LitePullConsumer`."""

    def __init__(
        self,
        group: str,
        namesrv_addr: str | None,
        config: ClientConfig | None,
        message_model: str,
        consume_from_where: str,
        consume_timestamp: str | None,
        allocate_strategy: AllocateStrategy,
        offset_store_dir: str | None,
    ):
        self.config = group_config(group, config, namesrv_addr)
        self.group = group
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.consume_timestamp = consume_timestamp or default_consume_timestamp()
        self.allocate_strategy = allocate_strategy
        self.offset_store_dir = offset_store_dir
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.instance: MQClientInstance | None = None
        self.rebalance: RebalanceImpl | None = None
        self.offset_store: OffsetStore | None = None
        self.pull_api: PullAPIWrapper | None = None
        self._running = False

    def subscribe(self, topic: str, expression: str = "*", expression_type: str = "TAG") -> None:
        """Subscribe to ``topic`` with a tag expression (``"a || b"``, ``"*"``) or SQL92 (``expression_type="SQL92"``)."""
        self.subscriptions[topic] = make_subscription(topic, expression, expression_type)
        if self.rebalance is not None:
            self.rebalance.subscription_inner[topic] = self.subscriptions[topic]
            asyncio.get_running_loop().create_task(self._refresh_routes_and_rebalance())

    @property
    def client_id(self) -> str:
        return self.instance.client_id if self.instance else ""

    async def _start_instance(self) -> MQClientInstance:
        """Build and load what a started consumer owns (the instance itself is started by the caller)."""
        self._running = True
        inst = MQClientInstance(self.config)
        self.instance = inst
        self.rebalance = RebalanceImpl(inst, self.group, self.message_model, self, self.allocate_strategy)
        self.rebalance.subscription_inner.update(self.subscriptions)
        if self.message_model == MessageModel.CLUSTERING:
            self.offset_store = RemoteBrokerOffsetStore(inst, self.group)
        else:
            self.offset_store = LocalFileOffsetStore(inst.client_id, self.group, self.offset_store_dir)
        await self.offset_store.load()
        self.pull_api = PullAPIWrapper(inst, self.group)
        return inst

    async def _refresh_routes_and_rebalance(self) -> None:
        inst = self.instance
        for topic in list(self.rebalance.subscription_inner):
            try:
                await inst.update_topic_route_from_namesrv(topic)
            except Exception as e:
                log.info("%s: route of %s not available yet: %s", self.group, topic, e)
        await inst.send_heartbeat_to_all_brokers()
        inst.rebalance_immediately()

    async def start(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    async def shutdown(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    async def __aenter__(self):
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.shutdown()

    # -- ConsumerInner / RebalanceHooks parts that do not differ ------------------------------------------

    def has_subscribe_info(self, topic: str) -> bool:
        return self.rebalance is not None and topic in self.rebalance.topic_subscribe_info

    def update_topic_subscribe_info(self, topic: str, mqs: set) -> None:
        if self.rebalance is not None and topic in self.rebalance.subscription_inner:
            self.rebalance.topic_subscribe_info[topic] = set(mqs)

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """The stored offset, else where ``consume_from_where`` says; -1 when it cannot be known yet."""
        last = await self.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
        if last >= 0:
            return last
        if last != -1:
            return -1
        cfw = self.consume_from_where
        try:
            if cfw == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
                return 0
            if is_retry_topic(mq.topic):
                return 0 if cfw == ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET else await self._max_offset(mq)
            if cfw == ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
                addr = self._master_addr(mq)
                return await self.instance.api.search_offset(addr, mq, parse_consume_timestamp(self.consume_timestamp))
            return await self._max_offset(mq)
        except Exception as e:
            log.info("%s: start offset of %s unknown: %s", self.group, mq, e)
            return -1

    async def _max_offset(self, mq: MessageQueue) -> int:
        return await self.instance.api.get_max_offset(self._master_addr(mq), mq)

    def _master_addr(self, mq: MessageQueue) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

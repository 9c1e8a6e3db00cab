"""RebalanceImpl: which queues this client owns, recomputed every 20 s and on membership change.

Clustering: the sorted queue list of each subscribed topic is split among the
sorted consumer ids with the configured strategy (identical to Java, see
:mod:`client.allocate_strategy`). Broadcasting: every queue. Queues gained
get a ProcessQueue and a pull task; queues lost are dropped after their
offset is persisted (and, for orderly consumers, unlocked).
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

from client.allocate_strategy import AllocateStrategy, allocate_averagely
from client.process_queue import ProcessQueue
from client.topic_publish_info import sort_key
from remoting.body.consumer import LockBatchRequestBody, MessageQueue
from remoting.body.heartbeat import SubscriptionData

__all__ = ["RebalanceImpl", "RebalanceHooks", "MessageModel"]

log = logging.getLogger("client")


class MessageModel:
    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class RebalanceHooks(Protocol):
    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool: ...

    async def compute_pull_from_where(self, mq: MessageQueue) -> int: ...

    def dispatch_pull_request(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None: ...

    def message_queue_changed(self, topic: str, mq_all: set[MessageQueue], divided: set[MessageQueue]) -> None: ...


class RebalanceImpl:
    """See the module docstring."""

    def __init__(self, instance, group: str, message_model: str, hooks: RebalanceHooks,
                 strategy: AllocateStrategy = allocate_averagely):
        self.instance = instance
        self.group = group
        self.message_model = message_model
        self.hooks = hooks
        self.strategy = strategy
        self.subscription_inner: dict[str, SubscriptionData] = {}
        self.topic_subscribe_info: dict[str, set[MessageQueue]] = {}
        self.process_queue_table: dict[MessageQueue, ProcessQueue] = {}

    async def do_rebalance(self, is_order: bool) -> None:
        for topic in list(self.subscription_inner):
            try:
                await self._rebalance_by_topic(topic, is_order)
            except Exception as e:
                log.warning("%s: rebalance of %s failed: %s", self.group, topic, e)
        # queues of topics no longer subscribed
        for mq in list(self.process_queue_table):
            if mq.topic not in self.subscription_inner:
                pq = self.process_queue_table.pop(mq)
                pq.dropped = True
                await self.hooks.remove_unnecessary_message_queue(mq, pq)

    async def _rebalance_by_topic(self, topic: str, is_order: bool) -> None:
        mq_set = self.topic_subscribe_info.get(topic)
        if mq_set is None:
            return
        if self.message_model == MessageModel.BROADCASTING:
            allocated = set(mq_set)
        else:
            cids = await self.instance.find_consumer_id_list(topic, self.group)
            if not cids:
                log.info("%s: no consumer ids for %s yet", self.group, topic)
                return
            mqs = sorted(mq_set, key=sort_key)
            cids = sorted(cids)
            try:
                allocated = set(self.strategy(self.group, self.instance.client_id, mqs, cids))
            except ValueError as e:
                log.warning("%s: allocation failed: %s", self.group, e)
                return
        changed = await self._update_process_queue_table(topic, allocated, is_order)
        if changed:
            self.hooks.message_queue_changed(topic, set(mq_set), allocated)

    async def _update_process_queue_table(self, topic: str, allocated: set[MessageQueue], is_order: bool) -> bool:
        changed = False
        for mq, pq in list(self.process_queue_table.items()):
            if mq.topic != topic:
                continue
            if mq not in allocated:
                pq.dropped = True
                if await self.hooks.remove_unnecessary_message_queue(mq, pq):
                    self.process_queue_table.pop(mq, None)
                    changed = True
        new = []
        for mq in sorted(allocated - set(self.process_queue_table), key=sort_key):
            if is_order and not await self.lock(mq):
                log.info("%s: cannot lock %s yet, skip it this round", self.group, mq)
                continue
            offset = await self.hooks.compute_pull_from_where(mq)
            if offset < 0:
                log.info("%s: no start offset for %s yet", self.group, mq)
                continue
            pq = ProcessQueue()
            if is_order:
                pq.locked = True
                pq.last_lock_timestamp = time.monotonic()
            self.process_queue_table[mq] = pq
            new.append((mq, pq, offset))
            changed = True
        for mq, pq, offset in new:
            self.hooks.dispatch_pull_request(mq, pq, offset)
        return changed

    # -- orderly locks ----------------------------------------------------------------------------

    def _master(self, broker_name: str) -> str | None:
        addr, _ = self.instance.find_broker_address_in_subscribe(broker_name, 0, True)
        return addr

    async def lock(self, mq: MessageQueue) -> bool:
        addr = self._master(mq.brokerName)
        if addr is None:
            return False
        body = LockBatchRequestBody(consumerGroup=self.group, clientId=self.instance.client_id, mqSet=[mq])
        try:
            locked = await self.instance.api.lock_batch_mq(addr, body)
        except Exception as e:
            log.info("%s: lock %s failed: %s", self.group, mq, e)
            return False
        return mq in locked

    async def lock_all(self) -> None:
        """Renew the broker locks of every owned queue (Java: every 20 s)."""
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in self.process_queue_table:
            by_broker.setdefault(mq.brokerName, []).append(mq)
        for broker, mqs in by_broker.items():
            addr = self._master(broker)
            if addr is None:
                continue
            body = LockBatchRequestBody(consumerGroup=self.group, clientId=self.instance.client_id, mqSet=mqs)
            try:
                ok = await self.instance.api.lock_batch_mq(addr, body)
            except Exception as e:
                log.info("%s: lockAll on %s failed: %s", self.group, broker, e)
                continue
            now = time.monotonic()
            for mq in mqs:
                pq = self.process_queue_table.get(mq)
                if pq is None:
                    continue
                if mq in ok:
                    pq.locked = True
                    pq.last_lock_timestamp = now
                else:
                    pq.locked = False

    async def unlock(self, mq: MessageQueue, oneway: bool = False) -> None:
        addr = self._master(mq.brokerName)
        if addr is None:
            return
        body = LockBatchRequestBody(consumerGroup=self.group, clientId=self.instance.client_id, mqSet=[mq])
        try:
            await self.instance.api.unlock_batch_mq(addr, body, oneway)
        except Exception as e:
            log.info("%s: unlock %s failed: %s", self.group, mq, e)

    async def unlock_all(self) -> None:
        for mq in list(self.process_queue_table):
            await self.unlock(mq, oneway=True)

"""LitePullConsumer (Java DefaultLitePullConsumer): the application polls; pulls run in the background.

``subscribe`` lets the group rebalance queues among its members; ``assign``
takes fixed queues. Each owned queue has a pull task (long polling, suspend
20 s) filling a shared request queue that :meth:`LitePullConsumer.poll`
drains. The consume offset of a queue advances as its messages are polled;
with ``auto_commit`` it is committed every ``auto_commit_interval`` seconds,
otherwise by :meth:`commit_sync`. :meth:`seek` moves a queue's position and
discards what was already fetched for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from client.allocate_strategy import AllocateStrategy, allocate_averagely
from client.client_config import ClientConfig
from client.consumer_base import ConsumerBase
from client.consumer_common import (
    ConsumeFromWhere,
    make_subscription,
)
from client.exceptions import MQClientError
from client.offset_store import ReadOffsetType, RemoteBrokerOffsetStore
from client.process_queue import ProcessQueue
from client.pull_api_wrapper import PullSysFlag
from client.rebalance_impl import MessageModel
from client.topic_publish_info import route_to_subscribe_info, sort_key
from common.message import MessageExt
from common.pull_status import PullStatus
from remoting.body.consumer import MessageQueue
from remoting.body.heartbeat import ConsumerData

__all__ = ["LitePullConsumer"]

log = logging.getLogger("client")

BROKER_SUSPEND_MAX_TIME_MILLIS = 20000
CONSUMER_TIMEOUT_WHEN_SUSPEND = 30.0
PULL_DELAY_WHEN_EXCEPTION = 1.0
PULL_DELAY_WHEN_FLOW_CONTROL = 0.05
PULL_DELAY_WHEN_PAUSE = 0.2


@dataclass
class _QueueState:
    pq: ProcessQueue
    consume_offset: int = -1
    pull_offset: int = -1
    seek_offset: int = -1
    generation: int = 0
    paused: bool = False
    task: asyncio.Task | None = None


@dataclass
class _ConsumeRequest:
    mq: MessageQueue
    msgs: list[MessageExt]
    generation: int
    pq: ProcessQueue = field(repr=False, default=None)


class LitePullConsumer(ConsumerBase):
    """See the module docstring."""

    def __init__(
        self,
        group: str,
        namesrv_addr: str | None = None,
        *,
        config: ClientConfig | None = None,
        message_model: str = MessageModel.CLUSTERING,
        consume_from_where: str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp: str | None = None,
        allocate_strategy: AllocateStrategy = allocate_averagely,
        pull_batch_size: int = 10,
        auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue: int = 100,
        poll_timeout: float = 5.0,
        offset_store_dir: str | None = None,
    ):
        super().__init__(group, namesrv_addr, config, message_model, consume_from_where, consume_timestamp,
                         allocate_strategy, offset_store_dir)
        self.pull_batch_size = pull_batch_size
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.poll_timeout = poll_timeout
        self.assigned: set[MessageQueue] | None = None
        self.states: dict[MessageQueue, _QueueState] = {}
        self._requests: asyncio.Queue[_ConsumeRequest] = asyncio.Queue()
        self._last_commit = time.monotonic()

    # -- configuration ---------------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*", expression_type: str = "TAG") -> None:
        """Subscribe (group rebalancing); cannot be mixed with :meth:`assign`."""
        if self.assigned is not None:
            raise MQClientError("Subscribe and assign are mutually exclusive.")
        super().subscribe(topic, expression, expression_type)

    def assign(self, mqs) -> None:
        """Consume exactly these queues (no rebalancing)."""
        if self.subscriptions:
            raise MQClientError("Subscribe and assign are mutually exclusive.")
        self.assigned = set(mqs)
        if self.instance is not None:
            self._update_assigned(self.assigned)

    # -- lifecycle ------------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.instance is not None:
            return
        inst = await self._start_instance()
        inst.register_consumer(self.group, self)
        await inst.start()
        if self.assigned is not None:
            for topic in {mq.topic for mq in self.assigned}:
                try:
                    await inst.update_topic_route_from_namesrv(topic)
                except Exception as e:
                    log.info("%s: route of %s unavailable: %s", self.group, topic, e)
            self._update_assigned(self.assigned)
        else:
            await self._refresh_routes_and_rebalance()

    async def shutdown(self) -> None:
        if self.instance is None:
            return
        self._running = False
        tasks = [s.task for s in self.states.values() if s.task]
        for t in tasks:
            t.cancel()
        if tasks:  # bounded, as PushConsumer.shutdown
            await asyncio.wait(tasks, timeout=5)
        if self.auto_commit:
            await self.commit_sync()
        else:
            await self.offset_store.persist_all(list(self.states))
        inst, self.instance = self.instance, None
        await inst.shutdown()

    # -- application API --------------------------------------------------------------------------------------

    async def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """Messages fetched for one queue, or [] after ``timeout`` seconds (default ``poll_timeout``)."""
        if self.instance is None:
            raise MQClientError("The consumer not running, please start it first.")
        await self._maybe_auto_commit()
        deadline = time.monotonic() + (self.poll_timeout if timeout is None else timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            try:
                req = await asyncio.wait_for(self._requests.get(), remaining)
            except TimeoutError:
                return []
            st = self.states.get(req.mq)
            if st is None or st.pq is not req.pq or st.generation != req.generation or req.pq.dropped:
                continue  # the queue was seeked or reassigned after these were fetched
            offset = req.pq.remove_messages(req.msgs)
            if offset >= 0:
                st.consume_offset = offset
            return req.msgs

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Consume ``mq`` from ``offset`` next (must be an owned queue; offset within [min, max])."""
        st = self.states.get(mq)
        if st is None:
            raise MQClientError(f"The message queue is not in assigned list, message queue: {mq}")
        addr = self._master_addr(mq)
        lo = await self.instance.api.get_min_offset(addr, mq)
        hi = await self.instance.api.get_max_offset(addr, mq)
        if offset < lo or offset > hi:
            raise MQClientError(f"Seek offset illegal, seek offset = {offset}, min offset = {lo}, max offset = {hi}")
        st.generation += 1
        st.pq.clear()
        st.seek_offset = offset
        st.consume_offset = offset
        if st.task is not None:
            st.task.cancel()
        st.task = asyncio.get_running_loop().create_task(self._pull_loop(mq, st))

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.instance.api.get_min_offset(self._master_addr(mq), mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.instance.api.get_max_offset(self._master_addr(mq), mq))

    async def commit_sync(self) -> None:
        """Store the consume offsets of every owned queue on the broker (or the local file) now."""
        mqs = []
        for mq, st in self.states.items():
            if st.consume_offset >= 0:
                self.offset_store.update_offset(mq, st.consume_offset, False)
                mqs.append(mq)
        if isinstance(self.offset_store, RemoteBrokerOffsetStore):
            for mq in mqs:
                try:
                    await self.offset_store.update_consume_offset_to_broker(mq, self.offset_store.table[mq])
                except Exception as e:
                    log.warning("%s: commit of %s failed: %s", self.group, mq, e)
        else:
            await self.offset_store.persist_all(mqs)
        self._last_commit = time.monotonic()

    async def committed(self, mq: MessageQueue) -> int:
        """The offset stored on the broker (or file) for ``mq``; -1 when none."""
        return await self.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """Every readable queue of ``topic`` (for :meth:`assign`)."""
        route = await self.instance.api.get_topic_route(topic) if self.instance else None
        if route is None:
            raise MQClientError(f"The topic[{topic}] not exist")
        return sorted(route_to_subscribe_info(topic, route), key=sort_key)

    def pause(self, mqs) -> None:
        for mq in mqs:
            if mq in self.states:
                self.states[mq].paused = True

    def resume(self, mqs) -> None:
        for mq in mqs:
            if mq in self.states:
                self.states[mq].paused = False

    async def _maybe_auto_commit(self) -> None:
        if self.auto_commit and time.monotonic() - self._last_commit >= self.auto_commit_interval:
            await self.commit_sync()

    # -- ConsumerInner ---------------------------------------------------------------------------------------

    def subscribe_topics(self) -> list[str]:
        if self.assigned is not None:
            return sorted({mq.topic for mq in self.assigned})
        return list(self.rebalance.subscription_inner) if self.rebalance else list(self.subscriptions)

    def consumer_data(self) -> ConsumerData:
        subs = [] if self.assigned is not None else list(self.rebalance.subscription_inner.values())
        return ConsumerData(groupName=self.group, consumeType="CONSUME_ACTIVELY", messageModel=self.message_model,
                            consumeFromWhere=self.consume_from_where, subscriptionDataSet=subs)

    async def do_rebalance(self) -> None:
        if self._running and self.assigned is None and self.rebalance is not None:
            await self.rebalance.do_rebalance(False)

    async def persist_consumer_offset(self) -> None:
        if self.offset_store is None:
            return
        if self.auto_commit:
            for mq, st in self.states.items():
                if st.consume_offset >= 0:
                    self.offset_store.update_offset(mq, st.consume_offset, False)
        await self.offset_store.persist_all(list(self.states))

    async def reset_offset(self, topic: str, table: dict) -> None:
        for mq, off in table.items():
            if mq in self.states:
                st = self.states[mq]
                st.generation += 1
                st.pq.clear()
                st.seek_offset = off
                st.consume_offset = off

    def running_info(self) -> dict:
        return {"properties": {"consumeType": "CONSUME_ACTIVELY", "messageModel": self.message_model},
                "subscriptionSet": [s.to_obj() for s in self.rebalance.subscription_inner.values()],
                "mqTable": {mq.key(): st.pq.info(st.consume_offset) for mq, st in self.states.items()},
                "statusTable": {}}

    async def consume_message_directly(self, msg, broker_name) -> dict:
        return {"autoCommit": True, "consumeResult": "CR_THROW_EXCEPTION", "order": False,
                "remark": "lite pull consumer cannot consume directly", "spentTimeMills": 0}

    # -- RebalanceHooks ------------------------------------------------------------------------------------------

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        st = self.states.pop(mq, None)
        if st is not None:
            if st.task:
                st.task.cancel()
            if st.consume_offset >= 0:
                self.offset_store.update_offset(mq, st.consume_offset, False)
        await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        return True

    def dispatch_pull_request(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        st = _QueueState(pq=pq, consume_offset=offset, pull_offset=offset)
        old = self.states.get(mq)
        if old is not None and old.task:
            old.task.cancel()
        self.states[mq] = st
        st.task = asyncio.get_running_loop().create_task(self._pull_loop(mq, st))

    def message_queue_changed(self, topic: str, mq_all: set, divided: set) -> None:
        return None

    def _update_assigned(self, mqs: set[MessageQueue]) -> None:
        for mq in list(self.states):
            if mq not in mqs:
                st = self.states.pop(mq)
                st.pq.dropped = True
                if st.task:
                    st.task.cancel()
        for mq in mqs:
            if mq not in self.states:
                st = _QueueState(pq=ProcessQueue())
                self.states[mq] = st
                st.task = asyncio.get_running_loop().create_task(self._pull_loop(mq, st))

    def _master_addr(self, mq: MessageQueue) -> str:
        addr, _ = self.instance.find_broker_address_in_subscribe(mq.brokerName, 0, False)
        if addr is None:
            raise MQClientError(f"The broker[{mq.brokerName}] not exist")
        return addr

    # -- pulling ---------------------------------------------------------------------------------------------------

    async def _pull_loop(self, mq: MessageQueue, st: _QueueState) -> None:
        pq = st.pq
        try:
            while self._running and not pq.dropped:
                if st.paused:
                    await asyncio.sleep(PULL_DELAY_WHEN_PAUSE)
                    continue
                if pq.msg_count > self.pull_threshold_for_queue or \
                        pq.msg_size > self.pull_threshold_size_for_queue * 1024 * 1024:
                    await asyncio.sleep(PULL_DELAY_WHEN_FLOW_CONTROL)
                    continue
                if st.seek_offset >= 0:
                    st.pull_offset, st.seek_offset = st.seek_offset, -1
                if st.pull_offset < 0:
                    if self.instance.find_broker_address_in_subscribe(mq.brokerName)[0] is None:
                        await self.instance.update_topic_route_from_namesrv(mq.topic)
                    off = await self.compute_pull_from_where(mq)
                    if off < 0:
                        await asyncio.sleep(PULL_DELAY_WHEN_EXCEPTION)
                        continue
                    st.pull_offset = off
                    if st.consume_offset < 0:
                        st.consume_offset = off
                sub = self.subscriptions.get(mq.topic) or make_subscription(mq.topic, "*")
                gen = st.generation
                try:
                    result = await self.pull_api.pull_kernel(
                        mq, sub, st.pull_offset, self.pull_batch_size,
                        PullSysFlag.build(False, True, True, False, True), 0,
                        BROKER_SUSPEND_MAX_TIME_MILLIS, CONSUMER_TIMEOUT_WHEN_SUSPEND)
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.info("%s: pull %s failed: %s", self.group, mq, e)
                    await asyncio.sleep(PULL_DELAY_WHEN_EXCEPTION)
                    continue
                if gen != st.generation or pq.dropped:
                    continue  # seeked while the pull was in flight
                if result.status == PullStatus.FOUND and result.msg_found_list:
                    pq.put_messages(result.msg_found_list)
                    self._requests.put_nowait(_ConsumeRequest(mq, result.msg_found_list, gen, pq))
                elif result.status == PullStatus.OFFSET_ILLEGAL:
                    log.warning("%s: offset %d of %s illegal, moving to %d", self.group, st.pull_offset, mq,
                                result.next_begin_offset)
                st.pull_offset = result.next_begin_offset
        except asyncio.CancelledError:
            pass

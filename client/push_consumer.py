"""PushConsumer (Java DefaultMQPushConsumer): long-polling pulls feeding a listener.

Per owned queue one pull task long-polls the broker (suspend 15 s, RPC
timeout 30 s) and hands the messages to the consume service:

* concurrent listeners run up to ``consume_thread_max`` at once in batches of
  ``consume_message_batch_max_size``; a failed batch is sent back with
  CONSUMER_SEND_MSG_BACK (falling back to a client-side resend to
  ``%RETRY%group``, and to a local retry after 5 s when that fails too);
* orderly listeners consume one queue at a time, holding the broker's queue
  lock (LOCK_BATCH_MQ, renewed every 20 s) in clustering mode.

Listeners are ``listener(msgs, context) -> status``; coroutine functions run on
the loop, plain functions on a thread pool of ``consume_thread_max`` threads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

from client.allocate_strategy import AllocateStrategy, allocate_averagely
from client.client_config import ClientConfig
from client.consumer_base import ConsumerBase
from client.consumer_common import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
    call_listener,
    make_subscription,
)
from client.exceptions import MQClientError
from client.message import Message, msg_id_of
from client.offset_store import RemoteBrokerOffsetStore
from client.process_queue import REBALANCE_LOCK_INTERVAL, ProcessQueue
from client.producer import Producer
from client.pull_api_wrapper import PullSysFlag, restore_retry_topic
from client.rebalance_impl import MessageModel
from client.trace.trace_hooks import ConsumeReturnType, TraceHooks
from common.message import MessageConst, MessageExt
from common.mixall import CLIENT_INNER_PRODUCER_GROUP, get_retry_topic
from common.pull_status import PullStatus
from remoting.body.consumer import MessageQueue
from remoting.body.heartbeat import ConsumerData
from remoting.header.broker import ConsumerSendMsgBackRequestHeader

__all__ = ["PushConsumer", "MessageModel"]

log = logging.getLogger("client")

BROKER_SUSPEND_MAX_TIME_MILLIS = 15000
CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND = 30.0
PULL_TIME_DELAY_WHEN_EXCEPTION = 3.0
PULL_TIME_DELAY_WHEN_FLOW_CONTROL = 0.05
LOCAL_RETRY_DELAY = 5.0


class PushConsumer(ConsumerBase):
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
        consume_thread_min: int = 20,
        consume_thread_max: int = 20,
        consume_message_batch_max_size: int = 1,
        pull_batch_size: int = 32,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue: int = 100,
        consume_concurrently_max_span: int = 2000,
        pull_interval: float = 0.0,
        max_reconsume_times: int = -1,
        suspend_current_queue_time_millis: int = 1000,
        offset_store_dir: str | None = None,
        post_subscription_when_pull: bool = True,
        enable_msg_trace: bool = False,
        custom_trace_topic: str | None = None,
    ):
        super().__init__(group, namesrv_addr, config, message_model, consume_from_where, consume_timestamp,
                         allocate_strategy, offset_store_dir)
        self.consume_thread_min = consume_thread_min
        self.consume_thread_max = max(consume_thread_max, 1)
        self.consume_message_batch_max_size = max(consume_message_batch_max_size, 1)
        self.pull_batch_size = pull_batch_size
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.pull_interval = pull_interval
        self.max_reconsume_times = max_reconsume_times
        self.suspend_current_queue_time_millis = suspend_current_queue_time_millis
        self.post_subscription_when_pull = post_subscription_when_pull
        # message trace (RocketMQ 4.x format): SubBefore / SubAfter records through an async dispatcher
        self.enable_msg_trace = enable_msg_trace
        self.custom_trace_topic = custom_trace_topic
        self.trace: TraceHooks | None = None
        self.listener = None
        self.orderly = False
        self._executor: ThreadPoolExecutor | None = None
        self._sem: asyncio.Semaphore | None = None
        self._pull_tasks: dict[MessageQueue, asyncio.Task] = {}
        self._consume_tasks: set[asyncio.Task] = set()
        self._queue_locks: dict[MessageQueue, asyncio.Lock] = {}
        self._inner_producer: Producer | None = None
        self._lock_task: asyncio.Task | None = None
        self._stale_routes: set[str] = set()
        self.consumed_ok = 0
        self.consumed_failed = 0

    # -- configuration -----------------------------------------------------------------------------

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)
        if self.rebalance is not None:
            self.rebalance.subscription_inner.pop(topic, None)

    def register_message_listener(self, listener) -> None:
        """Concurrent listener: ``listener(msgs, ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus``."""
        self.listener = listener
        self.orderly = False

    def register_message_listener_orderly(self, listener) -> None:
        """Orderly listener: ``listener(msgs, ConsumeOrderlyContext) -> ConsumeOrderlyStatus``."""
        self.listener = listener
        self.orderly = True

    def _max_reconsume(self) -> int:
        return 16 if self.max_reconsume_times == -1 else self.max_reconsume_times

    # -- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.instance is not None:
            return
        if self.listener is None:
            raise MQClientError("messageListener is null")
        if not self.subscriptions:
            raise MQClientError("no subscription: call subscribe() before start()")
        inst = await self._start_instance()
        if self.message_model == MessageModel.CLUSTERING:
            retry = get_retry_topic(self.group)
            self.rebalance.subscription_inner[retry] = make_subscription(retry, "*")
        self._executor = ThreadPoolExecutor(self.consume_thread_max, thread_name_prefix=f"Consume_{self.group}")
        self._sem = asyncio.Semaphore(self.consume_thread_max)
        inst.register_consumer(self.group, self)
        self._inner_producer = Producer(CLIENT_INNER_PRODUCER_GROUP, instance=inst)
        await self._inner_producer.start()
        await inst.start()
        if self.enable_msg_trace:
            self.trace = await TraceHooks.start(self.group, self.config, self.custom_trace_topic, Producer)
        await self._refresh_routes_and_rebalance()
        if self.orderly and self.message_model == MessageModel.CLUSTERING:
            self._lock_task = asyncio.get_running_loop().create_task(self._lock_renewal())

    async def shutdown(self) -> None:
        """Stop pulling, let running listeners finish, persist offsets, unlock, unregister."""
        if self.instance is None:
            return
        self._running = False
        if self._lock_task:
            self._lock_task.cancel()
        for pq in self.rebalance.process_queue_table.values():
            pq.dropped = True
        for t in self._pull_tasks.values():
            t.cancel()
        if self._pull_tasks:  # bounded: a shutdown must never hang on one stuck pull
            await asyncio.wait(list(self._pull_tasks.values()), timeout=5)
        if self._consume_tasks:
            await asyncio.wait(list(self._consume_tasks), timeout=10)
        await self.persist_consumer_offset()
        if self.orderly and self.message_model == MessageModel.CLUSTERING:
            await self.rebalance.unlock_all()
        if self.trace is not None:
            trace, self.trace = self.trace, None
            await trace.dispatcher.stop()
        inst, self.instance = self.instance, None
        await inst.shutdown()
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- ConsumerInner ----------------------------------------------------------------------------------

    def subscribe_topics(self) -> list[str]:
        return list(self.rebalance.subscription_inner) if self.rebalance else list(self.subscriptions)

    def consumer_data(self) -> ConsumerData:
        subs = list(self.rebalance.subscription_inner.values()) if self.rebalance else list(self.subscriptions.values())
        return ConsumerData(groupName=self.group, consumeType="CONSUME_PASSIVELY", messageModel=self.message_model,
                            consumeFromWhere=self.consume_from_where, subscriptionDataSet=subs)

    async def do_rebalance(self) -> None:
        if self._running and self.rebalance is not None:
            await self._fetch_missing_routes()
            await self.rebalance.do_rebalance(self.orderly)

    async def _fetch_missing_routes(self) -> None:
        # e.g. %RETRY%group only gets a route once the broker created it (first send-back)
        stale, self._stale_routes = self._stale_routes, set()
        for topic in list(self.rebalance.subscription_inner):
            if topic not in self.rebalance.topic_subscribe_info or topic in stale:
                try:
                    await self.instance.update_topic_route_from_namesrv(topic)
                except Exception as e:
                    log.debug("%s: route of %s still unavailable: %s", self.group, topic, e)

    async def persist_consumer_offset(self) -> None:
        if self.offset_store is not None and self.rebalance is not None:
            await self.offset_store.persist_all(list(self.rebalance.process_queue_table))

    async def reset_offset(self, topic: str, table: dict) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: drop the topic's queues, adopt the offsets, rebalance."""
        for mq, pq in list(self.rebalance.process_queue_table.items()):
            if mq.topic == topic and mq in table:
                pq.dropped = True
                t = self._pull_tasks.pop(mq, None)
                if t:
                    t.cancel()
        for mq, off in table.items():
            if mq.topic != topic:
                continue
            self.offset_store.update_offset(mq, off, False)
            if isinstance(self.offset_store, RemoteBrokerOffsetStore):
                try:
                    await self.offset_store.update_consume_offset_to_broker(mq, off)
                except Exception as e:
                    log.info("%s: reset offset of %s not stored on the broker: %s", self.group, mq, e)
            self.rebalance.process_queue_table.pop(mq, None)
        self.instance.rebalance_immediately()

    def consumer_status(self, topic: str) -> dict:
        """This consumer's offsets of ``topic`` (all topics when empty): GET_CONSUMER_STATUS_FROM_CLIENT."""
        return {mq: off for mq, off in list(self.offset_store.table.items()) if not topic or mq.topic == topic}

    def running_info(self) -> dict:
        mq_table = {}
        for mq, pq in self.rebalance.process_queue_table.items():
            mq_table[mq.key()] = pq.info(self.offset_store.table.get(mq, -1))
        return {
            "properties": {"consumeType": "CONSUME_PASSIVELY", "messageModel": self.message_model,
                           "consumeOrderly": str(self.orderly).lower(), "PROP_CONSUMEORDERLY": str(self.orderly).lower(),
                           "PROP_THREADPOOL_CORE_SIZE": str(self.consume_thread_max)},
            "subscriptionSet": [s.to_obj() for s in self.rebalance.subscription_inner.values()],
            "mqTable": mq_table,
            "statusTable": {},
        }

    async def consume_message_directly(self, msg: MessageExt, broker_name: str | None) -> dict:
        start = time.monotonic()
        mq = MessageQueue(msg.topic, broker_name or "", msg.queue_id)
        restore_retry_topic(msg, self.group)
        try:
            if self.orderly:
                status = await call_listener(self.listener, self._executor, [msg], ConsumeOrderlyContext(mq))
                result = "CR_SUCCESS" if status == ConsumeOrderlyStatus.SUCCESS else "CR_LATER"
            else:
                status = await call_listener(self.listener, self._executor, [msg], ConsumeConcurrentlyContext(mq))
                result = "CR_SUCCESS" if status == ConsumeConcurrentlyStatus.CONSUME_SUCCESS else "CR_LATER"
            remark = None
        except Exception as e:
            result, remark = "CR_THROW_EXCEPTION", repr(e)
        d = {"autoCommit": True, "consumeResult": result, "order": self.orderly,
             "spentTimeMills": int((time.monotonic() - start) * 1000)}
        if remark:
            d["remark"] = remark
        return d

    # -- RebalanceHooks -----------------------------------------------------------------------------------

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        pq.dropped = True
        t = self._pull_tasks.pop(mq, None)
        if t is not None:
            t.cancel()
        await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        if self.orderly and self.message_model == MessageModel.CLUSTERING:
            lock = self._queue_locks.setdefault(mq, asyncio.Lock())
            async with lock:  # do not unlock while a batch of this queue is being consumed
                await self.rebalance.unlock(mq)
        return True

    def _master_addr(self, mq: MessageQueue) -> str:
        addr = self.instance.find_broker_address_in_publish(mq.brokerName)
        if addr is None:
            addr, _ = self.instance.find_broker_address_in_subscribe(mq.brokerName)
        if addr is None:
            raise MQClientError(f"The broker[{mq.brokerName}] not exist")
        return addr

    def dispatch_pull_request(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        old = self._pull_tasks.get(mq)
        if old is not None:
            old.cancel()
        self._pull_tasks[mq] = asyncio.get_running_loop().create_task(self._pull_loop(mq, pq, offset))

    def message_queue_changed(self, topic: str, mq_all: set, divided: set) -> None:
        if self.instance is not None:
            asyncio.get_running_loop().create_task(self.instance.send_heartbeat_to_all_brokers())

    # -- pulling --------------------------------------------------------------------------------------------

    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        next_offset = offset
        try:
            while self._running and not pq.dropped:
                if pq.msg_count > self.pull_threshold_for_queue or \
                        pq.msg_size > self.pull_threshold_size_for_queue * 1024 * 1024:
                    await asyncio.sleep(PULL_TIME_DELAY_WHEN_FLOW_CONTROL)
                    continue
                if not self.orderly and pq.max_span() > self.consume_concurrently_max_span:
                    await asyncio.sleep(PULL_TIME_DELAY_WHEN_FLOW_CONTROL)
                    continue
                if self.orderly and self.message_model == MessageModel.CLUSTERING and not pq.locked:
                    await asyncio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION)
                    continue
                sub = self.rebalance.subscription_inner.get(mq.topic)
                if sub is None:
                    await asyncio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION)
                    continue
                commit_offset = 0
                if self.message_model == MessageModel.CLUSTERING:
                    commit_offset = self.offset_store.table.get(mq, 0)
                sys_flag = PullSysFlag.build(commit_offset > 0, True, self.post_subscription_when_pull)
                try:
                    result = await self.pull_api.pull_kernel(
                        mq, sub, next_offset, self.pull_batch_size, sys_flag, commit_offset,
                        BROKER_SUSPEND_MAX_TIME_MILLIS, CONSUMER_TIMEOUT_MILLIS_WHEN_SUSPEND)
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    if not pq.dropped:
                        log.info("%s: pull %s failed: %s", self.group, mq, e)
                    await asyncio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION)
                    continue
                if pq.dropped:
                    break
                pq.last_pull_timestamp = time.monotonic()
                if result.status == PullStatus.FOUND:
                    next_offset = result.next_begin_offset
                    msgs = result.msg_found_list
                    if msgs:
                        for m in msgs:
                            restore_retry_topic(m, self.group)
                        dispatch = pq.put_messages(msgs)
                        self._submit(msgs, pq, mq, dispatch)
                    elif pq.msg_count == 0:
                        self.offset_store.update_offset(mq, next_offset, True)
                elif result.status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
                    next_offset = result.next_begin_offset
                    if pq.msg_count == 0:
                        self.offset_store.update_offset(mq, next_offset, True)
                else:  # OFFSET_ILLEGAL: adopt the broker's offset, drop the queue, let rebalance recreate it
                    log.warning("%s: offset %d of %s illegal, moving to %d", self.group, next_offset, mq,
                                result.next_begin_offset)
                    pq.dropped = True
                    self.offset_store.update_offset(mq, result.next_begin_offset, False)
                    await self.offset_store.persist(mq)
                    self.rebalance.process_queue_table.pop(mq, None)
                    self._pull_tasks.pop(mq, None)
                    self.instance.rebalance_immediately()
                    return
                if self.pull_interval > 0:
                    await asyncio.sleep(self.pull_interval)
        except asyncio.CancelledError:
            pass

    # -- consuming -----------------------------------------------------------------------------------------

    def _track(self, coro) -> None:
        t = asyncio.get_running_loop().create_task(coro)
        self._consume_tasks.add(t)
        t.add_done_callback(self._consume_tasks.discard)

    def _submit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool) -> None:
        if self.orderly:
            if dispatch:
                self._track(self._consume_orderly(pq, mq))
            return
        n = self.consume_message_batch_max_size
        for i in range(0, len(msgs), n):
            self._track(self._consume_concurrently(msgs[i:i + n], pq, mq))

    async def _run_listener(self, msgs: list[MessageExt], ctx: Any, success: Any, gate: Any) -> Any:
        """The listener's status for ``msgs`` (None when it threw), traced when tracing is on; the call
        runs inside ``gate`` (the concurrency semaphore, or nothing for orderly consumption)."""
        token = self.trace.before_consume(msgs) if self.trace is not None else None
        threw = False
        async with gate:
            try:
                status = await call_listener(self.listener, self._executor, msgs, ctx)
            except Exception:
                log.exception("%s: consume of %d messages from %s threw", self.group, len(msgs), ctx.message_queue)
                status, threw = None, True
        if token is not None:
            self.trace.after_consume(token, status == success, _return_type(status, threw, success))
        return status

    async def _consume_concurrently(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        if pq.dropped:
            return
        ctx = ConsumeConcurrentlyContext(mq)
        now = str(int(time.time() * 1000))
        for m in msgs:
            m.properties[MessageConst.CONSUME_START_TIME] = now
        status = await self._run_listener(msgs, ctx, ConsumeConcurrentlyStatus.CONSUME_SUCCESS, self._sem)
        if pq.dropped:
            return
        if status == ConsumeConcurrentlyStatus.CONSUME_SUCCESS:
            ack = min(ctx.ack_index, len(msgs) - 1)
        else:
            ack = -1
        self.consumed_ok += ack + 1
        failed = msgs[ack + 1:]
        self.consumed_failed += len(failed)
        local_retry: list[MessageExt] = []
        if failed and self.message_model == MessageModel.CLUSTERING:
            for m in failed:
                if not await self.send_message_back(m, ctx.delay_level_when_next_consume, mq.brokerName):
                    m.reconsume_times += 1
                    local_retry.append(m)
        elif failed:
            for m in failed:
                log.warning("%s: BROADCASTING consume failed, drop it, %s", self.group, msg_id_of(m))
        done = [m for m in msgs if m not in local_retry] if local_retry else msgs
        offset = pq.remove_messages(done)
        if offset >= 0 and not pq.dropped:
            self.offset_store.update_offset(mq, offset, True)
        if local_retry:
            loop = asyncio.get_running_loop()
            loop.call_later(LOCAL_RETRY_DELAY, lambda: self._running and not pq.dropped and
                            self._track(self._consume_concurrently(local_retry, pq, mq)))

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> bool:
        """Return a failed message to the broker (CONSUMER_SEND_MSG_BACK), else resend it to %RETRY%group."""
        inst = self.instance
        try:
            addr = inst.find_broker_address_in_publish(broker_name) if broker_name else None
            if addr is None:
                addr = f"{msg.store_host[0]}:{msg.store_host[1]}"
            h = ConsumerSendMsgBackRequestHeader(
                offset=msg.commit_log_offset, group=self.group, delayLevel=delay_level, originMsgId=msg_id_of(msg),
                originTopic=msg.topic, unitMode=False, maxReconsumeTimes=self._max_reconsume(), bname=broker_name)
            await inst.api.consumer_send_message_back(addr, h, 5.0)
            self._retry_route_check(broker_name)
            return True
        except Exception as e:
            log.info("%s: send back of %s failed (%s), resending to the retry topic", self.group, msg_id_of(msg), e)
        try:
            props = dict(msg.properties)
            props.setdefault(MessageConst.ORIGIN_MESSAGE_ID, msg_id_of(msg))
            props.setdefault(MessageConst.RETRY_TOPIC, msg.topic)
            props[MessageConst.RECONSUME_TIME] = str(msg.reconsume_times + 1)
            props[MessageConst.MAX_RECONSUME_TIMES] = str(self._max_reconsume())
            props.pop(MessageConst.MIN_OFFSET, None)
            props.pop(MessageConst.MAX_OFFSET, None)
            props[MessageConst.DELAY] = str(3 + msg.reconsume_times)
            retry = Message(get_retry_topic(self.group), msg.body, flag=msg.flag, properties=props)
            r = await self._inner_producer.send(retry)
            self._retry_route_check(r.message_queue.brokerName)
            return True
        except Exception as e:
            log.warning("%s: resend of %s to the retry topic failed: %s", self.group, msg_id_of(msg), e)
            return False

    def _retry_route_check(self, broker_name: str | None) -> None:
        """After a send-back, make sure the retry queue it landed in is known (its route may be newer)."""
        retry = get_retry_topic(self.group)
        if self.message_model != MessageModel.CLUSTERING or self.instance is None:
            return
        known = self.rebalance.topic_subscribe_info.get(retry) or set()
        if any(mq.brokerName == broker_name for mq in known):
            return
        self._stale_routes.add(retry)
        asyncio.get_running_loop().call_later(0.5, self.instance.rebalance_immediately)

    async def _consume_orderly(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        lock = self._queue_locks.setdefault(mq, asyncio.Lock())
        async with lock:
            while self._running and not pq.dropped:
                if self.message_model == MessageModel.CLUSTERING and (not pq.locked or pq.is_lock_expired()):
                    if await self.rebalance.lock(mq):
                        pq.locked = True
                        pq.last_lock_timestamp = time.monotonic()
                    else:
                        await asyncio.sleep(0.1)
                        continue
                msgs = pq.take_messages(self.consume_message_batch_max_size)
                if not msgs:
                    return
                ctx = ConsumeOrderlyContext(mq)
                status = await self._run_listener(msgs, ctx, ConsumeOrderlyStatus.SUCCESS, nullcontext())
                if pq.dropped:
                    return
                if status == ConsumeOrderlyStatus.SUCCESS:
                    self.consumed_ok += len(msgs)
                    off = pq.commit()
                    if off >= 0:
                        self.offset_store.update_offset(mq, off, False)
                    continue
                self.consumed_failed += len(msgs)
                over = [m for m in msgs if m.reconsume_times >= self._max_reconsume()]
                if over and len(over) == len(msgs) and self.message_model == MessageModel.CLUSTERING:
                    sent = [await self.send_message_back(m, -1, mq.brokerName) for m in over]
                    if all(sent):
                        off = pq.commit()
                        if off >= 0:
                            self.offset_store.update_offset(mq, off, False)
                        continue
                for m in msgs:
                    m.reconsume_times += 1
                pq.make_message_to_consume_again(msgs)
                pause = ctx.suspend_current_queue_time_millis
                await asyncio.sleep((pause if pause >= 0 else self.suspend_current_queue_time_millis) / 1000)

    async def _lock_renewal(self) -> None:
        while True:
            await asyncio.sleep(REBALANCE_LOCK_INTERVAL)
            try:
                await self.rebalance.lock_all()
            except Exception as e:
                log.info("%s: lock renewal failed: %s", self.group, e)


def _return_type(status: Any, threw: bool, ok: Any) -> int:
    """Java's ConsumeReturnType of one listener call (a trace SubAfter's contextCode)."""
    if threw:
        return ConsumeReturnType.EXCEPTION
    if status is None:
        return ConsumeReturnType.RETURNNULL
    return ConsumeReturnType.SUCCESS if status == ok else ConsumeReturnType.FAILED

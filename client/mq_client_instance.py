"""MQClientInstance: routes, heartbeats and broker->client requests for one client id.

One instance serves the producers and consumers registered with it (Java
MQClientInstance): it polls the NameServer for every topic they use (every
30 s), sends heartbeats to every broker in those routes (every 30 s),
persists consumer offsets (every 5 s), rebalances consumers (every 20 s and
at once on NOTIFY_CONSUMER_IDS_CHANGED) and unregisters at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any, Protocol

from client.client_config import ClientConfig
from client.exceptions import MQClientError
from client.mq_client_api import MQClientAPI
from client.topic_publish_info import route_to_subscribe_info
from common.message import MessageConst, decode_message
from common.mixall import CLIENT_INNER_PRODUCER_GROUP
from remoting import RemotingClient, RemotingCommand, RemotingError, RequestCode, ResponseCode, fastjson
from remoting.body.consumer import ResetOffsetBody, ResetOffsetBodyForC
from remoting.body.heartbeat import ConsumerData, HeartbeatData, ProducerData
from remoting.body.route import MASTER_ID, TopicRouteData
from remoting.connection import Connection
from remoting.header.broker import NotifyConsumerIdsChangedRequestHeader, ResetOffsetRequestHeader
from remoting.header.client_extra import (
    CheckTransactionStateRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
)

__all__ = ["MQClientInstance", "ProducerInner", "ConsumerInner"]

log = logging.getLogger("client")

REBALANCE_INTERVAL = 20.0


class ProducerInner(Protocol):
    """What the instance needs from a producer."""

    group: str

    def publish_topics(self) -> list[str]: ...

    def update_topic_publish_info(self, topic: str, route: TopicRouteData) -> None: ...

    def check_transaction_state(self, addr: str, msg: Any, h: CheckTransactionStateRequestHeader) -> None: ...


class ConsumerInner(Protocol):
    """What the instance needs from a consumer."""

    group: str

    def subscribe_topics(self) -> list[str]: ...

    def has_subscribe_info(self, topic: str) -> bool: ...

    def update_topic_subscribe_info(self, topic: str, mqs: set) -> None: ...

    def consumer_data(self) -> ConsumerData: ...

    async def do_rebalance(self) -> None: ...

    async def persist_consumer_offset(self) -> None: ...

    async def reset_offset(self, topic: str, table: dict) -> None: ...

    def running_info(self) -> dict: ...

    async def consume_message_directly(self, msg: Any, broker_name: str | None) -> dict: ...


def _reset_offset_body(data: bytes | None) -> ResetOffsetBody:
    """RESET_CONSUMER_CLIENT_OFFSET body in either form a broker pushes (§15): the map, or the
    list form (ResetOffsetBodyForC) a broker sends to everyone when a CPP admin asked."""
    if not data:
        return ResetOffsetBody()
    tree = fastjson.loads(data)
    if isinstance(tree, dict) and isinstance(tree.get("offsetTable"), list):
        return ResetOffsetBody(offsetTable=ResetOffsetBodyForC.from_obj(tree).offsetTable)
    return ResetOffsetBody.from_obj(tree)


class MQClientInstance:
    """See the module docstring. ``await start()`` once; ``await shutdown()`` at the end."""

    def __init__(self, config: ClientConfig):
        config.change_instance_name_to_pid()
        self.config = config
        self.client_id = config.build_client_id()
        self.remoting = RemotingClient(connect_timeout=3.0, name=f"client {self.client_id}",
                                       ssl_context=config.ssl_context())
        self.api = MQClientAPI(self.remoting, config.namesrv_list(), config.mq_client_api_timeout,
                               rpc_hook=config.rpc_hook())
        self.producers: dict[str, ProducerInner] = {}
        self.consumers: dict[str, ConsumerInner] = {}
        self.topic_routes: dict[str, TopicRouteData] = {}
        self.broker_addrs: dict[str, dict[int, str]] = {}
        self._tasks: list[asyncio.Task] = []
        self._rebalance_wakeup = asyncio.Event()
        self._route_lock = asyncio.Lock()
        self._route_fetches: dict[tuple[str, str | None], asyncio.Task] = {}
        self.started = False
        #: wall-clock ms of creation (a consumer creates its instance in start()): PROP_CONSUMER_START_TIMESTAMP
        self.start_timestamp_ms = int(time.time() * 1000)
        self._register_processors()

    # -- registration ---------------------------------------------------------------------

    def register_producer(self, group: str, producer: ProducerInner) -> None:
        if group in self.producers:
            raise MQClientError(f"the producer group {group} has been created before, specify another name")
        self.producers[group] = producer

    def register_consumer(self, group: str, consumer: ConsumerInner) -> None:
        if group in self.consumers:
            raise MQClientError(f"the consumer group {group} has been created before, specify another name")
        self.consumers[group] = consumer

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        if self.started:
            return
        self.started = True
        loop = asyncio.get_running_loop()
        c = self.config
        self._tasks = [
            loop.create_task(self._every(c.poll_name_server_interval, self.update_topic_routes, first=0.01)),
            loop.create_task(self._every(c.heartbeat_broker_interval, self.send_heartbeat_to_all_brokers, first=1.0)),
            loop.create_task(self._every(c.persist_consumer_offset_interval, self.persist_all_consumer_offset,
                                         first=c.persist_consumer_offset_interval)),
            loop.create_task(self._rebalance_service()),
        ]

    async def shutdown(self) -> None:
        """Persist offsets, unregister from every broker and close connections."""
        if not self.started:
            await self.remoting.close()
            return
        self.started = False
        for t in self._tasks:
            t.cancel()
        # Bounded: Python 3.11's wait_for can swallow a cancel that lands as its inner
        # wait completes, so a loop could survive cancel(); it then exits on `started`.
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        fetches = list(self._route_fetches.values())
        for t in fetches:  # shielded from their callers' cancellation: stop them here
            t.cancel()
        if fetches:
            await asyncio.wait(fetches, timeout=5)
        await self.unregister_all()
        await self.remoting.close()

    async def _every(self, period: float, fn, first: float) -> None:
        await asyncio.sleep(first)
        while self.started:
            try:
                await fn()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: periodic %s failed", self.client_id, getattr(fn, "__name__", fn))
            await asyncio.sleep(period)

    async def _rebalance_service(self) -> None:
        while self.started:
            try:
                await asyncio.wait_for(self._rebalance_wakeup.wait(), REBALANCE_INTERVAL)
            except TimeoutError:
                pass
            if not self.started:
                return
            self._rebalance_wakeup.clear()
            await self.do_rebalance()

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.append(task)
        task.add_done_callback(lambda t: (self._tasks.remove(t) if t in self._tasks else None,
                                          t.cancelled() or t.exception()))

    def rebalance_immediately(self) -> None:
        """Wake the rebalance service now (NOTIFY_CONSUMER_IDS_CHANGED, new consumer)."""
        self._rebalance_wakeup.set()

    async def do_rebalance(self) -> None:
        for c in list(self.consumers.values()):
            try:
                await c.do_rebalance()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: rebalance of %s failed", self.client_id, c.group)

    # -- routes -----------------------------------------------------------------------------------

    async def update_topic_routes(self) -> None:
        topics: set[str] = set()
        for c in self.consumers.values():
            topics.update(c.subscribe_topics())
        for p in self.producers.values():
            topics.update(p.publish_topics())
        for t in topics:
            try:
                await self.update_topic_route_from_namesrv(t)
            except (MQClientError, RemotingError) as e:
                log.warning("%s: route of %s not updated: %s", self.client_id, t, e)

    async def update_topic_route_from_namesrv(self, topic: str, default_topic: str | None = None,
                                              default_queue_nums: int = 4) -> bool:
        """Fetch and apply ``topic``'s route; with ``default_topic`` use TBW102's queues capped (auto-create).

        Concurrent calls for the same topic share one NameServer request.
        """
        key = (topic, default_topic)
        fetch = self._route_fetches.get(key)
        if fetch is None:
            fetch = asyncio.get_running_loop().create_task(self._update_route(topic, default_topic, default_queue_nums))
            self._route_fetches[key] = fetch
            fetch.add_done_callback(lambda t: (self._route_fetches.pop(key, None), t.cancelled() or t.exception()))
        # shielded: one caller's cancellation must not fail the others; the done callback retrieves
        # the outcome for when every caller is gone (a short-lived producer shut down meanwhile)
        return await asyncio.shield(fetch)

    async def _update_route(self, topic: str, default_topic: str | None, default_queue_nums: int) -> bool:
        async with self._route_lock:
            if default_topic is not None:
                route = await self.api.get_topic_route(default_topic, self.config.mq_client_api_timeout)
                if route is not None:
                    for qd in route.queueDatas:
                        n = min(default_queue_nums, qd.readQueueNums)
                        qd.readQueueNums = n
                        qd.writeQueueNums = n
            else:
                route = await self.api.get_topic_route(topic, self.config.mq_client_api_timeout)
            if route is None:
                return False
            old = self.topic_routes.get(topic)
            changed = old is None or old.to_obj() != route.to_obj()
            if not changed:
                # a consumer that subscribed after the route was cached still needs its queues
                changed = any(topic in c.subscribe_topics() and not c.has_subscribe_info(topic)
                              for c in self.consumers.values())
            if changed:
                new_broker = False
                for bd in route.brokerDatas:
                    if self.broker_addrs.get(bd.brokerName) != bd.brokerAddrs:
                        new_broker = True
                    self.broker_addrs[bd.brokerName] = dict(bd.brokerAddrs)
                if new_broker and self.started:
                    # register with brokers we just learned about now rather than at the next 30 s beat
                    self._spawn(self.send_heartbeat_to_all_brokers())
                for p in self.producers.values():
                    p.update_topic_publish_info(topic, route)
                subs = route_to_subscribe_info(topic, route)
                for c in self.consumers.values():
                    c.update_topic_subscribe_info(topic, subs)
                self.topic_routes[topic] = route
            return True

    def find_broker_address_in_publish(self, broker_name: str) -> str | None:
        return self.broker_addrs.get(broker_name, {}).get(MASTER_ID)

    def find_broker_address_in_subscribe(self, broker_name: str, broker_id: int = MASTER_ID,
                                         only_this: bool = False) -> tuple[str | None, bool]:
        """(address, is_slave) of ``broker_id`` in ``broker_name``, else any replica unless ``only_this``."""
        addrs = self.broker_addrs.get(broker_name) or {}
        addr = addrs.get(broker_id)
        if addr is None and not only_this and addrs:
            bid, addr = sorted(addrs.items())[0]
            return addr, bid != MASTER_ID
        return addr, broker_id != MASTER_ID

    def find_broker_addr_by_topic(self, topic: str) -> str | None:
        route = self.topic_routes.get(topic)
        if route is None or not route.brokerDatas:
            return None
        bd = random.choice(route.brokerDatas)
        return bd.select_broker_addr()

    async def find_consumer_id_list(self, topic: str, group: str) -> list[str]:
        addr = self.find_broker_addr_by_topic(topic)
        if addr is None:
            await self.update_topic_route_from_namesrv(topic)
            addr = self.find_broker_addr_by_topic(topic)
        if addr is None:
            return []
        return await self.api.get_consumer_id_list(addr, group)

    # -- heartbeats -------------------------------------------------------------------------------

    def heartbeat_data(self) -> HeartbeatData:
        hb = HeartbeatData(clientID=self.client_id)
        for g in self.producers:
            hb.producerDataSet.append(ProducerData(groupName=g))
        if self.producers:
            hb.producerDataSet.append(ProducerData(groupName=CLIENT_INNER_PRODUCER_GROUP))
        for c in self.consumers.values():
            hb.consumerDataSet.append(c.consumer_data())
        return hb

    async def send_heartbeat_to_all_brokers(self) -> None:
        hb = self.heartbeat_data()
        if not hb.producerDataSet and not hb.consumerDataSet:
            return
        only_masters = not hb.consumerDataSet
        sends = []
        for addrs in list(self.broker_addrs.values()):
            for bid, addr in addrs.items():
                if only_masters and bid != MASTER_ID:
                    continue
                sends.append(self._heartbeat_one(addr, hb))
        await asyncio.gather(*sends)

    async def _heartbeat_one(self, addr: str, hb: HeartbeatData) -> None:
        try:
            await self.api.send_heartbeat(addr, hb)
        except Exception as e:  # a dead broker must not stop heartbeats to the others
            log.info("%s: heartbeat to %s failed: %s", self.client_id, addr, e)

    async def unregister_all(self) -> None:
        calls = []
        for addrs in list(self.broker_addrs.values()):
            for addr in addrs.values():
                for g in self.producers:
                    calls.append(self.api.unregister_client(addr, self.client_id, g, None))
                for g in self.consumers:
                    calls.append(self.api.unregister_client(addr, self.client_id, None, g))
        results = await asyncio.gather(*calls, return_exceptions=True)
        for r in results:
            if isinstance(r, Exception):
                log.info("%s: unregister failed: %s", self.client_id, r)

    async def persist_all_consumer_offset(self) -> None:
        for c in list(self.consumers.values()):
            await c.persist_consumer_offset()

    # -- broker -> client requests ----------------------------------------------------------------

    def _register_processors(self) -> None:
        r = self.remoting
        r.register_processor(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_notify_consumer_ids_changed)
        r.register_processor(RequestCode.CHECK_TRANSACTION_STATE, self._on_check_transaction_state)
        r.register_processor(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._on_reset_offset)
        r.register_processor(RequestCode.GET_CONSUMER_RUNNING_INFO, self._on_running_info)
        r.register_processor(RequestCode.CONSUME_MESSAGE_DIRECTLY, self._on_consume_directly)
        r.register_processor(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, self._on_get_consumer_status)

    def _on_notify_consumer_ids_changed(self, cmd: RemotingCommand, conn: Connection) -> None:
        try:
            h = cmd.decode_header(NotifyConsumerIdsChangedRequestHeader)
            log.info("%s: consumer ids of %s changed (from %s)", self.client_id, h.consumerGroup, conn.remote_addr)
        except ValueError:
            pass
        self.rebalance_immediately()
        return None

    def _on_check_transaction_state(self, cmd: RemotingCommand, conn: Connection) -> None:
        try:
            h = cmd.decode_header(CheckTransactionStateRequestHeader)
            msg = decode_message(cmd.body or b"")
        except ValueError as e:
            log.warning("%s: bad CHECK_TRANSACTION_STATE: %s", self.client_id, e)
            return None
        uniq = msg.properties.get(MessageConst.UNIQ_KEY)
        if uniq:
            h.msgId = uniq
        group = msg.properties.get(MessageConst.PRODUCER_GROUP)
        producer = self.producers.get(group) if group else None
        if producer is None:
            log.warning("%s: transaction check for unknown producer group %s", self.client_id, group)
            return None
        addr = conn.attrs.get("addr") or conn.remote_addr
        producer.check_transaction_state(addr, msg, h)
        return None

    async def _on_reset_offset(self, cmd: RemotingCommand, conn: Connection) -> None:
        try:
            h = cmd.decode_header(ResetOffsetRequestHeader)
            body = _reset_offset_body(cmd.body)
        except ValueError as e:
            log.warning("%s: bad RESET_CONSUMER_CLIENT_OFFSET: %s", self.client_id, e)
            return None
        c = self.consumers.get(h.group)
        if c is not None:
            await c.reset_offset(h.topic, body.offsetTable)
        return None

    def _on_get_consumer_status(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        """GET_CONSUMER_STATUS_FROM_CLIENT (§15): the push consumer's offsets of ``topic`` as
        GetConsumerStatusBody; other consumer kinds answer an empty table, as the Java client does."""
        h = cmd.decode_header(GetConsumerStatusRequestHeader)
        c = self.consumers.get(h.group)
        status = getattr(c, "consumer_status", None)  # only push consumers report offsets
        table = {mq.key(): off for mq, off in status(h.topic).items()} if status is not None else {}
        body = fastjson.dumps({"consumerTable": {}, "messageQueueTable": table})
        return cmd.response_to(ResponseCode.SUCCESS, body=body)

    def _on_running_info(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = cmd.decode_header(GetConsumerRunningInfoRequestHeader)
        c = self.consumers.get(h.consumerGroup)
        if c is None:
            return cmd.response_to(ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{h.consumerGroup}> not exist in this consumer")
        info = c.running_info()
        # Keys Java admin tools read (ConsumerRunningInfo.PROP_*): PROP_CONSUME_TYPE is parsed with
        # ConsumeType.valueOf and PROP_CONSUMER_START_TIMESTAMP with Long.parseLong, so both must be there.
        props = info.setdefault("properties", {})
        props.setdefault("PROP_CONSUME_TYPE", props.get("consumeType", "CONSUME_PASSIVELY"))
        props.setdefault("PROP_CONSUMER_START_TIMESTAMP", str(self.start_timestamp_ms))
        props["PROP_NAMESERVER_ADDR"] = ";".join(self.api.namesrv_addrs)
        props["PROP_CLIENT_VERSION"] = "V4_9_7"
        return cmd.response_to(ResponseCode.SUCCESS, body=fastjson.dumps(info))

    async def _on_consume_directly(self, cmd: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = cmd.decode_header(ConsumeMessageDirectlyResultRequestHeader)
        c = self.consumers.get(h.consumerGroup)
        if c is None:
            return cmd.response_to(ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{h.consumerGroup}> not exist in this consumer")
        try:
            msg = decode_message(cmd.body or b"")
        except ValueError as e:
            return cmd.response_to(ResponseCode.SYSTEM_ERROR, f"bad message: {e}")
        result = await c.consume_message_directly(msg, h.brokerName)
        return cmd.response_to(ResponseCode.SUCCESS, body=fastjson.dumps(result))


"""TopicMetadata: what the driver asks the cluster while planning (queues, offsets, group commits).

Blocking calls over the client's :class:`MQClientAPI`, each run to the end on
a private event loop in the calling thread (the planner and the streaming
source's runner are single-threaded Python processes). Failures become
:class:`ConnectorError` naming the option or queue concerned.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

from client.exceptions import MQBrokerError, MQClientError
from client.mq_client_api import MQClientAPI
from common.mixall import MASTER_ID
from common.perm import is_readable
from connectors.spark.errors import ConnectorError
from connectors.spark.offsets import QueueKey
from remoting import RemotingClient, RemotingError, new_event_loop
from remoting.body.consumer import MessageQueue

__all__ = ["TopicMetadata", "QueueInfo"]

log = logging.getLogger("connectors.spark")

T = TypeVar("T")

QueueInfo = tuple[QueueKey, str]  # ((topic, broker, queueId), master address)


def _is_system_topic(topic: str) -> bool:
    return topic.startswith(("%RETRY%", "%DLQ%", "rmq_sys_", "RMQ_SYS_")) or topic in (
        "TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC")


class TopicMetadata:
    """Routes, queue offsets and consumer offsets, read from the NameServer and the brokers."""

    def __init__(self, name_server: str, timeout: float = 5.0):
        self.name_server = name_server
        self.timeout = timeout
        self._loop = new_event_loop()
        self._remoting: RemotingClient | None = None
        self._api: MQClientAPI | None = None
        self._addrs: dict[str, str] = {}  # brokerName -> master address

    @property
    def api(self) -> MQClientAPI:
        if self._api is None:
            self._remoting = RemotingClient(connect_timeout=self.timeout, name="spark-metadata")
            addrs = [a.strip() for a in self.name_server.replace(",", ";").split(";") if a.strip()]
            self._api = MQClientAPI(self._remoting, addrs, self.timeout)
        return self._api

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(asyncio.wait_for(coro, self.timeout * 3))

    def close(self) -> None:
        if self._remoting is not None:
            self._loop.run_until_complete(self._remoting.close())
            self._remoting = self._api = None
        self._loop.close()

    # -- NameServer -------------------------------------------------------------------------

    def _namesrv_error(self, e: Exception) -> ConnectorError:
        return ConnectorError(f"option nameServer: {self.name_server} unreachable or failing: {e}")

    def topic_list(self) -> list[str]:
        try:
            topics = self._run(self.api.get_topic_list())
        except (MQClientError, RemotingError, MQBrokerError, TimeoutError, OSError) as e:
            raise self._namesrv_error(e) from e
        return sorted(topics.topicList)

    def topics_matching(self, pattern: str) -> list[str]:
        rx = re.compile(pattern)
        return [t for t in self.topic_list() if not _is_system_topic(t) and rx.fullmatch(t)]

    def queues(self, topic: str, *, option: str = "subscribe", missing_ok: bool = False) -> list[QueueInfo]:
        """Readable queues of ``topic`` on master brokers; ConnectorError naming ``option`` when unknown."""
        try:
            route = self._run(self.api.get_topic_route(topic))
        except (MQClientError, RemotingError, MQBrokerError, TimeoutError, OSError) as e:
            raise self._namesrv_error(e) from e
        if route is None:
            if missing_ok:
                return []
            raise ConnectorError(f"option {option}: topic {topic!r} does not exist on NameServer {self.name_server}")
        for bd in route.brokerDatas:
            master = bd.brokerAddrs.get(MASTER_ID)
            if master:
                self._addrs[bd.brokerName] = master
        out: list[QueueInfo] = []
        for qd in sorted(route.queueDatas, key=lambda q: q.brokerName):
            addr = self._addrs.get(qd.brokerName)
            if addr is None or not is_readable(qd.perm):
                continue
            out.extend(((topic, qd.brokerName, q), addr) for q in range(qd.readQueueNums))
        return out

    def broker_addr(self, broker: str) -> str | None:
        return self._addrs.get(broker)

    # -- brokers ------------------------------------------------------------------------------

    def _per_queue(self, keys: Iterable[QueueKey], call) -> dict[QueueKey, int]:
        keys = list(keys)
        api = self.api

        async def one(k: QueueKey) -> int:
            addr = self._addrs.get(k[1])
            if addr is None:
                raise ConnectorError(f"queue {k[0]}/{k[1]}/{k[2]}: broker {k[1]} has no master in the route")
            return await call(api, addr, MessageQueue(k[0], k[1], k[2]))

        async def all_() -> list[int]:
            return await asyncio.gather(*(one(k) for k in keys))

        try:
            values = self._run(all_())
        except (MQClientError, RemotingError, TimeoutError, OSError) as e:
            raise ConnectorError(f"brokers of {sorted({k[1] for k in keys})} unreachable: {e}") from e
        except MQBrokerError as e:
            raise ConnectorError(f"broker {e.addr} refused an offset query: {e}", e.code) from e
        return dict(zip(keys, values, strict=True))

    def min_offsets(self, keys: Iterable[QueueKey]) -> dict[QueueKey, int]:
        return self._per_queue(keys, lambda api, addr, mq: api.get_min_offset(addr, mq))

    def max_offsets(self, keys: Iterable[QueueKey]) -> dict[QueueKey, int]:
        return self._per_queue(keys, lambda api, addr, mq: api.get_max_offset(addr, mq))

    def offsets_for_time(self, keys: Iterable[QueueKey], timestamp: int) -> dict[QueueKey, int]:
        """SEARCH_OFFSET_BY_TIMESTAMP: the first offset stored at or after ``timestamp`` (ms)."""
        return self._per_queue(keys, lambda api, addr, mq: api.search_offset(addr, mq, timestamp))

    def commit_group_offsets(self, group: str, offsets: dict[QueueKey, int]) -> None:
        """Write ``offsets`` as ``group``'s consumer offsets (UPDATE_CONSUMER_OFFSET, acknowledged)."""
        api = self.api

        async def one(k: QueueKey, off: int) -> None:
            addr = self._addrs.get(k[1])
            if addr is not None:
                await api.update_consumer_offset(addr, group, MessageQueue(k[0], k[1], k[2]), off)

        async def all_() -> None:
            await asyncio.gather(*(one(k, v) for k, v in offsets.items()))

        try:
            self._run(all_())
        except (MQClientError, MQBrokerError, RemotingError, TimeoutError, OSError) as e:
            # the batch is committed in Spark's checkpoint already; the group view catches up next time
            log.warning("committing offsets of group %s failed: %s", group, e)

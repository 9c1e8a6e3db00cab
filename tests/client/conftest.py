"""Client test fixtures: one NameServer + two brokers shared per module, or a cluster of one's own."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from client.admin import MQAdmin
from remoting.body.topic_config import TopicConfig
from tests.client.cluster import Cluster
from tests.support import async_wait_until

_names = itertools.count()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """NameServer + brokers a and b (autoCreateTopicEnable on), shared by a module's tests."""
    c = Cluster(tmp_path_factory.mktemp("cluster"), brokers=2)
    yield c
    c.stop()


@pytest.fixture
def own_cluster(tmp_path):
    """Start a cluster of the test's own: ``own_cluster(brokers=1, namesrvs=1, **broker_props)``."""
    made: list[Cluster] = []

    def make(**kw) -> Cluster:
        c = Cluster(tmp_path / f"c{len(made)}", **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()


def unique(prefix: str) -> str:
    """A fresh topic/group name (tests of a module share the brokers)."""
    return f"{prefix}_{next(_names)}"


async def create_topic(ns: str, topic: str, brokers, queues: int = 4) -> None:
    """UPDATE_AND_CREATE_TOPIC on each broker, then wait until the NameServer routes every broker."""
    async with MQAdmin(ns) as admin:
        for b in brokers:
            await admin.create_topic(b.addr, TopicConfig(topicName=topic, readQueueNums=queues, writeQueueNums=queues))

        async def routed():
            try:
                r = await admin.topic_route(topic)
            except Exception:
                return False
            return len(r.queueDatas) == len(brokers)

        await async_wait_until(routed, 15, what=f"route of {topic}")


async def wait_for(pred, timeout: float = 20.0, what: str = ""):
    return await async_wait_until(pred, timeout, 0.02, what)


__all__ = ["unique", "create_topic", "wait_for", "asyncio"]

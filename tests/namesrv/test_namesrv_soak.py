"""Soak (on demand: ``pytest -m soak tests/namesrv``): broker churn against a real NameServer.

Brokers connect, register (sometimes compressed, sometimes with a new
DataVersion), re-register and disconnect or unregister at random for a bounded
time while readers fetch routes; afterwards the tables must be consistent and
match what is still connected.
"""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from remoting.body.cluster import ClusterInfo, TopicList
from remoting.body.route import TopicRouteData
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.header.namesrv import GetRouteInfoRequestHeader, UnRegisterBrokerRequestHeader
from tests.namesrv.test_namesrv_process import register_cmd

pytestmark = [pytest.mark.soak, pytest.mark.timeout(180)]

SECONDS = 20.0
BROKERS = 24


async def test_broker_churn_keeps_the_tables_consistent(namesrv_factory):
    ns = namesrv_factory(scanNotActiveBrokerInterval=200, brokerChannelExpiredTime=60_000)
    rnd = random.Random(1234)
    deadline = time.monotonic() + SECONDS
    live: dict[int, RemotingClient] = {}
    ops = 0

    async def churn() -> None:
        nonlocal ops
        while time.monotonic() < deadline and ops < 200_000:
            i = rnd.randrange(BROKERS)
            action = rnd.random()
            client = live.get(i)
            name, addr = f"b{i}", f"127.0.2.{i}:10911"
            if client is None or action < 0.6:
                client = client or RemotingClient()
                live[i] = client
                topics = [("Shared", 4), (f"Own{i}", 1)] + [
                    (f"Extra{i}_{k}", 1) for k in range(rnd.randrange(3))
                ]
                cmd = register_cmd(
                    name=name,
                    addr=addr,
                    cluster=f"C{i % 3}",
                    topics=tuple(topics),
                    dv=(1, rnd.randrange(3)),
                    compressed=rnd.random() < 0.3,
                )
                assert (await client.invoke(ns.addr, cmd, timeout=10)).code == ResponseCode.SUCCESS
            elif action < 0.8:
                del live[i]
                await client.close()
            else:
                h = UnRegisterBrokerRequestHeader(name, addr, f"C{i % 3}", 0)
                await client.invoke(ns.addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, h))
                del live[i]
                await client.close()
            ops += 1

    async def read(reader: RemotingClient) -> None:
        while time.monotonic() < deadline:
            cmd = RemotingCommand.request(
                RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader("Shared")
            )
            resp = await reader.invoke(ns.addr, cmd, timeout=10)
            assert resp.code in (ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST)
            if resp.code == ResponseCode.SUCCESS:
                route = TopicRouteData.from_json(resp.body)
                assert {q.brokerName for q in route.queueDatas} >= {b.brokerName for b in route.brokerDatas}

    async with RemotingClient() as reader:
        await asyncio.gather(churn(), read(reader), read(reader))

        # Let disconnects settle: the route must list exactly the brokers still connected.
        expected = {f"b{i}" for i in live}

        async def settled():
            cmd = RemotingCommand.request(
                RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader("Shared")
            )
            resp = await reader.invoke(ns.addr, cmd)
            names = (
                set()
                if resp.code
                else {b.brokerName for b in TopicRouteData.from_json(resp.body).brokerDatas}
            )
            return names == expected

        from tests.support import async_wait_until

        await async_wait_until(settled, timeout=10, what="route matching connected brokers")
        ci = ClusterInfo.from_json(
            (await reader.invoke(ns.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))).body
        )
        assert set(ci.brokerAddrTable) == expected
        assert {n for names in ci.clusterAddrTable.values() for n in names} == expected
        topics = TopicList.from_json(
            (
                await reader.invoke(
                    ns.addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
                )
            ).body
        ).topicList
        for t in topics:  # every listed topic resolves to live brokers only
            cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(t))
            route = TopicRouteData.from_json((await reader.invoke(ns.addr, cmd)).body)
            assert {b.brokerName for b in route.brokerDatas} <= expected
    for c in live.values():
        await c.close()
    print(f"soak: {ops} broker operations in {SECONDS:.0f}s, {len(expected)} brokers left")

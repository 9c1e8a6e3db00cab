"""EmbeddedCluster: real NameServer and brokers in the test process, on loopback sockets and real files."""

from __future__ import annotations

import asyncio
import socket
import urllib.request

import pytest

from client import ConsumeFromWhere, Message, Producer
from client.blocking import BlockingLitePullConsumer, BlockingProducer
from client.client_config import ClientConfig
from client.lite_pull_consumer import LitePullConsumer
from common.config import ConfigError
from embedded import EmbeddedCluster
from tests.support import async_wait_until, port_open, wait_until


async def _send(addr: str, topic: str, bodies: list[bytes]) -> None:
    async with Producer("emb_pg", addr) as p:
        for body in bodies:
            r = await p.send(Message(topic, body))
            assert r.send_status.name == "SEND_OK"


async def _read_all(addr: str, topic: str, group: str, n: int) -> list[bytes]:
    c = LitePullConsumer(group, addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    c.subscribe(topic)
    got: list[bytes] = []
    await c.start()
    try:
        async def enough():
            got.extend(m.body for m in await c.poll(0.2))
            return len(got) >= n
        await async_wait_until(enough, 20, what=f"{n} messages of {topic}")
    finally:
        await c.shutdown()
    return got


async def test_send_consume_restart_keeps_messages():
    bodies = [f"m{i}".encode() for i in range(20)]
    async with EmbeddedCluster() as cluster:
        (b,) = cluster.brokers
        assert b.running and b.is_master and cluster.leader() is b
        await _send(cluster.namesrv_addr, "EmbTopic", bodies)
        assert sorted(await _read_all(cluster.namesrv_addr, "EmbTopic", "emb_cg1", 20)) == sorted(bodies)
        await cluster.kill(b)
        assert not b.running and not port_open(b.port)
        await cluster.restart(b)
        assert b.running
        # the store came back: a new group reads every message again
        assert sorted(await _read_all(cluster.namesrv_addr, "EmbTopic", "emb_cg2", 20)) == sorted(bodies)
        root = cluster.root
    assert not root.exists()  # its own temp dir is removed at exit
    assert not port_open(b.port)


async def test_two_clusters_side_by_side_do_not_interfere():
    prom = {"metricsExporterType": "PROM"}
    async with EmbeddedCluster(**prom) as one, EmbeddedCluster(cluster_name="Other", **prom) as two:
        ports = {one.namesrv.port, two.namesrv.port, *(b.port for b in one.brokers + two.brokers)}
        assert len(ports) == 4 and one.root != two.root
        await _send(one.namesrv_addr, "OnlyInOne", [b"x"])
        b_one, b_two = one.brokers[0].broker, two.brokers[0].broker
        assert b_one.topic_config_manager.select_topic_config("OnlyInOne") is not None
        assert b_two.topic_config_manager.select_topic_config("OnlyInOne") is None
        routes_two = two.namesrv.route_info_manager.get_all_cluster_info()
        assert "Other" in str(routes_two) and "DefaultCluster" not in str(routes_two)
        # each broker has its own metrics registry on its own port: the topic shows in one only
        m_one, m_two = one.brokers[0].metrics_port, two.brokers[0].metrics_port
        assert m_one and m_two and m_one != m_two
        async def seen_in_one():  # the metrics refresh on a timer: wait for the topic to show
            return 'topic="OnlyInOne"' in await asyncio.to_thread(_scrape, m_one)

        await async_wait_until(seen_in_one, 20, 0.2, "the topic in the first cluster's metrics")
        assert 'topic="OnlyInOne"' not in await asyncio.to_thread(_scrape, m_two)


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"flushDiskType": "SOMETIMES"}, "flushDiskType"),
        ({"noSuchKeyAnywhere": "1"}, "noSuchKeyAnywhere"),
        ({"listenPort": 1}, "listenPort"),  # the cluster owns ports
        ({"brokerPermission": "x\nstorePathRootDir=/"}, "line break"),
    ],
)
async def test_bad_config_names_the_key_and_leaves_nothing_running(config, key):
    if key in ("listenPort", "line break"):  # refused as the cluster is made
        with pytest.raises(ConfigError, match=key):
            EmbeddedCluster(**config)
        return
    cluster = EmbeddedCluster(**config)
    with pytest.raises(ConfigError, match=key):
        await cluster.start()
    assert cluster.namesrv is None and all(not b.running for b in cluster.brokers)
    assert all(not port_open(b.port) for b in cluster.brokers)
    assert not cluster.root.exists()


def test_blocking_form_dledger_failover():
    with EmbeddedCluster(dledger_group=3) as cluster:
        assert len(cluster.brokers) == 3
        leader = cluster.leader()
        assert leader is not None and leader.dledger_role == "leader"
        # routes refreshed often: the send after the failover must find the new master soon
        cfg = ClientConfig(namesrv_addr=cluster.namesrv_addr, poll_name_server_interval=0.2)
        with BlockingProducer("emb_bpg", config=cfg) as p:
            assert p.send(Message("EmbRaft", b"before")).send_status.name == "SEND_OK"
            cluster.kill(leader)
            new = cluster.wait_leader(timeout=15)
            assert new is not leader and new.dledger_role == "leader"
            wait_until(lambda: _sends(p), 20, what="a send through the new leader")
        cluster.restart(leader)
        wait_until(lambda: leader.dledger_role == "follower", 15, what="the old leader rejoins as follower")
        c = BlockingLitePullConsumer("emb_bcg", cluster.namesrv_addr,
                                     consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        c.subscribe("EmbRaft")
        got: list[bytes] = []
        with c:
            wait_until(lambda: got.extend(m.body for m in c.poll(0.2)) or {b"before", b"after"} <= set(got), 20)


def _sends(p: BlockingProducer) -> bool:
    try:
        return p.send(Message("EmbRaft", b"after")).send_status.name == "SEND_OK"
    except Exception:  # noqa: BLE001 - routes still moving to the new leader
        return False


def test_ports_are_loopback_only():
    with EmbeddedCluster() as cluster:
        host, port = cluster.namesrv_addr.split(":")
        assert host == "127.0.0.1"
        with socket.create_connection((host, int(port)), timeout=1):
            pass

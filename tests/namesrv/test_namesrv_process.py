"""bin/mqnamesrv as a real process, driven over loopback with our RemotingClient."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import time
import zlib

import orjson
import pytest

from remoting import fastjson
from remoting.body.cluster import ClusterInfo, TopicList
from remoting.body.register_broker import RegisterBrokerBody
from remoting.body.route import TopicRouteData
from remoting.body.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode, SerializeType
from remoting.command import RemotingCommand
from remoting.header.namesrv import (
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    RegisterBrokerRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)
from tests.support import BIN, ROOT, async_wait_until, free_port

pytestmark = pytest.mark.timeout(60)


def register_cmd(
    name="broker-a",
    bid=0,
    addr="127.0.0.1:10911",
    cluster="C1",
    topics=(("TopicA", 4),),
    dv=(1, 1),
    *,
    compressed=False,
    crc=True,
    stype=SerializeType.JSON,
):
    table = {t: TopicConfig(t, n, n, 6) for t, n in topics}
    body = RegisterBrokerBody(TopicConfigSerializeWrapper(table, DataVersion(*dv)), []).encode(compressed)
    host = addr.rsplit(":", 1)[0]
    ha = f"{host}:{int(addr.rsplit(':', 1)[1]) + 1}"
    h = RegisterBrokerRequestHeader(
        name, addr, cluster, ha, bid, compressed, zlib.crc32(body) & 0x7FFFFFFF if crc else 0
    )
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, h, body, serialize_type=stype)


def route_cmd(topic, *, version=407, accept_std=None, stype=SerializeType.JSON):
    cmd = RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic, accept_std), serialize_type=stype
    )
    cmd.version = version
    return cmd


async def get_route(client, ns, topic):
    return await client.invoke(ns.addr, route_cmd(topic))


async def test_register_and_route_in_both_serialize_types_and_json_styles(namesrv):
    async with RemotingClient() as client:
        for stype in (SerializeType.JSON, SerializeType.ROCKETMQ):
            resp = await client.invoke(namesrv.addr, register_cmd(stype=stype, compressed=stype == 1))
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            assert resp.serialize_type == stype
        for stype in (SerializeType.JSON, SerializeType.ROCKETMQ):
            # >= V4_9_4: standard JSON, which the stdlib parses
            resp = await client.invoke(namesrv.addr, route_cmd("TopicA", version=407, stype=stype))
            assert resp.code == ResponseCode.SUCCESS and resp.serialize_type == stype
            route = json.loads(resp.body)
            assert route["brokerDatas"] == [
                {"brokerAddrs": {"0": "127.0.0.1:10911"}, "brokerName": "broker-a", "cluster": "C1"}
            ]
            assert route["queueDatas"] == [
                {
                    "brokerName": "broker-a",
                    "perm": 6,
                    "readQueueNums": 4,
                    "topicSysFlag": 0,
                    "writeQueueNums": 4,
                }
            ]
            # older clients get fastjson's default style: bare numeric keys
            old = await client.invoke(namesrv.addr, route_cmd("TopicA", version=400, stype=stype))
            assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in old.body
            with pytest.raises(json.JSONDecodeError):
                json.loads(old.body)
            assert TopicRouteData.from_json(old.body) == TopicRouteData.from_json(resp.body)
            # ... unless they ask for standard JSON
            asked = await client.invoke(
                namesrv.addr, route_cmd("TopicA", version=400, accept_std=True, stype=stype)
            )
            assert asked.body == resp.body


async def test_slave_learns_master_and_ha_address(namesrv):
    async with RemotingClient() as client:
        await client.invoke(namesrv.addr, register_cmd())
        resp = await client.invoke(namesrv.addr, register_cmd(bid=1, addr="127.0.0.2:10911"))
        assert resp.code == ResponseCode.SUCCESS
        assert resp.ext_fields["masterAddr"] == "127.0.0.1:10911"
        assert resp.ext_fields["haServerAddr"] == "127.0.0.1:10912"
        route = TopicRouteData.from_json((await get_route(client, namesrv, "TopicA")).body)
        assert route.brokerDatas[0].brokerAddrs == {0: "127.0.0.1:10911", 1: "127.0.0.2:10911"}


async def test_crc_mismatch_and_garbage_body_are_refused_and_lose_nothing(namesrv):
    async with RemotingClient() as client:
        await client.invoke(namesrv.addr, register_cmd())
        bad = register_cmd(topics=(("Evil", 1),), dv=(9, 9))
        bad.ext_fields["bodyCrc32"] = "12345"
        resp = await client.invoke(namesrv.addr, bad)
        assert (resp.code, resp.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
        garbage = register_cmd(compressed=True, crc=False, dv=(9, 9))
        garbage.body = b"\x78\x9c garbage"
        resp = await client.invoke(namesrv.addr, garbage)
        assert resp.code == ResponseCode.SYSTEM_ERROR and "register broker body" in resp.remark
        missing = register_cmd()
        del missing.ext_fields["brokerName"]
        resp = await client.invoke(namesrv.addr, missing)
        assert resp.code == ResponseCode.SYSTEM_ERROR and "brokerName" in resp.remark
        assert (await get_route(client, namesrv, "TopicA")).code == ResponseCode.SUCCESS
        assert (await get_route(client, namesrv, "Evil")).code == ResponseCode.TOPIC_NOT_EXIST


async def test_unknown_topic_gets_topic_not_exist_with_the_java_remark(namesrv):
    async with RemotingClient() as client:
        resp = await get_route(client, namesrv, "NoSuchTopic")
        assert resp.code == ResponseCode.TOPIC_NOT_EXIST
        assert resp.remark == (
            "No topic route info in name server for the topic: NoSuchTopic"
            "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
        )
        resp = await client.invoke(namesrv.addr, RemotingCommand.request(9999))
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_unregister_removes_the_broker(namesrv):
    async with RemotingClient() as client:
        await client.invoke(namesrv.addr, register_cmd())
        h = UnRegisterBrokerRequestHeader("broker-a", "127.0.0.1:10911", "C1", 0)
        resp = await client.invoke(namesrv.addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, h))
        assert resp.code == ResponseCode.SUCCESS
        assert (await get_route(client, namesrv, "TopicA")).code == ResponseCode.TOPIC_NOT_EXIST
        ci = ClusterInfo.from_json(
            (
                await client.invoke(
                    namesrv.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
                )
            ).body
        )
        assert ci.brokerAddrTable == {} and ci.clusterAddrTable == {}


async def test_silent_broker_expires_and_its_connection_is_closed(namesrv_factory):
    ns = namesrv_factory(scanNotActiveBrokerInterval=100, brokerChannelExpiredTime=600)
    async with RemotingClient() as broker, RemotingClient() as admin:
        assert (await broker.invoke(ns.addr, register_cmd())).code == ResponseCode.SUCCESS
        conn = await broker.get_connection(ns.addr)
        assert (await get_route(admin, ns, "TopicA")).code == ResponseCode.SUCCESS

        async def gone():
            return (await get_route(admin, ns, "TopicA")).code == ResponseCode.TOPIC_NOT_EXIST

        await async_wait_until(gone, timeout=10, interval=0.05, what="broker expiry")
        await async_wait_until(lambda: conn.closed, timeout=5, what="expired channel closed by the namesrv")


async def test_query_data_version_keeps_a_broker_alive(namesrv_factory):
    ns = namesrv_factory(scanNotActiveBrokerInterval=100, brokerChannelExpiredTime=1500)
    async with RemotingClient() as broker:
        await broker.invoke(ns.addr, register_cmd(dv=(5, 5)))
        qh = QueryDataVersionRequestHeader("broker-a", "127.0.0.1:10911", "C1", 0)
        same = DataVersion(5, 5).to_json()
        resp = await broker.invoke(ns.addr, RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, qh, same))
        assert resp.ext_fields["changed"] == "false"
        assert DataVersion.from_json(resp.body) == DataVersion(5, 5)
        other = DataVersion(5, 6).to_json()
        resp = await broker.invoke(
            ns.addr, RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, qh, other)
        )
        assert resp.ext_fields["changed"] == "true"
        # Heartbeat by unchanged QUERY_DATA_VERSION for twice the expiry: the broker stays.
        end = time.monotonic() + 3.2
        while time.monotonic() < end:
            await broker.invoke(ns.addr, RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, qh, same))
            assert (await get_route(broker, ns, "TopicA")).code == ResponseCode.SUCCESS
            await asyncio.sleep(0.2)  # the heartbeat's period, not a synchronisation
        # A changed version does not refresh: silence from here on expires it. The expiry closes the
        # broker's channel (as Java's scan does), so the route is asked over another connection.
        async with RemotingClient() as admin:

            async def gone():
                return (await get_route(admin, ns, "TopicA")).code == ResponseCode.TOPIC_NOT_EXIST

            await async_wait_until(gone, timeout=10, interval=0.05, what="expiry after heartbeats stop")


async def test_closed_broker_channel_removes_its_entries_at_once(namesrv):
    async with RemotingClient() as admin:
        broker = RemotingClient()
        await broker.invoke(namesrv.addr, register_cmd())
        await broker.invoke(namesrv.addr, register_cmd(name="broker-b", addr="127.0.0.3:10911"))
        other = RemotingClient()
        await other.invoke(namesrv.addr, register_cmd(name="broker-c", addr="127.0.0.4:10911"))
        assert (await get_route(admin, namesrv, "TopicA")).code == ResponseCode.SUCCESS
        await broker.close()

        async def only_c_left():
            r = await get_route(admin, namesrv, "TopicA")
            return r.code == ResponseCode.SUCCESS and [
                b.brokerName for b in TopicRouteData.from_json(r.body).brokerDatas
            ] == ["broker-c"]

        await async_wait_until(only_c_left, timeout=5, what="route without the closed brokers")
        await other.close()


async def test_admin_requests(namesrv):
    async with RemotingClient() as client:
        await client.invoke(namesrv.addr, register_cmd(topics=(("TopicA", 4), ("TopicB", 2))))
        await client.invoke(namesrv.addr, register_cmd(name="broker-b", addr="127.0.0.3:10911", cluster="C2"))

        async def call(code, header=None):
            resp = await client.invoke(namesrv.addr, RemotingCommand.request(code, header))
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            return resp

        ci = ClusterInfo.from_json((await call(RequestCode.GET_BROKER_CLUSTER_INFO)).body)
        assert ci.clusterAddrTable == {"C1": ["broker-a"], "C2": ["broker-b"]}
        assert ci.brokerAddrTable["broker-b"].brokerAddrs == {0: "127.0.0.3:10911"}
        all_topics = TopicList.from_json((await call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body)
        assert sorted(all_topics.topicList) == ["TopicA", "TopicB"]
        by_cluster = await call(RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader("C2"))
        assert TopicList.from_json(by_cluster.body).topicList == ["TopicA"]
        sys_topics = TopicList.from_json((await call(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)).body)
        assert sorted(sys_topics.topicList) == ["C1", "C2", "broker-a", "broker-b"]
        wiped = await call(
            RequestCode.WIPE_WRITE_PERM_OF_BROKER, WipeWritePermOfBrokerRequestHeader("broker-a")
        )
        assert wiped.ext_fields["wipeTopicCount"] == "2"
        route = TopicRouteData.from_json((await get_route(client, namesrv, "TopicB")).body)
        assert route.queueDatas[0].perm == 4
        added = await call(
            RequestCode.ADD_WRITE_PERM_OF_BROKER, WipeWritePermOfBrokerRequestHeader("broker-a")
        )
        assert added.ext_fields["addTopicCount"] == "2"
        await call(RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader("TopicA", "C2"))
        route = TopicRouteData.from_json((await get_route(client, namesrv, "TopicA")).body)
        assert [q.brokerName for q in route.queueDatas] == ["broker-a"]
        await call(RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader("TopicB"))
        assert (await get_route(client, namesrv, "TopicB")).code == ResponseCode.TOPIC_NOT_EXIST
        for code in (
            RequestCode.GET_UNIT_TOPIC_LIST,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
        ):
            assert TopicList.from_json((await call(code)).body).topicList == []


async def test_kv_config_survives_a_restart(namesrv):
    async with RemotingClient() as client:

        async def kv(code, header):
            return await client.invoke(namesrv.addr, RemotingCommand.request(code, header))

        assert (await kv(RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader("ns1", "k1", "v1"))).code == 0
        assert (await kv(RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader("ns1", "k2", "值2"))).code == 0
        assert (await kv(RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader("ns1", "k1"))).code == 0
    assert namesrv.stop() == 0  # SIGTERM: clean exit
    on_disk = json.loads((namesrv.tmp_path / "ns" / "kvConfig.json").read_text())
    assert on_disk == {"configTable": {"ns1": {"k2": "值2"}}}
    namesrv.start()
    async with RemotingClient() as client:
        resp = await client.invoke(
            namesrv.addr,
            RemotingCommand.request(RequestCode.GET_KV_CONFIG, GetKVConfigRequestHeader("ns1", "k2")),
        )
        assert resp.code == ResponseCode.SUCCESS and resp.ext_fields["value"] == "值2"
        resp = await client.invoke(
            namesrv.addr,
            RemotingCommand.request(RequestCode.GET_KV_CONFIG, GetKVConfigRequestHeader("ns1", "k1")),
        )
        assert (resp.code, resp.remark) == (
            ResponseCode.QUERY_NOT_FOUND,
            "No config item, Namespace: ns1 Key: k1",
        )
        resp = await client.invoke(
            namesrv.addr,
            RemotingCommand.request(
                RequestCode.GET_KVLIST_BY_NAMESPACE, GetKVListByNamespaceRequestHeader("ns1")
            ),
        )
        assert fastjson.loads(resp.body) == {"table": {"k2": "值2"}}
        resp = await client.invoke(
            namesrv.addr,
            RemotingCommand.request(
                RequestCode.GET_KVLIST_BY_NAMESPACE, GetKVListByNamespaceRequestHeader("x")
            ),
        )
        assert resp.code == ResponseCode.QUERY_NOT_FOUND


async def test_update_namesrv_config_refuses_paths_and_ports_and_applies_the_rest(namesrv):
    store = namesrv.tmp_path / "ns" / "namesrv.properties"
    async with RemotingClient() as client:

        async def update(text):
            return await client.invoke(
                namesrv.addr, RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=text.encode())
            )

        for text in ("kvConfigPath=/tmp/evil.json\n", "configStorePath=/tmp/evil.properties\n"):
            resp = await update(text)
            assert (resp.code, resp.remark) == (ResponseCode.NO_PERMISSION, "Can not update config path")
        resp = await update("listenPort=1\norderMessageEnable=true\n")
        assert resp.code == ResponseCode.NO_PERMISSION and "listenPort" in resp.remark
        resp = await update("scanNotActiveBrokerInterval=abc\n")
        assert resp.code == ResponseCode.SYSTEM_ERROR and "scanNotActiveBrokerInterval" in resp.remark
        assert not store.exists()  # nothing refused was applied or persisted
        resp = await update("orderMessageEnable=true\nproductEnvName=test\n")
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        cfg = await client.invoke(namesrv.addr, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG))
        text = bytes(cfg.body).decode()
        assert "orderMessageEnable=true\n" in text and "productEnvName=test\n" in text
        assert f"listenPort={namesrv.port}\n" in text
        assert f"kvConfigPath={namesrv.tmp_path / 'ns' / 'kvConfig.json'}\n" in text
        assert "orderMessageEnable=true" in store.read_text()
        # orderMessageEnable now puts ORDER_TOPIC_CONFIG into routes
        await client.invoke(namesrv.addr, register_cmd())
        put = PutKVConfigRequestHeader("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4")
        await client.invoke(namesrv.addr, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, put))
        route = TopicRouteData.from_json((await get_route(client, namesrv, "TopicA")).body)
        assert route.orderTopicConf == "broker-a:4"
        # and the register reply carries the namespace as a KVTable
        resp = await client.invoke(namesrv.addr, register_cmd())
        assert orjson.loads(resp.body) == {"table": {"TopicA": "broker-a:4"}}
    assert not (namesrv.tmp_path / "evil.json").exists()


def run_cli(*args, timeout=20):
    return subprocess.run(
        [str(BIN / "mqnamesrv"), *args], capture_output=True, text=True, timeout=timeout, cwd=str(ROOT)
    )


def test_print_config_and_help(tmp_path):
    conf = tmp_path / "ns.conf"
    conf.write_text("listenPort=12345\norderMessageEnable=true\n")
    r = run_cli("-c", str(conf), "-p")
    assert r.returncode == 0, r.stderr
    assert "listenPort=12345\n" in r.stdout and "orderMessageEnable=true\n" in r.stdout
    r = run_cli("-c", str(conf), "-n", "127.0.0.1:23456", "-p")
    assert "listenPort=23456\n" in r.stdout
    r = run_cli("-h")
    assert r.returncode == 0 and "-c" in r.stdout


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("listenPort=notaport\n", "listenPort"),
        ("orderMessageEnable=maybe\n", "orderMessageEnable"),
        ("listenPort=70000\n", "listenPort"),
        ("scanNotActiveBrokerInterval=0\n", "scanNotActiveBrokerInterval"),
    ],
)
def test_bad_config_value_exits_non_zero_naming_the_key(tmp_path, content, needle):
    conf = tmp_path / "ns.conf"
    conf.write_text(content)
    r = run_cli("-c", str(conf))
    assert r.returncode != 0
    assert needle in r.stderr


def test_missing_config_file_and_bad_option(tmp_path):
    r = run_cli("-c", str(tmp_path / "nope.conf"))
    assert r.returncode != 0 and "nope.conf" in r.stderr
    r = run_cli("--bogus")
    assert r.returncode != 0 and "bogus" in r.stderr


def test_port_in_use_exits_non_zero(tmp_path):
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        conf = tmp_path / "ns.conf"
        conf.write_text(f"listenPort={port}\nbindAddress=127.0.0.1\nkvConfigPath={tmp_path / 'kv.json'}\n")
        r = run_cli("-c", str(conf))
    assert r.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in r.stderr


def test_corrupt_kv_file_refuses_to_start_and_keeps_the_file(tmp_path):
    kv = tmp_path / "kv.json"
    kv.write_text("{broken")
    conf = tmp_path / "ns.conf"
    conf.write_text(f"listenPort={free_port()}\nbindAddress=127.0.0.1\nkvConfigPath={kv}\n")
    r = run_cli("-c", str(conf))
    assert r.returncode != 0 and "cannot load KV config" in r.stderr
    assert kv.read_text() == "{broken"


async def test_many_brokers_register_concurrently_and_half_disconnect(namesrv):
    n = 40
    brokers = [RemotingClient() for _ in range(n)]
    try:
        cmds = [
            register_cmd(
                name=f"b{i}",
                addr=f"127.0.1.{i}:10911",
                cluster=f"C{i % 4}",
                topics=(("Shared", 2), (f"Own{i}", 1)),
            )
            for i in range(n)
        ]
        resps = await asyncio.gather(
            *(b.invoke(namesrv.addr, c, timeout=10) for b, c in zip(brokers, cmds, strict=True))
        )
        assert all(r.code == ResponseCode.SUCCESS for r in resps)
        async with RemotingClient() as admin:
            route = TopicRouteData.from_json((await get_route(admin, namesrv, "Shared")).body)
            assert len(route.brokerDatas) == n and len(route.queueDatas) == n
            await asyncio.gather(*(b.close() for b in brokers[::2]))

            async def half_left():
                r = await get_route(admin, namesrv, "Shared")
                names = {b.brokerName for b in TopicRouteData.from_json(r.body).brokerDatas}
                return names == {f"b{i}" for i in range(1, n, 2)}

            await async_wait_until(half_left, timeout=10, what="closed brokers removed")
            ci = ClusterInfo.from_json(
                (
                    await admin.invoke(
                        namesrv.addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
                    )
                ).body
            )
            assert sorted(ci.clusterAddrTable) == ["C1", "C3"]
            assert (await get_route(admin, namesrv, "Own0")).code == ResponseCode.TOPIC_NOT_EXIST
            assert (await get_route(admin, namesrv, "Own1")).code == ResponseCode.SUCCESS
    finally:
        await asyncio.gather(*(b.close() for b in brokers))

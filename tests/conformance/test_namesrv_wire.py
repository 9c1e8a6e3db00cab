"""NameServer answers on the wire (§12): response keys, codes and the version-dependent route JSON (§7, §11.3)."""

from __future__ import annotations

import zlib

import orjson
import pytest

from remoting import fastjson
from remoting.body.register_broker import RegisterBrokerBody
from remoting.body.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.support import Proc, free_port

RC = ResponseCode


@pytest.fixture(scope="module")
def ns(tmp_path_factory):
    root = tmp_path_factory.mktemp("nsw")
    port = free_port()
    conf = root / "namesrv.conf"
    conf.write_text(f"listenPort={port}\nbindAddress=127.0.0.1\nkvConfigPath={root / 'kv.json'}\n"
                    f"configStorePath={root / 'namesrv.properties'}\n")
    p = Proc("namesrv", ["mqnamesrv", "-c", str(conf)], root)
    p.wait_port(port)
    yield f"127.0.0.1:{port}"
    p.stop()


@pytest.fixture
async def client():
    c = RemotingClient(name="conformance")
    yield c
    await c.close()


async def ask(client, addr, code, header=None, body=None, version=None):
    cmd = RemotingCommand.request(code, header, body)
    if version is not None:
        cmd.version = version
    return await client.invoke(addr, cmd, 3.0)


def _body(topics: dict[str, int], counter: int = 1) -> RegisterBrokerBody:
    table = {t: TopicConfig(topicName=t, readQueueNums=n, writeQueueNums=n, perm=6) for t, n in topics.items()}
    return RegisterBrokerBody(TopicConfigSerializeWrapper(table, DataVersion(1690000000000, counter)), [])


def _reg(name, addr, broker_id, ha, **extra):
    return {"brokerName": name, "brokerAddr": addr, "clusterName": "ConfCluster", "haServerAddr": ha,
            "brokerId": broker_id, **extra}


async def test_register_broker_and_route_json_by_version(ns, client):
    body = _body({"ConfRoute": 4}).encode()
    crc = zlib.crc32(body) & 0x7FFFFFFF
    r = await ask(client, ns, RequestCode.REGISTER_BROKER,
                  _reg("nb1", "127.0.0.1:30911", 0, "127.0.0.1:30912", compressed="false", bodyCrc32=crc), body)
    assert r.code == RC.SUCCESS, r.remark
    # A slave learns the master's addresses from the response extFields.
    slave = _body({"ConfRoute": 4}).encode(compress=True)
    r = await ask(client, ns, RequestCode.REGISTER_BROKER,
                  _reg("nb1", "127.0.0.1:31911", 1, "127.0.0.1:31912", compressed="true"), slave)
    assert r.code == RC.SUCCESS, r.remark
    assert r.ext_fields.get("masterAddr") == "127.0.0.1:30911"
    assert r.ext_fields.get("haServerAddr") == "127.0.0.1:30912"

    # version >= 401: standard JSON (numeric keys quoted).
    r = await ask(client, ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "ConfRoute"}, version=407)
    assert r.code == RC.SUCCESS
    tree = orjson.loads(r.body)
    assert tree["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:30911", "1": "127.0.0.1:31911"}
    assert set(tree) >= {"brokerDatas", "filterServerTable", "queueDatas"}
    assert set(tree["queueDatas"][0]) == {"brokerName", "perm", "readQueueNums", "topicSysFlag", "writeQueueNums"}
    # Older clients: fastjson default mode (bare numeric keys), unless acceptStandardJsonOnly=true.
    r = await ask(client, ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "ConfRoute"}, version=400)
    assert b'{0:"127.0.0.1:30911",1:"127.0.0.1:31911"}' in r.body
    r = await ask(client, ns, RequestCode.GET_ROUTEINFO_BY_TOPIC,
                  {"topic": "ConfRoute", "acceptStandardJsonOnly": "true"}, version=400)
    assert b'"0":"127.0.0.1:30911"' in r.body
    r = await ask(client, ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "NoSuchConfTopic"})
    assert r.code == RC.TOPIC_NOT_EXIST

    # QUERY_DATA_VERSION: extFields changed + stored DataVersion body.
    dv = DataVersion(1690000000000, 1).to_json()
    q = {k: v for k, v in _reg("nb1", "127.0.0.1:30911", 0, "").items() if k != "haServerAddr"}
    r = await ask(client, ns, RequestCode.QUERY_DATA_VERSION, q, dv)
    assert r.code == RC.SUCCESS and r.ext_fields == {"changed": "false"}
    assert fastjson.loads(r.body) == {"counter": 1, "timestamp": 1690000000000}
    r = await ask(client, ns, RequestCode.QUERY_DATA_VERSION, q, DataVersion(1690000000001, 2).to_json())
    assert r.ext_fields == {"changed": "true"}

    r = await ask(client, ns, RequestCode.GET_BROKER_CLUSTER_INFO)
    tree = fastjson.loads(r.body)
    assert set(tree) == {"brokerAddrTable", "clusterAddrTable"} and tree["clusterAddrTable"]["ConfCluster"] == ["nb1"]
    assert b'"brokerAddrs":{0:' in r.body  # fastjson default mode

    r = await ask(client, ns, RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "ConfCluster"})
    assert "ConfRoute" in fastjson.loads(r.body)["topicList"]
    r = await ask(client, ns, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
    assert "ConfRoute" in fastjson.loads(r.body)["topicList"]
    r = await ask(client, ns, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)
    tree = fastjson.loads(r.body)
    assert {"ConfCluster", "nb1"} <= set(tree["topicList"]) and tree["brokerAddr"] in (
        "127.0.0.1:30911", "127.0.0.1:31911")

    r = await ask(client, ns, RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "nb1"})
    assert r.code == RC.SUCCESS and r.ext_fields == {"wipeTopicCount": "1"}
    r = await ask(client, ns, RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "nb1"})
    assert r.code == RC.SUCCESS and r.ext_fields == {"addTopicCount": "1"}

    r = await ask(client, ns, RequestCode.UNREGISTER_BROKER,
                  {k: v for k, v in _reg("nb1", "127.0.0.1:31911", 1, "").items() if k != "haServerAddr"})
    assert r.code == RC.SUCCESS
    r = await ask(client, ns, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "ConfRoute"})
    assert r.code == RC.SUCCESS
    r = await ask(client, ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "ConfRoute"})
    assert r.code == RC.TOPIC_NOT_EXIST


async def test_register_broker_crc_mismatch(ns, client):
    body = _body({"ConfCrc": 1}).encode()
    r = await ask(client, ns, RequestCode.REGISTER_BROKER,
                  _reg("nbcrc", "127.0.0.1:32911", 0, "127.0.0.1:32912", bodyCrc32=(zlib.crc32(body) & 0x7FFFFFFF) ^ 1),
                  body)
    assert (r.code, r.remark) == (RC.SYSTEM_ERROR, "crc32 not match")
    r = await ask(client, ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "ConfCrc"})
    assert r.code == RC.TOPIC_NOT_EXIST


async def test_kv_config(ns, client):
    r = await ask(client, ns, RequestCode.GET_KV_CONFIG, {"namespace": "ConfNs", "key": "k"})
    assert r.code == RC.QUERY_NOT_FOUND
    r = await ask(client, ns, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ConfNs"})
    assert r.code == RC.QUERY_NOT_FOUND
    r = await ask(client, ns, RequestCode.PUT_KV_CONFIG, {"namespace": "ConfNs", "key": "k", "value": "v"})
    assert r.code == RC.SUCCESS
    r = await ask(client, ns, RequestCode.GET_KV_CONFIG, {"namespace": "ConfNs", "key": "k"})
    assert r.code == RC.SUCCESS and r.ext_fields == {"value": "v"}
    r = await ask(client, ns, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ConfNs"})
    assert fastjson.loads(r.body) == {"table": {"k": "v"}}
    r = await ask(client, ns, RequestCode.DELETE_KV_CONFIG, {"namespace": "ConfNs", "key": "k"})
    assert r.code == RC.SUCCESS
    r = await ask(client, ns, RequestCode.GET_KV_CONFIG, {"namespace": "ConfNs", "key": "k"})
    assert r.code == RC.QUERY_NOT_FOUND


async def test_namesrv_config_is_properties_text(ns, client):
    r = await ask(client, ns, RequestCode.GET_NAMESRV_CONFIG)
    assert r.code == RC.SUCCESS
    lines = dict(line.split("=", 1) for line in r.body.decode().splitlines() if "=" in line)
    assert "orderMessageEnable" in lines
    r = await ask(client, ns, RequestCode.UPDATE_NAMESRV_CONFIG, None, b"orderMessageEnable=true\n")
    assert r.code == RC.SUCCESS
    r = await ask(client, ns, RequestCode.GET_NAMESRV_CONFIG)
    assert b"orderMessageEnable=true" in r.body


async def test_missing_required_field(ns, client):
    r = await ask(client, ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {})
    assert r.code == RC.SYSTEM_ERROR and "topic" in (r.remark or "")


async def test_register_answer_carries_order_topic_config(ns, client):
    """§12: the REGISTER_BROKER answer body is the KVTable of namespace ORDER_TOPIC_CONFIG."""
    r = await ask(client, ns, RequestCode.PUT_KV_CONFIG,
                  {"namespace": "ORDER_TOPIC_CONFIG", "key": "ConfOrderT", "value": "nbo:4"})
    assert r.code == RC.SUCCESS
    r = await ask(client, ns, RequestCode.REGISTER_BROKER, _reg("nbo", "127.0.0.1:33911", 0, "127.0.0.1:33912"),
                  _body({"ConfOrderT": 4}).encode())
    assert r.code == RC.SUCCESS
    assert fastjson.loads(r.body)["table"]["ConfOrderT"] == "nbo:4"

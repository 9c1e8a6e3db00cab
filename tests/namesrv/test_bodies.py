"""Body beans: field-exact JSON in both styles, golden broker files, the compressed register body."""

from __future__ import annotations

import json
import struct
import zlib

import orjson
import pytest

from remoting.body import BodyError
from remoting.body.cluster import ClusterInfo, TopicList
from remoting.body.kv import KVConfigSerializeWrapper, KVTable
from remoting.body.register_broker import RegisterBrokerBody
from remoting.body.route import BrokerData, QueueData, TopicRouteData
from remoting.body.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper, TopicFilterType
from tests.support import GOLDEN_STORE

GOLDEN = GOLDEN_STORE / "store" / "config"


def _route() -> TopicRouteData:
    return TopicRouteData(
        queueDatas=[QueueData("broker-a", 4, 4, 6, 0)],
        brokerDatas=[BrokerData("C1", "broker-a", {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"})],
        filterServerTable={},
    )


def test_route_fastjson_default_style_is_byte_exact():
    assert _route().to_json() == (
        b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a",'
        b'"cluster":"C1"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,'
        b'"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )


def test_route_standard_style_is_byte_exact_and_valid_json():
    r = _route()
    r.orderTopicConf = "broker-a:4"
    out = r.to_json(standard=True)
    assert out == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a",'
        b'"cluster":"C1"}],"filterServerTable":{},"orderTopicConf":"broker-a:4","queueDatas":[{"brokerName":'
        b'"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )
    json.loads(out)  # the stdlib accepts it


def test_route_roundtrip_from_either_style():
    r = _route()
    assert TopicRouteData.from_json(r.to_json()) == r
    assert TopicRouteData.from_json(r.to_json(standard=True)) == r


@pytest.mark.skipif(not (GOLDEN / "topics.json").exists(), reason="golden store not available")
def test_topic_config_wrapper_reads_a_real_topics_json():
    w = TopicConfigSerializeWrapper.from_json((GOLDEN / "topics.json").read_bytes())
    assert w.dataVersion == DataVersion(timestamp=1795319629090, counter=7)
    tc = w.topicConfigTable["GoldenCluster"]
    assert (tc.readQueueNums, tc.writeQueueNums, tc.perm, tc.topicFilterType) == (
        16,
        16,
        7,
        TopicFilterType.SINGLE_TAG,
    )
    assert w.topicConfigTable["SCHEDULE_TOPIC_XXXX"].readQueueNums == 18
    # Re-encoding gives the same tree fastjson wrote.
    assert orjson.loads(w.to_json()) == orjson.loads((GOLDEN / "topics.json").read_bytes())


def test_topic_config_defaults_and_field_order():
    assert TopicConfig("T").to_json() == (
        b'{"order":false,"perm":6,"readQueueNums":16,"topicFilterType":"SINGLE_TAG","topicName":"T",'
        b'"topicSysFlag":0,"writeQueueNums":16}'
    )
    tc = TopicConfig.from_json(b'{"topicName":"T","readQueueNums":"8"}')
    assert (tc.readQueueNums, tc.writeQueueNums, tc.perm) == (8, 16, 6)
    with pytest.raises(BodyError):
        TopicConfig.from_json(b'{"topicName":"T","topicFilterType":"NOPE"}')


def _register_body() -> RegisterBrokerBody:
    table = {
        "TopicA": TopicConfig("TopicA", 4, 4, 6),
        "主题B": TopicConfig("主题B", 2, 3, 7, TopicFilterType.MULTI_TAG),
    }
    return RegisterBrokerBody(
        TopicConfigSerializeWrapper(table, DataVersion(1700000000000, 3)), ["10.0.0.9:1"]
    )


def test_compressed_register_body_layout_matches_the_spec():
    body = _register_body().encode(compress=True)
    raw = zlib.decompress(body)
    pos = 0

    def take_int():
        nonlocal pos
        (v,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        return v

    def take(n):
        nonlocal pos
        b = raw[pos : pos + n]
        pos += n
        return b

    assert json.loads(take(take_int())) == {"counter": 3, "timestamp": 1700000000000}
    assert take_int() == 2
    assert take(take_int()) == b"TopicA 4 4 6 SINGLE_TAG"
    assert take(take_int()).decode() == "主题B 2 3 7 MULTI_TAG"
    assert json.loads(take(take_int())) == ["10.0.0.9:1"]
    assert pos == len(raw)


def test_register_body_roundtrip_plain_and_compressed():
    b = _register_body()
    assert RegisterBrokerBody.decode(b.encode(), False) == b
    back = RegisterBrokerBody.decode(b.encode(compress=True), True)
    assert back.topicConfigSerializeWrapper.dataVersion == b.topicConfigSerializeWrapper.dataVersion
    assert back.topicConfigSerializeWrapper.topicConfigTable == b.topicConfigSerializeWrapper.topicConfigTable
    assert back.filterServerList == ["10.0.0.9:1"]


@pytest.mark.parametrize(
    "data",
    [
        b"not zlib",
        zlib.compress(b"\x00\x00\x00\x05{}"),  # truncated DataVersion
        zlib.compress(struct.pack(">i", 2) + b"{}" + struct.pack(">i", 1) + struct.pack(">i", 3) + b"a b"),
        zlib.compress(struct.pack(">i", 2) + b"{}" + struct.pack(">i", -1)),
    ],
)
def test_corrupt_compressed_register_body_is_a_body_error(data):
    with pytest.raises(BodyError):
        RegisterBrokerBody.decode(data, True)


def test_cluster_info_topic_list_kv_shapes():
    ci = ClusterInfo({"broker-a": BrokerData("C1", "broker-a", {0: "a:1"})}, {"C1": ["broker-a"]})
    assert ci.to_json() == (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"a:1"},"brokerName":"broker-a","cluster":"C1"}},'
        b'"clusterAddrTable":{"C1":["broker-a"]}}'
    )
    assert ClusterInfo.from_json(ci.to_json()) == ci
    assert TopicList(["a", "b"], "x:1").to_json() == b'{"brokerAddr":"x:1","topicList":["a","b"]}'
    assert TopicList(["a"]).to_json() == b'{"topicList":["a"]}'
    assert KVTable({"k": "v"}).to_json() == b'{"table":{"k":"v"}}'
    w = KVConfigSerializeWrapper({"ns": {"k": "v"}})
    assert KVConfigSerializeWrapper.from_json(w.to_json()) == w


def test_data_version_equality_ignores_nothing_but_timestamp_and_counter():
    assert DataVersion(1, 2) == DataVersion(1, 2, stateVersion=5)
    assert DataVersion(1, 2) != DataVersion(1, 3)
    dv = DataVersion(1, 2)
    dv.next_version()
    assert dv.counter == 3 and dv.timestamp > 1
    assert DataVersion.from_json(b'{"counter":9,"timestamp":8,"stateVersion":1}').to_json() == (
        b'{"counter":9,"stateVersion":1,"timestamp":8}'
    )


def test_queue_data_reads_the_old_topicSynFlag_spelling():
    assert QueueData.from_json(b'{"brokerName":"b","topicSynFlag":3}').topicSysFlag == 3


def test_empty_body_is_a_clear_error():
    with pytest.raises(BodyError, match="empty"):
        TopicRouteData.from_json(b"")

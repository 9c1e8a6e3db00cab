"""DefaultRequestProcessor in-process: edge cases of the handlers without a socket."""

from __future__ import annotations

from namesrv.config import NamesrvConfig
from namesrv.default_request_processor import REGISTER_TOPIC_IN_NAMESRV, DefaultRequestProcessor
from namesrv.kv_config_manager import KVConfigManager
from namesrv.route_info_manager import RouteInfoManager
from remoting.body.route import QueueData, TopicRouteData
from remoting.body.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.header.namesrv import (
    GetRouteInfoRequestHeader,
    QueryDataVersionRequestHeader,
    RegisterBrokerRequestHeader,
    RegisterTopicRequestHeader,
)


class Conn:
    remote_addr = "127.0.0.1:40000"
    closed = False


async def run_io(fn, *args):
    return fn(*args)


def make(tmp_path, **cfg):
    config = NamesrvConfig(
        kvConfigPath=str(tmp_path / "kv.json"), configStorePath=str(tmp_path / "ns.properties")
    )
    for k, v in cfg.items():
        setattr(config, k, v)
    routes = RouteInfoManager()
    persisted = []
    proc = DefaultRequestProcessor(
        routes, KVConfigManager(config.kvConfigPath), config, run_io, persisted.append
    )
    return proc, routes, persisted


def reg_header(bid=0):
    return RegisterBrokerRequestHeader("b", "127.0.0.1:10911", "C", "127.0.0.1:10912", bid)


def test_handlers_cover_every_namesrv_code(tmp_path):
    proc, _, _ = make(tmp_path)
    codes = set(proc.handlers())
    for name in (
        "PUT_KV_CONFIG GET_KV_CONFIG DELETE_KV_CONFIG REGISTER_BROKER UNREGISTER_BROKER GET_ROUTEINFO_BY_TOPIC "
        "GET_BROKER_CLUSTER_INFO WIPE_WRITE_PERM_OF_BROKER ADD_WRITE_PERM_OF_BROKER "
        "GET_ALL_TOPIC_LIST_FROM_NAMESERVER DELETE_TOPIC_IN_NAMESRV GET_KVLIST_BY_NAMESPACE GET_TOPICS_BY_CLUSTER "
        "GET_SYSTEM_TOPIC_LIST_FROM_NS GET_UNIT_TOPIC_LIST GET_HAS_UNIT_SUB_TOPIC_LIST "
        "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST UPDATE_NAMESRV_CONFIG GET_NAMESRV_CONFIG QUERY_DATA_VERSION"
    ).split():
        assert getattr(RequestCode, name) in codes, name
    assert REGISTER_TOPIC_IN_NAMESRV == 217 and 217 in codes


def test_register_without_body_uses_a_zero_data_version(tmp_path):
    proc, routes, _ = make(tmp_path)
    resp = proc.register_broker(RemotingCommand.request(RequestCode.REGISTER_BROKER, reg_header()), Conn())
    assert resp.code == ResponseCode.SUCCESS
    assert routes.query_broker_topic_config("127.0.0.1:10911") == DataVersion(0, 0)
    assert routes.broker_addr_table["b"].brokerAddrs == {0: "127.0.0.1:10911"}


def test_pre_v3_0_11_broker_sends_a_bare_topic_config_wrapper(tmp_path):
    proc, routes, _ = make(tmp_path)
    body = TopicConfigSerializeWrapper({"Old": TopicConfig("Old", 2, 2)}, DataVersion(3, 3)).to_json()
    cmd = RemotingCommand.request(RequestCode.REGISTER_BROKER, reg_header(), body)
    cmd.version = 36
    assert proc.register_broker(cmd, Conn()).code == ResponseCode.SUCCESS
    assert routes.topic_queue_table["Old"]["b"].readQueueNums == 2


def test_route_encoding_follows_the_client_version(tmp_path):
    proc, routes, _ = make(tmp_path)
    routes.register_broker(
        "C", "A:1", "b", 0, "A:2", TopicConfigSerializeWrapper({"T": TopicConfig("T", 1, 1)}), None, None
    )
    for version, accept, standard in (
        (400, None, False),
        (401, None, True),
        (400, True, True),
        (400, False, False),
    ):
        cmd = RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader("T", accept)
        )
        cmd.version = version
        body = proc.get_route_info_by_topic(cmd, Conn()).body
        assert (b'{"0":"A:1"}' in body) is standard and (b'{0:"A:1"}' in body) is not standard


def test_query_data_version_without_body_is_a_clear_error(tmp_path):
    proc, _, _ = make(tmp_path)
    h = QueryDataVersionRequestHeader("b", "A:1", "C", 0)
    resp = proc.query_broker_topic_config(RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, h), Conn())
    assert resp.code == ResponseCode.SYSTEM_ERROR and "empty" in resp.remark
    # unknown broker: changed, no stored version in the body
    resp = proc.query_broker_topic_config(
        RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, h, DataVersion(1, 1).to_json()), Conn()
    )
    assert resp.ext_fields == {"changed": "true"} and not resp.body


def test_register_topic_in_namesrv(tmp_path):
    proc, routes, _ = make(tmp_path)
    routes.register_broker("C", "A:1", "b", 0, "A:2", TopicConfigSerializeWrapper(), None, None)
    body = TopicRouteData(queueDatas=[QueueData("b", 3, 3, 6)]).to_json()
    resp = proc.register_topic_in_namesrv(
        RemotingCommand.request(REGISTER_TOPIC_IN_NAMESRV, RegisterTopicRequestHeader("NewT"), body), Conn()
    )
    assert resp.code == ResponseCode.SUCCESS
    assert routes.topic_queue_table["NewT"]["b"].readQueueNums == 3
    bad = RemotingCommand.request(REGISTER_TOPIC_IN_NAMESRV, RegisterTopicRequestHeader("X"), b"{nope")
    assert proc.register_topic_in_namesrv(bad, Conn()).code == ResponseCode.SYSTEM_ERROR


async def test_update_config_refusals_change_nothing(tmp_path):
    proc, _, persisted = make(tmp_path)
    before = proc.config.kvConfigPath

    async def update(text: bytes):
        return await proc.update_config(
            RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=text), Conn()
        )

    for text in (
        b"kvConfigPath=/x\norderMessageEnable=true",
        b"rocketmqHome=/x\norderMessageEnable=true",
        b"bindAddress=0.0.0.0",
        b"clusterTest=true",
    ):
        assert (await update(text)).code == ResponseCode.NO_PERMISSION
    assert (await update(b"\xff\xfe")).code == ResponseCode.SYSTEM_ERROR
    assert proc.config.kvConfigPath == before and proc.config.orderMessageEnable is False and persisted == []
    resp = await update(b"brokerChannelExpiredTime=5000\nnotAKey=1\n")
    assert resp.code == ResponseCode.SUCCESS
    assert proc.config.brokerChannelExpiredTime == 5000
    assert b"brokerChannelExpiredTime=5000\n" in persisted[-1] and b"notAKey" not in persisted[-1]
    assert (await update(b"")).code == ResponseCode.SUCCESS


async def test_kv_persist_failure_is_reported(tmp_path):
    (tmp_path / "blocker").write_text("a file where a directory is needed")
    proc, _, _ = make(tmp_path, kvConfigPath=str(tmp_path / "blocker" / "kv.json"))
    proc.kv.path = proc.config.kvConfigPath
    from remoting.header.namesrv import PutKVConfigRequestHeader

    resp = await proc.put_kv_config(
        RemotingCommand.request(RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader("n", "k", "v")), Conn()
    )
    assert resp.code == ResponseCode.SYSTEM_ERROR and "persist KV config failed" in resp.remark


def test_bad_topic_entry_in_a_changed_table_registers_nothing(tmp_path):
    proc, routes, _ = make(tmp_path)
    good = b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},'
    ok = good + b'"topicConfigTable":{"T":{"topicName":"T","readQueueNums":2}}}}'
    bad = good.replace(b'"counter":1', b'"counter":2') + b'"topicConfigTable":{"T":{"readQueueNums":"x"}}}}'
    assert proc.register_broker(RemotingCommand.request(103, reg_header(), ok), Conn()).code == 0
    resp = proc.register_broker(RemotingCommand.request(103, reg_header(), bad), Conn())
    assert resp.code == ResponseCode.SYSTEM_ERROR and "readQueueNums" in resp.remark
    assert routes.query_broker_topic_config("127.0.0.1:10911") == DataVersion(1, 1)  # live info untouched
    assert routes.topic_queue_table["T"]["b"].readQueueNums == 2
    # a first registration with a bad table leaves no trace at all
    h = RegisterBrokerRequestHeader("other", "127.0.0.1:20911", "C2", "127.0.0.1:20912", 0)
    resp = proc.register_broker(RemotingCommand.request(103, h, bad), Conn())
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert "other" not in routes.broker_addr_table and "C2" not in routes.cluster_addr_table


def test_unchanged_data_version_skips_decoding_the_table(tmp_path):
    proc, routes, _ = make(tmp_path)
    table = {f"T{i}": TopicConfig(f"T{i}", 1, 1) for i in range(3)}
    from remoting.body.register_broker import LazyTopicConfigTable, RegisterBrokerBody

    body = RegisterBrokerBody(TopicConfigSerializeWrapper(table, DataVersion(7, 7))).encode()
    lazy = RegisterBrokerBody.decode(body, lazy=True)
    assert isinstance(lazy.topicConfigSerializeWrapper.topicConfigTable, LazyTopicConfigTable)
    assert dict(lazy.topicConfigSerializeWrapper.topicConfigTable) == table
    assert proc.register_broker(RemotingCommand.request(103, reg_header(), body), Conn()).code == 0
    routes.topic_queue_table["T0"]["b"].readQueueNums = 99  # marker: an unchanged version must not rewrite it
    assert proc.register_broker(RemotingCommand.request(103, reg_header(), body), Conn()).code == 0
    assert routes.topic_queue_table["T0"]["b"].readQueueNums == 99

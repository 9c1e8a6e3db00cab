"""More broker behaviour: SYNC_FLUSH sends, broker-wide perm, fast port, crash recovery of offsets,
client expiry, and the smaller admin requests."""

from __future__ import annotations

import signal

from broker.client_channel_info import ClientChannelInfo
from broker.consumer_manager import ConsumerManager
from broker.producer_manager import ProducerManager
from remoting import fastjson
from remoting.body.heartbeat import SubscriptionData
from remoting.body.subscription_group import SubscriptionGroupConfig
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import call, messages, pull, send, wait_max_offset
from tests.support import async_wait_until


async def test_sync_flush_broker_sends_and_reads(broker_factory):
    b = broker_factory("syncb", flushDiskType="SYNC_FLUSH")
    async with RemotingClient() as c:
        for i in range(20):
            r = await send(c, b.addr, "SyncT", b"s%d" % i, {"WAIT": "true"})
            assert r.code == ResponseCode.SUCCESS, r.remark
        await wait_max_offset(c, b.addr, "SyncT", 0, 20)
        p = await pull(c, b.addr, "gS", "SyncT", 0, 0)
        assert [m.body for m in messages(p)] == [b"s%d" % i for i in range(20)]


async def test_broker_permission_and_fast_port(broker_factory):
    b = broker_factory("permb", brokerPermission=2)
    async with RemotingClient() as c:
        r = await send(c, b.addr, "PermT", b"x")
        assert r.code == ResponseCode.SUCCESS
        p = await pull(c, b.addr, "gP", "PermT", 0, 0)
        assert p.code == ResponseCode.NO_PERMISSION and "pulling message is forbidden" in p.remark
        fast = f"127.0.0.1:{b.port - 2}"
        r = await call(c, fast, RequestCode.GET_MAX_OFFSET, {"topic": "PermT", "queueId": 0})
        assert r.code == ResponseCode.SUCCESS
        p = await pull(c, fast, "gP", "PermT", 0, 0)
        assert p.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_offsets_persist_periodically_and_survive_a_crash(broker_factory):
    b = broker_factory("crashb", flushConsumerOffsetInterval=200)
    async with RemotingClient() as c:
        for i in range(5):
            await send(c, b.addr, "CrashT", b"c%d" % i)
        r = await call(c, b.addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                       {"consumerGroup": "gC", "topic": "CrashT", "queueId": 0, "commitOffset": 4})
        assert r.code == ResponseCode.SUCCESS
        await wait_max_offset(c, b.addr, "CrashT", 0, 5)
    offsets_file = b.store / "config" / "consumerOffset.json"

    def persisted():
        return offsets_file.exists() and '"CrashT@gC":{0:4' in offsets_file.read_text()

    await async_wait_until(persisted, 5, what="periodic offset persist")
    b.proc.signal(signal.SIGKILL)
    b.proc.popen.wait(5)
    assert (b.store / "abort").exists()
    b.start()
    async with RemotingClient() as c:
        r = await call(c, b.addr, RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "gC", "topic": "CrashT", "queueId": 0})
        assert r.ext_fields["offset"] == "4"
        await wait_max_offset(c, b.addr, "CrashT", 0, 5)
        p = await pull(c, b.addr, "gC", "CrashT", 0, 4)
        assert [m.body for m in messages(p)] == [b"c4"]


async def test_small_admin_requests(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        await send(c, addr, "CloneT", b"x")
        await call(c, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": "gSrc", "topic": "CloneT", "queueId": 0, "commitOffset": 1})
        r = await call(c, addr, RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "gSrc", "destGroup": "gDst", "topic": "CloneT"})
        assert r.code == ResponseCode.SUCCESS
        r = await call(c, addr, RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "gDst", "topic": "CloneT", "queueId": 0})
        assert r.ext_fields["offset"] == "1"
        r = await call(c, addr, RequestCode.GET_ALL_DELAY_OFFSET)
        assert r.code in (ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR)
        if r.code == ResponseCode.SUCCESS:
            assert "offsetTable" in fastjson.loads(r.body)
        sd = SubscriptionData(topic="CloneT", subString="a || b", tagsSet=["a", "b"])
        body = fastjson.dumps({"clientId": "x", "group": "g", "subscriptionData": sd.to_obj()})
        r = await call(c, addr, RequestCode.CHECK_CLIENT_CONFIG, body=body)
        assert r.code == ResponseCode.SUCCESS
        sd.expressionType = "SQL92"
        sd.subString = "a > 1"
        body = fastjson.dumps({"clientId": "x", "group": "g", "subscriptionData": sd.to_obj()})
        r = await call(c, addr, RequestCode.CHECK_CLIENT_CONFIG, body=body)
        assert r.code == ResponseCode.SYSTEM_ERROR  # enablePropertyFilter is off
        # SQL92 pull refused as well while property filtering is off
        p = await pull(c, addr, "gSql", "CloneT", 0, 0, subscription="a > 1", expression_type="SQL92")
        assert p.code == ResponseCode.SYSTEM_ERROR
        # consumeEnable=false on a group refuses pulls
        body = SubscriptionGroupConfig(groupName="gOff", consumeEnable=False).to_json()
        assert (await call(c, addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)).code == 0
        p = await pull(c, addr, "gOff", "CloneT", 0, 0)
        assert p.code == ResponseCode.NO_PERMISSION


class _Chan:
    def __init__(self, name):
        self.remote_addr = name
        self.closed = False


def test_client_channels_expire_after_silence():
    notified = []
    cm = ConsumerManager(lambda g, chans: notified.append((g, len(chans))))
    a, b = _Chan("a:1"), _Chan("b:1")
    sub = [SubscriptionData(topic="T", subVersion=1)]
    cm.register_consumer("g", ClientChannelInfo(a, "ca"), "CONSUME_PASSIVELY", "CLUSTERING", "X", sub, True)
    cm.register_consumer("g", ClientChannelInfo(b, "cb"), "CONSUME_PASSIVELY", "CLUSTERING", "X", sub, True)
    assert notified == [("g", 1), ("g", 2)]
    # a newer subVersion replaces the subscription without a membership notice; dropping a topic notifies
    cm.register_consumer("g", ClientChannelInfo(a, "ca"), "CONSUME_PASSIVELY", "CLUSTERING", "X",
                         [SubscriptionData(topic="T", subVersion=5)], True)
    assert cm.find_subscription_data("g", "T").subVersion == 5 and len(notified) == 2
    cm.table["g"].channel_info_table[a].last_update_timestamp -= 130_000
    expired = cm.scan_not_active_channel()
    assert expired == [a] and cm.get_consumer_group_info("g").all_client_ids() == ["cb"]
    pm = ProducerManager()
    pm.register_producer("pg", ClientChannelInfo(a, "ca"))
    pm.group_channel_table["pg"][a].last_update_timestamp -= 130_000
    assert pm.scan_not_active_channel() == [a] and pm.get_connections("pg") == []


async def test_consumer_running_info_is_relayed_to_the_client(shared_broker):
    from remoting.body.heartbeat import ConsumerData, HeartbeatData

    addr = shared_broker.addr
    consumer = RemotingClient()
    seen = []

    def on_running_info(req, conn):
        seen.append(req.ext_fields)
        return req.response_to(ResponseCode.SUCCESS, body=b'{"properties":{"x":"1"}}')

    consumer.register_processor(RequestCode.GET_CONSUMER_RUNNING_INFO, on_running_info)
    try:
        hb = HeartbeatData(clientID="relay-c", consumerDataSet=[ConsumerData(groupName="gRelay")]).to_json()
        assert (await call(consumer, addr, RequestCode.HEART_BEAT, body=hb)).code == ResponseCode.SUCCESS
        async with RemotingClient() as admin:
            hdr = {"consumerGroup": "gRelay", "clientId": "relay-c", "jstackEnable": "false"}
            r = await call(admin, addr, RequestCode.GET_CONSUMER_RUNNING_INFO, hdr)
            assert r.code == ResponseCode.SUCCESS and r.body == b'{"properties":{"x":"1"}}'
            assert seen and seen[0]["clientId"] == "relay-c"
            r = await call(admin, addr, RequestCode.GET_CONSUMER_RUNNING_INFO, dict(hdr, clientId="ghost"))
            assert r.code == ResponseCode.SYSTEM_ERROR and "not online" in r.remark
    finally:
        await consumer.close()


async def test_consume_time_span_and_maintenance_requests(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        for i in range(3):
            await send(c, addr, "SpanT", b"%d" % i)
        await wait_max_offset(c, addr, "SpanT", 0, 3)
        await call(c, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": "gSpan", "topic": "SpanT", "queueId": 0, "commitOffset": 1})
        r = await call(c, addr, RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "SpanT", "group": "gSpan"})
        assert r.code == ResponseCode.SUCCESS
        spans = fastjson.loads(r.body)["consumeTimeSpanSet"]
        q0 = next(s for s in spans if s["messageQueue"]["queueId"] == 0)
        assert 0 < q0["minTimeStamp"] <= q0["consumeTimeStamp"] <= q0["maxTimeStamp"]
        assert q0["delayTime"] >= 0
        for code in (RequestCode.CLEAN_UNUSED_TOPIC, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE):
            assert (await call(c, addr, code)).code == ResponseCode.SUCCESS
        r = await call(c, addr, RequestCode.GET_MAX_OFFSET, {"topic": "SpanT", "queueId": 0})
        assert r.ext_fields["offset"] == "3"


async def test_without_auto_creation(broker_factory):
    b = broker_factory("noauto", autoCreateTopicEnable="false", autoCreateSubscriptionGroup="false")
    async with RemotingClient() as c:
        r = await send(c, b.addr, "NotThereT", b"x")
        assert r.code == ResponseCode.TOPIC_NOT_EXIST and "apply first" in r.remark
        r = await call(c, b.addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        table = fastjson.loads(r.body)["topicConfigTable"]
        assert "TBW102" not in table and "NotThereT" not in table
        h = {"topic": "MadeT", "defaultTopic": "TBW102", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6,
             "topicFilterType": "SINGLE_TAG", "order": "false"}
        assert (await call(c, b.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, h)).code == ResponseCode.SUCCESS
        assert (await send(c, b.addr, "MadeT", b"x")).code == ResponseCode.SUCCESS
        p = await pull(c, b.addr, "unknownGroup", "MadeT", 0, 0)
        assert p.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        # a retry topic needs its group to exist
        r = await send(c, b.addr, "%RETRY%unknownGroup", b"x")
        assert r.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


async def test_reply_message_is_pushed_to_the_requester(shared_broker):
    from remoting.body.heartbeat import HeartbeatData, ProducerData
    from tests.broker.helpers import send_header_v2

    addr = shared_broker.addr
    requester = RemotingClient()
    pushed = []

    def on_push(req, conn):
        pushed.append((req.ext_fields, req.body))
        return req.response_to(ResponseCode.SUCCESS)

    requester.register_processor(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, on_push)
    try:
        hb = HeartbeatData(clientID="req-client", producerDataSet=[ProducerData("reqpg")]).to_json()
        assert (await call(requester, addr, RequestCode.HEART_BEAT, body=hb)).code == ResponseCode.SUCCESS
        async with RemotingClient() as responder:
            props = {"REPLY_TO_CLIENT": "req-client", "CORRELATION_ID": "corr-1", "MSG_TYPE": "reply"}
            h = send_header_v2("TestCluster_REPLY_TOPIC", props, group="resppg")
            r = await call(responder, addr, RequestCode.SEND_REPLY_MESSAGE_V2, h, b"the answer")
            assert r.code == ResponseCode.SUCCESS, r.remark
            assert pushed and pushed[0][1] == b"the answer"
            ext = pushed[0][0]
            assert ext["topic"] == "TestCluster_REPLY_TOPIC" and "CORRELATION_ID\x01corr-1" in ext["properties"]
            assert "PUSH_REPLY_TIME" in ext["properties"]
            # stored too (storeReplyMessageEnable defaults to true)
            await wait_max_offset(responder, addr, "TestCluster_REPLY_TOPIC", 0, 1)
            # a reply to a client that is not connected: still stored, so the store's answer decides
            props["REPLY_TO_CLIENT"] = "gone"
            h = send_header_v2("TestCluster_REPLY_TOPIC", props, group="resppg")
            r = await call(responder, addr, RequestCode.SEND_REPLY_MESSAGE_V2, h, b"late")
            assert r.code == ResponseCode.SUCCESS and len(pushed) == 1
    finally:
        await requester.close()

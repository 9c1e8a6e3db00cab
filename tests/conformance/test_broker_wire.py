"""Broker answers on the wire: status -> code maps (broker-behaviour §5, §6) and response shapes (§13-§16).

One real bin/mqbroker per module, spoken to over loopback with hand-built requests.
"""

from __future__ import annotations

import time

import pytest

from broker.processor.send_message_remarks import put_status_to_response
from remoting import fastjson
from remoting.body.consumer import LockBatchRequestBody, MessageQueue
from remoting.body.heartbeat import SubscriptionData
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from store.message_store import PutMessageStatus
from tests.broker.helpers import BrokerProc, call, pull, send, wait_max_offset
from tests.support import async_wait_until

RC = ResponseCode

# broker-behaviour §5 "Put result -> response code", transcribed.
PUT_STATUS_CODES = {
    "PUT_OK": (0, True),
    "FLUSH_DISK_TIMEOUT": (10, True),
    "FLUSH_SLAVE_TIMEOUT": (12, True),
    "SLAVE_NOT_AVAILABLE": (11, True),
    "CREATE_MAPEDFILE_FAILED": (1, False),
    "OS_PAGECACHE_BUSY": (1, False),
    "UNKNOWN_ERROR": (1, False),
    "MESSAGE_ILLEGAL": (13, False),
    "PROPERTIES_SIZE_EXCEEDED": (13, False),
    "SERVICE_NOT_AVAILABLE": (14, False),
}


@pytest.mark.parametrize("status", list(PutMessageStatus), ids=lambda s: s.name)
def test_put_status_maps_to_spec_code(status):
    code, remark, stored = put_status_to_response(status.name, 4 * 1024 * 1024)
    assert (code, stored) == PUT_STATUS_CODES[status.name]
    if status.name == "OS_PAGECACHE_BUSY":
        assert remark.startswith("[PC_SYNCHRONIZED]")


def test_every_spec_put_status_exists_in_store():
    assert {s.name for s in PutMessageStatus} == set(PUT_STATUS_CODES)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProc(tmp_path_factory.mktemp("wire"), "wire")
    b.start()
    yield b
    b.stop()


@pytest.fixture
async def client():
    c = RemotingClient(name="conformance")
    yield c
    await c.close()


async def _create_topic(client, addr, topic, queues=4):
    r = await call(client, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues, "perm": 6,
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"})
    assert r.code == RC.SUCCESS, r.remark


PULL_KEYS = {"suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"}


def _pull_state(r):
    assert PULL_KEYS <= set(r.ext_fields), r.ext_fields
    return r.code, r.remark, int(r.ext_fields["nextBeginOffset"])


async def test_pull_status_codes_and_next_begin_offset(broker, client):
    """§6 table: store status -> code and nextBeginOffset on a master."""
    topic = "ConfPull"
    await _create_topic(client, broker.addr, topic)
    # Empty queue: NO_MESSAGE_IN_QUEUE / NO_MATCHED_LOGIC_QUEUE -> NOT_FOUND at 0, OFFSET_MOVED elsewhere.
    code, remark, nbo = _pull_state(await pull(client, broker.addr, "cg", topic, 0, 0))
    assert (code, nbo) == (RC.PULL_NOT_FOUND, 0) and remark in ("NO_MESSAGE_IN_QUEUE", "NO_MATCHED_LOGIC_QUEUE")
    code, remark, nbo = _pull_state(await pull(client, broker.addr, "cg", topic, 0, 5))
    assert (code, nbo) == (RC.PULL_OFFSET_MOVED, 0) and remark in ("NO_MESSAGE_IN_QUEUE", "NO_MATCHED_LOGIC_QUEUE")

    for _ in range(2):
        r = await send(client, broker.addr, topic, b"x", {"TAGS": "A"}, queue_id=0)
        assert r.code == RC.SUCCESS, r.remark
    await wait_max_offset(client, broker.addr, topic, 0, 2)

    r = await pull(client, broker.addr, "cg", topic, 0, 0)
    assert _pull_state(r) == (RC.SUCCESS, "FOUND", 2)
    assert (r.ext_fields["minOffset"], r.ext_fields["maxOffset"], r.ext_fields["suggestWhichBrokerId"]) == (
        "0", "2", "0")
    assert _pull_state(await pull(client, broker.addr, "cg", topic, 0, 2)) == (
        RC.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", 2)
    # Spec store-read table: offset > maxOffset -> nextBeginOffset = maxOffset (4.9.7; the "minOffset
    # when it is 0" rule is older RocketMQ and sends a consumer back to the start of the queue).
    assert _pull_state(await pull(client, broker.addr, "cg", topic, 0, 9)) == (
        RC.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY", 2)
    assert _pull_state(await pull(client, broker.addr, "cg", topic, 0, 0, subscription="B")) == (
        RC.PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE", 2)


async def test_send_response_ext_fields(broker, client):
    """§13.1: msgId, queueId, queueOffset plus MSG_REGION and TRACE_ON."""
    topic = "ConfSend"
    await _create_topic(client, broker.addr, topic)
    r = await send(client, broker.addr, topic, b"hello", {"UNIQ_KEY": "AC1100010000000000000000000A0001"}, queue_id=1)
    assert r.code == RC.SUCCESS, r.remark
    ext = r.ext_fields
    assert {"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"} <= set(ext)
    assert len(ext["msgId"]) == 32 and int(ext["queueId"]) == 1 and int(ext["queueOffset"]) == 0
    assert ext["MSG_REGION"] == "DefaultRegion" and ext["TRACE_ON"] in ("true", "false")
    # SEND_MESSAGE (v1 names) answers the same way.
    h = {"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
         "queueId": 1, "sysFlag": 0, "bornTimestamp": int(time.time() * 1000), "flag": 0, "properties": ""}
    r = await call(client, broker.addr, RequestCode.SEND_MESSAGE, h, b"v1")
    assert r.code == RC.SUCCESS and r.ext_fields["queueOffset"] == "1"


async def test_oversized_body_is_message_illegal(broker, client):
    """§5 step 9: body > maxMessageSize -> MESSAGE_ILLEGAL (13), nothing stored."""
    topic = "ConfBig"
    await _create_topic(client, broker.addr, topic)
    r = await send(client, broker.addr, topic, b"x" * (64 * 1024 + 1), queue_id=0)
    assert r.code == RC.MESSAGE_ILLEGAL
    r = await call(client, broker.addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": 0})
    assert r.ext_fields["offset"] == "0"


async def test_offset_queries(broker, client):
    """§14.2: offset / timestamp response keys; QUERY_CONSUMER_OFFSET for a new group."""
    topic = "ConfOffsets"
    await _create_topic(client, broker.addr, topic)
    before = int(time.time() * 1000) - 1000
    assert (await send(client, broker.addr, topic, b"a", queue_id=0)).code == RC.SUCCESS
    await wait_max_offset(client, broker.addr, topic, 0, 1)
    q = {"topic": topic, "queueId": 0}
    assert (await call(client, broker.addr, RequestCode.GET_MAX_OFFSET, q)).ext_fields == {"offset": "1"}
    assert (await call(client, broker.addr, RequestCode.GET_MIN_OFFSET, q)).ext_fields == {"offset": "0"}
    r = await call(client, broker.addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {**q, "timestamp": before})
    assert r.code == RC.SUCCESS and r.ext_fields == {"offset": "0"}
    r = await call(client, broker.addr, RequestCode.GET_EARLIEST_MSG_STORETIME, q)
    assert r.code == RC.SUCCESS and set(r.ext_fields) == {"timestamp"} and int(r.ext_fields["timestamp"]) >= before
    r = await call(client, broker.addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": "og", "topic": topic, "queueId": 0, "commitOffset": 1})
    assert r.code == RC.SUCCESS
    r = await call(client, broker.addr, RequestCode.QUERY_CONSUMER_OFFSET,
                   {"consumerGroup": "og", "topic": topic, "queueId": 0})
    assert r.code == RC.SUCCESS and r.ext_fields == {"offset": "1"}


async def test_missing_required_header_field_is_refused(broker, client):
    """§8: a missing R field gets an error answer naming the field, not a hang or a crash."""
    r = await call(client, broker.addr, RequestCode.GET_MAX_OFFSET, {"queueId": 0})
    assert r.code == RC.SYSTEM_ERROR and "topic" in (r.remark or "")
    r = await call(client, broker.addr, RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "g", "topic": "T"})
    assert r.code == RC.SYSTEM_ERROR and "queueId" in (r.remark or "")


async def test_query_and_view_message(broker, client):
    """§14.5: QUERY_MESSAGE index keys / QUERY_NOT_FOUND; VIEW_MESSAGE_BY_ID on a bad offset -> SYSTEM_ERROR."""
    topic = "ConfQuery"
    await _create_topic(client, broker.addr, topic)
    r = await send(client, broker.addr, topic, b"q", {"KEYS": "k1"}, queue_id=0)
    assert r.code == RC.SUCCESS
    await wait_max_offset(client, broker.addr, topic, 0, 1)
    now = int(time.time() * 1000)
    h = {"topic": topic, "key": "k1", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": now + 60_000}

    async def found():
        r = await call(client, broker.addr, RequestCode.QUERY_MESSAGE, h)
        return r if r.code == RC.SUCCESS else None

    r = await async_wait_until(found, 5.0, what="index built")
    assert {"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"} <= set(r.ext_fields)
    r = await call(client, broker.addr, RequestCode.QUERY_MESSAGE, {**h, "key": "no-such-key"})
    assert r.code == RC.QUERY_NOT_FOUND
    r = await call(client, broker.addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": 1 << 40})
    assert r.code == RC.SYSTEM_ERROR


async def test_admin_error_codes(broker, client):
    """§14.2/§16 error answers for unknown groups/topics."""
    r = await call(client, broker.addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "nobody"})
    assert r.code == RC.SYSTEM_ERROR
    r = await call(client, broker.addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "nobody"})
    assert r.code == RC.CONSUMER_NOT_ONLINE
    r = await call(client, broker.addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "nobody"})
    assert r.code == RC.SYSTEM_ERROR
    r = await call(client, broker.addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": "NoSuchTopicConf"})
    assert r.code == RC.TOPIC_NOT_EXIST
    topic = "ConfReset"
    await _create_topic(client, broker.addr, topic, queues=1)
    reset = {"topic": topic, "group": "resetg", "timestamp": -1, "isForce": "true"}
    # A group without offsets is refused first (4.9.7 Broker2Client: SYSTEM_ERROR "... not exist") ...
    r = await call(client, broker.addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset)
    assert r.code == RC.SYSTEM_ERROR
    r = await call(client, broker.addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": "resetg", "topic": topic, "queueId": 0, "commitOffset": 0})
    assert r.code == RC.SUCCESS
    # ... one with offsets but no online client gets CONSUMER_NOT_ONLINE (§16).
    r = await call(client, broker.addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset)
    assert r.code == RC.CONSUMER_NOT_ONLINE, r.remark
    r = await call(client, broker.addr, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "NOPE", "statsKey": "x"})
    assert r.code == RC.SYSTEM_ERROR
    r = await call(client, broker.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": "TBW102", "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6,
        "topicFilterType": "SINGLE_TAG", "order": "false"})
    assert r.code == RC.SYSTEM_ERROR


async def test_admin_bodies(broker, client):
    """§16 response bodies: shapes by field name."""
    topic = "ConfAdmin"
    await _create_topic(client, broker.addr, topic, queues=3)
    r = await call(client, broker.addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic})
    tree = fastjson.loads(r.body)
    assert len(tree["offsetTable"]) == 3
    for k, v in tree["offsetTable"].items():
        assert set(fastjson.loads(str.__str__(k))) == {"brokerName", "queueId", "topic"}
        assert set(v) == {"lastUpdateTimestamp", "maxOffset", "minOffset"}

    r = await call(client, broker.addr, RequestCode.GET_BROKER_CONFIG)
    assert r.code == RC.SUCCESS and b"brokerName=wire\n" in r.body
    assert set(fastjson.loads(r.ext_fields["version"])) >= {"counter", "timestamp"}

    r = await call(client, broker.addr, RequestCode.GET_ALL_TOPIC_CONFIG)
    tree = fastjson.loads(r.body)
    assert set(tree) >= {"dataVersion", "topicConfigTable"}
    assert set(tree["topicConfigTable"][topic]) >= {"order", "perm", "readQueueNums", "topicFilterType",
                                                     "topicName", "topicSysFlag", "writeQueueNums"}

    r = await call(client, broker.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    assert set(fastjson.loads(r.body)) >= {"dataVersion", "subscriptionGroupTable"}

    r = await call(client, broker.addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
    assert "offsetTable" in fastjson.loads(r.body)

    r = await call(client, broker.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    assert isinstance(fastjson.loads(r.body)["table"], dict)

    r = await call(client, broker.addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic})
    assert r.code == RC.SUCCESS and set(fastjson.loads(r.body)) == {"groupList"}

    r = await call(client, broker.addr, RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": topic, "group": "tsg"})
    spans = fastjson.loads(r.body)["consumeTimeSpanSet"]
    assert len(spans) == 3
    assert set(spans[0]) == {"consumeTimeStamp", "delayTime", "maxTimeStamp", "messageQueue", "minTimeStamp"}

    r = await call(client, broker.addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "csg", "topic": topic})
    tree = fastjson.loads(r.body)
    assert set(tree) == {"consumeTps", "offsetTable"} and len(tree["offsetTable"]) == 3
    for v in tree["offsetTable"].values():
        assert set(v) == {"brokerOffset", "consumerOffset", "lastTimestamp"}

    mq = MessageQueue(topic=topic, brokerName="wire", queueId=0)
    body = LockBatchRequestBody(consumerGroup="lg", clientId="c1", mqSet=[mq]).to_json()
    r = await call(client, broker.addr, RequestCode.LOCK_BATCH_MQ, None, body)
    assert r.code == RC.SUCCESS and fastjson.loads(r.body) == fastjson.loads(
        '{"lockOKMQSet":[{"brokerName":"wire","queueId":0,"topic":"' + topic + '"}]}')
    r = await call(client, broker.addr, RequestCode.UNLOCK_BATCH_MQ, None, body)
    assert r.code == RC.SUCCESS


async def test_broker_stats_data_shape(broker, client):
    """§11 BrokerStatsData: statsDay/statsHour/statsMinute each {avgpt,sum,tps}."""
    topic = "ConfStats"
    await _create_topic(client, broker.addr, topic)
    assert (await send(client, broker.addr, topic, b"s", queue_id=0)).code == RC.SUCCESS
    r = await call(client, broker.addr, RequestCode.VIEW_BROKER_STATS_DATA,
                   {"statsName": "TOPIC_PUT_NUMS", "statsKey": topic})
    assert r.code == RC.SUCCESS, r.remark
    tree = fastjson.loads(r.body)
    assert set(tree) == {"statsDay", "statsHour", "statsMinute"}
    for v in tree.values():
        assert set(v) == {"avgpt", "sum", "tps"}


async def test_check_client_config(broker, client):
    """§16 CHECK_CLIENT_CONFIG: TAG always SUCCESS; SQL92 with enablePropertyFilter=false -> SYSTEM_ERROR."""
    def body(sub):
        return fastjson.dumps({"clientId": "c", "group": "g", "subscriptionData": sub.to_obj()})

    tag = SubscriptionData(topic="T", subString="A", expressionType="TAG")
    r = await call(client, broker.addr, RequestCode.CHECK_CLIENT_CONFIG, None, body(tag))
    assert r.code == RC.SUCCESS
    sql = SubscriptionData(topic="T", subString="a > 1", expressionType="SQL92")
    r = await call(client, broker.addr, RequestCode.CHECK_CLIENT_CONFIG, None, body(sql))
    assert r.code == RC.SYSTEM_ERROR


# broker-behaviour §17, transcribed (remainHowManyDataToCommit only with the transient store pool).
RUNTIME_KEYS = {
    "brokerVersionDesc", "brokerVersion", "msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning",
    "msgPutTotalTodayNow", "msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning", "msgGetTotalTodayNow",
    "sendThreadPoolQueueSize", "sendThreadPoolQueueCapacity", "pullThreadPoolQueueSize",
    "pullThreadPoolQueueCapacity", "queryThreadPoolQueueSize", "queryThreadPoolQueueCapacity",
    "EndTransactionQueueSize", "EndTransactionThreadPoolQueueCapacity", "dispatchBehindBytes",
    "pageCacheLockTimeMills", "sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills",
    "queryThreadPoolQueueHeadWaitTimeMills", "earliestMessageTimeStamp", "startAcceptSendRequestTimeStamp",
    "remainTransientStoreBufferNumbs", "remainHowManyDataToFlush", "commitLogDirCapacity", "bootTimestamp",
    "runtime", "putTps", "getTotalTps", "commitLogMaxOffset", "commitLogMinOffset", "commitLogDiskRatio",
    "consumeQueueDiskRatio",
}


async def test_runtime_info_keys(broker, client):
    """§17 GET_BROKER_RUNTIME_INFO keys; mqadmin clusterList also reads getTransferedTps (its OutTPS column)."""
    r = await call(client, broker.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    table = fastjson.loads(r.body)["table"]
    assert RUNTIME_KEYS | {"getTransferedTps"} <= set(table), sorted((RUNTIME_KEYS | {"getTransferedTps"}) - set(table))
    assert all(isinstance(v, str) for v in table.values())
    for k in ("msgPutTotalTodayNow", "msgPutTotalTodayMorning", "msgPutTotalYesterdayMorning",
              "msgGetTotalTodayNow", "msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning", "bootTimestamp"):
        int(table[k])  # mqadmin parses these with Long.parseLong
    float(table["putTps"].split(" ")[0])
    float(table["getTransferedTps"].split(" ")[0])
    assert table["commitLogDirCapacity"].startswith("Total : ")


async def test_runtime_info_put_message_distribute_time(broker, client):
    """broker-behaviour §17: the store part of the runtime info has RocketMQ's 13 latency buckets."""
    r = await call(client, broker.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    table = fastjson.loads(r.body)["table"]
    value = table["putMessageDistributeTime"]
    assert value.startswith("[<=0ms]:") and value.count("]:") == 13


async def test_send_check_codes(broker, client):
    """broker-behaviour §5 checks 3-4: bad name SYSTEM_ERROR, not-sendable NO_PERMISSION, queue range SYSTEM_ERROR."""
    r = await send(client, broker.addr, "bad topic name!", b"x")
    assert r.code == RC.SYSTEM_ERROR, (r.code, r.remark)
    for topic in ("SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"):
        r = await send(client, broker.addr, topic, b"x")
        assert r.code == RC.NO_PERMISSION, (topic, r.code, r.remark)
    await _create_topic(client, broker.addr, "ConfSendQ", queues=2)
    r = await send(client, broker.addr, "ConfSendQ", b"x", queue_id=5)
    assert r.code == RC.SYSTEM_ERROR, (r.code, r.remark)


async def test_pull_check_codes(broker, client):
    """broker-behaviour §6 checks: queue range, unknown topic, subscriptions."""
    topic = "ConfPullChk"
    await _create_topic(client, broker.addr, topic, queues=2)
    r = await pull(client, broker.addr, "pcg", topic, 7, 0)
    assert r.code == RC.SYSTEM_ERROR, (r.code, r.remark)
    r = await pull(client, broker.addr, "pcg", "ConfNoSuchTopic", 0, 0)
    assert r.code == RC.TOPIC_NOT_EXIST, (r.code, r.remark)
    # Without the SUBSCRIPTION bit the heartbeat-registered subscription is used: none here.
    r = await pull(client, broker.addr, "pcg-nohb", topic, 0, 0, sys_flag=0)
    assert r.code == RC.SUBSCRIPTION_NOT_EXIST, (r.code, r.remark)
    # SQL92 while enablePropertyFilter=false (default) -> SYSTEM_ERROR.
    r = await pull(client, broker.addr, "pcg", topic, 0, 0, subscription="a > 1", expression_type="SQL92")
    assert r.code == RC.SYSTEM_ERROR, (r.code, r.remark)
    # consumeEnable=false -> NO_PERMISSION.
    from remoting.body.subscription_group import SubscriptionGroupConfig
    body = SubscriptionGroupConfig(groupName="pcg-off", consumeEnable=False).to_json()
    assert (await call(client, broker.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)).code == 0
    r = await pull(client, broker.addr, "pcg-off", topic, 0, 0)
    assert r.code == RC.NO_PERMISSION, (r.code, r.remark)


async def test_connection_list_bodies(broker):
    """§11 ConsumerConnection / ProducerConnection / GetConsumerListByGroupResponseBody from a heartbeat."""
    from remoting.body.heartbeat import ConsumerData, HeartbeatData, ProducerData

    c = RemotingClient(name="conn-client")
    try:
        hb = HeartbeatData(
            clientID="10.0.0.9@conn", producerDataSet=[ProducerData(groupName="connPG")],
            consumerDataSet=[ConsumerData(groupName="connCG", consumeFromWhere="CONSUME_FROM_FIRST_OFFSET",
                                          subscriptionDataSet=[SubscriptionData(topic="ConfConnT")])]).to_json()
        assert (await call(c, broker.addr, RequestCode.HEART_BEAT, body=hb)).code == RC.SUCCESS
        r = await call(c, broker.addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "connCG"})
        assert r.code == RC.SUCCESS, r.remark
        tree = fastjson.loads(r.body)
        assert set(tree) == {"connectionSet", "consumeFromWhere", "consumeType", "messageModel", "subscriptionTable"}
        assert (tree["consumeFromWhere"], tree["consumeType"], tree["messageModel"]) == (
            "CONSUME_FROM_FIRST_OFFSET", "CONSUME_PASSIVELY", "CLUSTERING")
        conn = tree["connectionSet"][0]
        assert set(conn) == {"clientAddr", "clientId", "language", "version"}
        assert (conn["clientId"], conn["language"], conn["version"]) == ("10.0.0.9@conn", "JAVA", 407)
        assert set(tree["subscriptionTable"]["ConfConnT"]) == {
            "classFilterMode", "codeSet", "expressionType", "subString", "subVersion", "tagsSet", "topic"}
        r = await call(c, broker.addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "connPG"})
        assert r.code == RC.SUCCESS and set(fastjson.loads(r.body)) == {"connectionSet"}
        assert fastjson.loads(r.body)["connectionSet"][0]["language"] == "JAVA"
        r = await call(c, broker.addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "connCG"})
        assert r.code == RC.SUCCESS and fastjson.loads(r.body) == {"consumerIdList": ["10.0.0.9@conn"]}
    finally:
        await c.close()


async def test_send_back_max_reconsume_times_by_client_version(broker, client):
    """§7/§14.4: header maxReconsumeTimes counts only from V3_4_9 (121); delayLevel < 0 goes straight to the DLQ."""
    topic = "ConfSendBack"
    await _create_topic(client, broker.addr, topic, queues=1)
    r = await send(client, broker.addr, topic, b"back", queue_id=0)
    assert r.code == RC.SUCCESS
    phys = int(r.ext_fields["msgId"][16:], 16)  # offset msgId = host(8 hex) port(8 hex) commit-log offset(16 hex)

    async def dlq_size(group):
        r = await call(client, broker.addr, RequestCode.GET_MAX_OFFSET, {"topic": f"%DLQ%{group}", "queueId": 0})
        return int(r.ext_fields["offset"]) if r.code == RC.SUCCESS else 0

    async def back(group, version, **extra):
        cmd = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK,
                                      {"offset": phys, "group": group, "delayLevel": 0, **extra})
        cmd.version = version
        return await client.invoke(broker.addr, cmd, 5.0)

    assert (await back("sbNew", 407, maxReconsumeTimes=0)).code == RC.SUCCESS
    await async_wait_until(lambda: dlq_size("sbNew"), 5.0, what="dead-lettered")
    assert (await back("sbOld", 100, maxReconsumeTimes=0)).code == RC.SUCCESS  # header ignored: a retry
    r = await client.invoke(broker.addr, RemotingCommand.request(
        RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": phys, "group": "sbNeg", "delayLevel": -1}), 5.0)
    assert r.code == RC.SUCCESS
    await async_wait_until(lambda: dlq_size("sbNeg"), 5.0, what="dead-lettered by delayLevel -1")
    assert await dlq_size("sbOld") == 0  # written before sbNeg's record, so dispatched by now
    r = await client.invoke(broker.addr, RemotingCommand.request(
        RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": 1 << 40, "group": "sbNeg", "delayLevel": 0}), 5.0)
    assert r.code == RC.SYSTEM_ERROR


async def test_send_to_retry_topic_over_max_goes_to_dlq(broker, client):
    """§5 step 5: %RETRY% send with reconsumeTimes >= maxReconsumeTimes (header, client >= 121) -> %DLQ% queue 0."""
    r = await send(client, broker.addr, "%RETRY%rtG", b"r", queue_id=0, j=3, l=3)
    assert r.code == RC.SUCCESS, r.remark
    await wait_max_offset(client, broker.addr, "%DLQ%rtG", 0, 1)
    r = await send(client, broker.addr, "%RETRY%rtG", b"r", queue_id=0, j=2, l=3)
    assert r.code == RC.SUCCESS, r.remark
    await wait_max_offset(client, broker.addr, "%RETRY%rtG", 0, 1)


async def test_end_transaction_answers(broker, client):
    """broker-behaviour §10: unknown half message -> SYSTEM_ERROR; type 0 (unknown) gets no answer at all."""
    h = {"producerGroup": "txPG", "tranStateTableOffset": 0, "commitLogOffset": 1 << 40, "commitOrRollback": 8,
         "msgId": "7F0000010000000000000000000000AA", "fromTransactionCheck": "false"}
    r = await call(client, broker.addr, RequestCode.END_TRANSACTION, h)
    assert (r.code, r.remark) == (RC.SYSTEM_ERROR, "Find prepared transaction message failed")
    from remoting.errors import RemotingTimeoutError

    with pytest.raises(RemotingTimeoutError):
        await call(client, broker.addr, RequestCode.END_TRANSACTION, {**h, "commitOrRollback": 0}, timeout=0.3)


async def test_5x_and_acl_extra_keys_are_ignored(broker, client):
    """§8: extra keys (5.x ns/nsd/bname/oway/lo, ACL AccessKey/Signature) do not change the answer."""
    extra = {"ns": "x", "nsd": "false", "bname": "wire", "oway": "false", "lo": "false",
             "AccessKey": "ak", "Signature": "sig", "setZeroIfNotFound": "true"}
    topic = "ConfExtraKeys"
    await _create_topic(client, broker.addr, topic, queues=1)
    r = await call(client, broker.addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": 0, **extra})
    assert r.code == RC.SUCCESS and r.ext_fields == {"offset": "0"}
    r = await send(client, broker.addr, topic, b"x", queue_id=0, **extra)
    assert r.code == RC.SUCCESS, r.remark
    await wait_max_offset(client, broker.addr, topic, 0, 1)
    r = await pull(client, broker.addr, "xg", topic, 0, 0)
    assert r.code == RC.SUCCESS

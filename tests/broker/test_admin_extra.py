"""The less common admin requests against a real bin/mqbroker over loopback.

QUERY_CONSUME_QUEUE (321), QUERY_CORRECTION_OFFSET (308), RESUME_CHECK_HALF_MESSAGE (323),
GET_ALL_PRODUCER_INFO (328), REGISTER_FILTER_SERVER (301) and the ACL 1.0 codes 50-54 on a
broker without ACL: each with its success answer and its bad-input answers.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess

import pytest

from broker.processor.filter_server_processor import FilterServerManager
from client.admin import MQAdmin
from client.exceptions import MQBrokerError
from client.message import Message, SendStatus
from client.transaction_producer import LocalTransactionState, TransactionProducer
from common.message import (
    MessageConst,
    MessageSysFlag,
    create_offset_msg_id,
    decode_messages,
    decode_offset_msg_id,
)
from common.mixall import RMQ_SYS_TRANS_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC
from common.util import java_string_hash
from remoting import fastjson
from remoting.body.admin_extra import (
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    QueryCorrectionOffsetBody,
)
from remoting.body.heartbeat import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import BrokerProc, call, pull_header, send, wait_max_offset
from tests.client.cluster import Cluster
from tests.support import BIN, ROOT, async_wait_until, free_port, wait_until

RC = ResponseCode
LONG_MAX = 2**63 - 1


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    # no transaction check during the module: the half queue changes only when a test changes it
    b = BrokerProc(tmp_path_factory.mktemp("admin-extra"), "adminx", transactionCheckInterval=600_000,
                   enablePropertyFilter="true")
    b.start()
    yield b
    b.stop()


@pytest.fixture
async def client():
    c = RemotingClient(name="admin-extra")
    yield c
    await c.close()


async def _create_topic(client, addr, topic, queues=2):
    r = await call(client, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues, "perm": 6,
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"})
    assert r.code == RC.SUCCESS, r.remark


async def _cq(client, addr, topic, queue_id=0, index=0, count=10, group=None):
    h = {"topic": topic, "queueId": queue_id, "index": index, "count": count}
    if group is not None:
        h["consumerGroup"] = group
    return await call(client, addr, RequestCode.QUERY_CONSUME_QUEUE, h)


# -- QUERY_CONSUME_QUEUE -----------------------------------------------------------------------


async def test_query_consume_queue_units(broker, client):
    topic = "AdmCqT"
    await _create_topic(client, broker.addr, topic)
    offsets = []
    for i, tag in enumerate(["TagA", "TagB", "TagA"]):
        r = await send(client, broker.addr, topic, f"m{i}".encode(), {"TAGS": tag}, queue_id=0)
        assert r.code == RC.SUCCESS, r.remark
        offsets.append(decode_offset_msg_id(r.ext_fields["msgId"])[1])
    await wait_max_offset(client, broker.addr, topic, 0, 3)

    r = await _cq(client, broker.addr, topic)
    assert r.code == RC.SUCCESS, r.remark
    tree = fastjson.loads(r.body)
    assert set(tree) == {"maxQueueIndex", "minQueueIndex", "queueData"}  # no group asked: no subscription keys
    body = QueryConsumeQueueResponseBody.from_json(r.body)
    assert (body.minQueueIndex, body.maxQueueIndex) == (0, 3)
    assert [u.physicOffset for u in body.queueData] == offsets
    assert [u.tagsCode for u in body.queueData] == [java_string_hash(t) for t in ("TagA", "TagB", "TagA")]
    assert all(u.physicSize > 0 and not u.eval and u.msg is None for u in body.queueData)
    assert set(tree["queueData"][0]) == {"eval", "physicOffset", "physicSize", "tagsCode"}
    # the unit's size is the record's: VIEW_MESSAGE_BY_ID of that offset decodes one whole message
    v = await call(client, broker.addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": offsets[1]})
    assert v.code == RC.SUCCESS and len(v.body) == body.queueData[1].physicSize
    assert decode_messages(v.body)[0].body == b"m1"

    # count and index bound the answer
    r = await _cq(client, broker.addr, topic, index=1, count=1)
    assert [u.physicOffset for u in QueryConsumeQueueResponseBody.from_json(r.body).queueData] == [offsets[1]]
    r = await _cq(client, broker.addr, topic, count=0)
    assert r.code == RC.SUCCESS and QueryConsumeQueueResponseBody.from_json(r.body).queueData == []


async def test_query_consume_queue_bad_input(broker, client):
    topic = "AdmCqBad"
    await _create_topic(client, broker.addr, topic)
    assert (await send(client, broker.addr, topic, b"x", queue_id=0)).code == RC.SUCCESS
    await wait_max_offset(client, broker.addr, topic, 0, 1)
    # index past the end: SUCCESS without a body, the remark says why (as RocketMQ)
    r = await _cq(client, broker.addr, topic, index=1)
    assert (r.code, r.remark, r.body) == (RC.SUCCESS, f"Index 1 of 0@{topic} is not exist!", None)
    r = await _cq(client, broker.addr, topic, index=-1)
    assert (r.code, r.remark) == (RC.SUCCESS, f"Index -1 of 0@{topic} is not exist!")
    # a queue that does not exist (bad queueId, unknown topic, a name that is no topic name)
    for t, q in ((topic, 7), (topic, -1), ("AdmCqNope", 0), ("../../etc", 0)):
        r = await _cq(client, broker.addr, t, queue_id=q)
        assert (r.code, r.remark) == (RC.SYSTEM_ERROR, f"{q}@{t} is not exist!")
    # missing topic / non-numeric queueId
    r = await call(client, broker.addr, RequestCode.QUERY_CONSUME_QUEUE, {"queueId": 0, "index": 0, "count": 1})
    assert r.code == RC.SYSTEM_ERROR and "topic" in r.remark
    r = await call(client, broker.addr, RequestCode.QUERY_CONSUME_QUEUE, {"topic": topic, "queueId": "x"})
    assert r.code == RC.SYSTEM_ERROR and "queueId" in r.remark


async def test_query_consume_queue_with_consumer_group(broker, client):
    topic = "AdmCqGroup"
    await _create_topic(client, broker.addr, topic)
    assert (await send(client, broker.addr, topic, b"x", {"TAGS": "TagA"}, queue_id=0)).code == RC.SUCCESS
    await wait_max_offset(client, broker.addr, topic, 0, 1)
    r = await _cq(client, broker.addr, topic, group="admOffline")
    tree = fastjson.loads(r.body)
    assert tree["filterData"] == f"admOffline@{topic} is not online!" and "subscriptionData" not in tree

    consumer = RemotingClient(name="adm-consumer")
    try:
        sql_topic = "AdmCqSql"
        await _create_topic(client, broker.addr, sql_topic)
        assert (await send(client, broker.addr, sql_topic, b"y", {"a": "2"}, queue_id=0)).code == RC.SUCCESS
        await wait_max_offset(client, broker.addr, sql_topic, 0, 1)
        subs = [SubscriptionData(topic=topic, subString="TagA", tagsSet=["TagA"], codeSet=[java_string_hash("TagA")],
                                 subVersion=7),
                SubscriptionData(topic=sql_topic, subString="a > 1", expressionType="SQL92", subVersion=8)]
        hb = HeartbeatData(clientID="127.0.0.1@adm", consumerDataSet=[
            ConsumerData(groupName="admOnline", subscriptionDataSet=subs)]).to_json()
        assert (await call(consumer, broker.addr, RequestCode.HEART_BEAT, body=hb)).code == RC.SUCCESS

        r = await _cq(client, broker.addr, topic, group="admOnline")
        body = QueryConsumeQueueResponseBody.from_json(r.body)
        assert body.subscriptionData.subString == "TagA" and body.subscriptionData.subVersion == 7
        assert body.filterData == "null"  # a TAG subscription has no registered filter data
        assert len(body.queueData) == 1

        r = await _cq(client, broker.addr, sql_topic, group="admOnline")
        body = QueryConsumeQueueResponseBody.from_json(r.body)
        assert body.subscriptionData.expressionType == "SQL92"
        fd = fastjson.loads(body.filterData)
        assert (fd["consumerGroup"], fd["topic"], fd["expression"], fd["expressionType"], fd["clientVersion"]) == (
            "admOnline", sql_topic, "a > 1", "SQL92", 8)
        # pretty-printed as JSON.toJSONString(filterData, true): a key per line, tabs, int[] bitPos on one line
        assert body.filterData.startswith('{\n\t"bloomFilterData":{\n\t\t"bitNum":'), body.filterData
        assert '\n\t"clientVersion":8,\n' in body.filterData and body.filterData.endswith('\n\t"topic":"AdmCqSql"\n}')
        assert re.search(r'\n\t\t"bitPos":\[\d+(,\d+)*\]\n', body.filterData), body.filterData
    finally:
        await consumer.close()


# -- QUERY_CORRECTION_OFFSET ----------------------------------------------------------------------


async def _commit(client, addr, group, topic, qid, offset):
    r = await call(client, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": group, "topic": topic, "queueId": qid, "commitOffset": offset})
    assert r.code == RC.SUCCESS, r.remark


async def _correction(client, addr, topic, compare, filter_groups=None):
    h = {"topic": topic, "compareGroup": compare}
    if filter_groups is not None:
        h["filterGroups"] = filter_groups
    r = await call(client, addr, RequestCode.QUERY_CORRECTION_OFFSET, h)
    assert r.code == RC.SUCCESS, r.remark
    return r


async def test_query_correction_offset(broker, client):
    topic = "AdmCorr"
    await _create_topic(client, broker.addr, topic)
    await _commit(client, broker.addr, "corrA", topic, 0, 5)
    await _commit(client, broker.addr, "corrA", topic, 1, 2)
    await _commit(client, broker.addr, "corrB", topic, 0, 3)
    await _commit(client, broker.addr, "corrC", topic, 0, 1)
    await _commit(client, broker.addr, "corrC", "AdmCorrOther", 0, 0)  # another topic: not counted

    r = await _correction(client, broker.addr, topic, "corrNone")
    assert r.body == b'{"correctionOffsets":{0:1,1:2}}'  # Integer keys bare, as fastjson writes them
    body = await _correction(client, broker.addr, topic, "corrNone", "corrC")
    assert QueryCorrectionOffsetBody.from_json(body.body).correctionOffsets == {0: 3, 1: 2}
    body = await _correction(client, broker.addr, topic, "corrNone", "corrB,corrC")
    assert QueryCorrectionOffsetBody.from_json(body.body).correctionOffsets == {0: 5, 1: 2}
    # compareGroup behind the others' minimum: nothing to correct on that queue (Long.MAX_VALUE)
    body = await _correction(client, broker.addr, topic, "corrC", "corrC")
    assert QueryCorrectionOffsetBody.from_json(body.body).correctionOffsets == {0: LONG_MAX, 1: 2}
    body = await _correction(client, broker.addr, topic, "corrA", "corrC")
    assert QueryCorrectionOffsetBody.from_json(body.body).correctionOffsets == {0: 3, 1: 2}
    # leaving groups out only reads: their offsets are still there (RocketMQ's removes them)
    r = await call(client, broker.addr, RequestCode.QUERY_CONSUMER_OFFSET,
                   {"consumerGroup": "corrC", "topic": topic, "queueId": 0})
    assert (r.code, r.ext_fields.get("offset")) == (RC.SUCCESS, "1")
    # a topic nobody consumes: empty table
    r = await _correction(client, broker.addr, "AdmCorrUnknown", "corrA")
    assert QueryCorrectionOffsetBody.from_json(r.body).correctionOffsets == {}


async def test_query_correction_offset_missing_header(broker, client):
    for h in ({"topic": "AdmCorr"}, {"compareGroup": "corrA"}, {}):
        r = await call(client, broker.addr, RequestCode.QUERY_CORRECTION_OFFSET, h)
        assert r.code == RC.SYSTEM_ERROR and "is null" in r.remark, (h, r.remark)


# -- RESUME_CHECK_HALF_MESSAGE -----------------------------------------------------------------------


async def _half_units(client, addr):
    r = await _cq(client, addr, RMQ_SYS_TRANS_HALF_TOPIC, count=100)
    if r.code != RC.SUCCESS or r.body is None:
        return []
    return QueryConsumeQueueResponseBody.from_json(r.body).queueData


async def _view(client, addr, offset):
    r = await call(client, addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": offset})
    assert r.code == RC.SUCCESS, r.remark
    return decode_messages(r.body)[0]


async def test_resume_check_half_message(broker, client):
    topic = "AdmTxT"
    await _create_topic(client, broker.addr, topic)
    before = len(await _half_units(client, broker.addr))
    r = await send(client, broker.addr, topic, b"half-body", {"TRAN_MSG": "true", "PGROUP": "admTxPG", "TAGS": "TagT",
                                                                 MessageConst.TRANSACTION_CHECK_TIMES: "15"},
                   queue_id=1, sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
    assert r.code == RC.SUCCESS, r.remark
    half_id = r.ext_fields["msgId"]
    await wait_max_offset(client, broker.addr, RMQ_SYS_TRANS_HALF_TOPIC, 0, before + 1)

    r = await call(client, broker.addr, RequestCode.RESUME_CHECK_HALF_MESSAGE, {"msgId": half_id})
    assert (r.code, r.remark) == (RC.SUCCESS, None)
    await wait_max_offset(client, broker.addr, RMQ_SYS_TRANS_HALF_TOPIC, 0, before + 2)
    units = await _half_units(client, broker.addr)
    original = await _view(client, broker.addr, decode_offset_msg_id(half_id)[1])
    copy = await _view(client, broker.addr, units[-1].physicOffset)
    assert (copy.topic, copy.queue_id, copy.body) == (RMQ_SYS_TRANS_HALF_TOPIC, 0, b"half-body")
    assert copy.properties[MessageConst.TRANSACTION_CHECK_TIMES] == "0"
    assert original.properties[MessageConst.TRANSACTION_CHECK_TIMES] == "15"
    assert (copy.properties[MessageConst.REAL_TOPIC], copy.properties[MessageConst.REAL_QID]) == (topic, "1")
    assert copy.properties == {**original.properties, MessageConst.TRANSACTION_CHECK_TIMES: "0"}
    assert (copy.born_timestamp, copy.born_host, copy.sys_flag) == (
        original.born_timestamp, original.born_host, original.sys_flag)
    assert units[-1].tagsCode == java_string_hash("TagT")


async def test_resume_check_half_message_bad_ids(broker, client):
    topic = "AdmTxBad"
    await _create_topic(client, broker.addr, topic)
    r = await send(client, broker.addr, topic, b"plain", queue_id=0)
    assert r.code == RC.SUCCESS
    plain_id = r.ext_fields["msgId"]
    await wait_max_offset(client, broker.addr, topic, 0, 1)
    host_hex = plain_id[:16]
    before = len(await _half_units(client, broker.addr))
    cases = {
        "missing": {},
        "not hex": {"msgId": "zz"},
        "wrong length": {"msgId": plain_id[:-2]},
        "no such offset": {"msgId": host_hex + f"{1 << 40:016X}"},
        "not a record start": {"msgId": host_hex + f"{decode_offset_msg_id(plain_id)[1] + 1:016X}"},
        "other broker": {"msgId": "0A0000FF00001F90" + plain_id[16:]},
        "not a half message": {"msgId": plain_id},
    }
    for what, h in cases.items():
        r = await call(client, broker.addr, RequestCode.RESUME_CHECK_HALF_MESSAGE, h)
        assert r.code == RC.SYSTEM_ERROR, what
        assert r.remark.startswith("Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."), what
    assert "not a half message" in r.remark
    assert len(await _half_units(client, broker.addr)) == before  # nothing was put


async def test_resume_check_of_a_discarded_half_message(tmp_path):
    """The operator's case: a half message checked transactionCheckMax times was moved to
    TRANS_CHECK_MAX_TIME_TOPIC; resuming it puts a copy with check count 0 back into the half queue."""
    b = BrokerProc(tmp_path, "adminx-tx", transactionCheckInterval=50)
    b.start()
    c = RemotingClient(name="admin-extra-tx")
    try:
        topic = "AdmTxDiscard"
        await _create_topic(c, b.addr, topic)
        r = await send(c, b.addr, topic, b"too-often", {"TRAN_MSG": "true", "PGROUP": "admTxPG2",
                                                        MessageConst.TRANSACTION_CHECK_TIMES: "15"},
                       queue_id=0, sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
        assert r.code == RC.SUCCESS, r.remark
        # the next check round discards it (15 >= transactionCheckMax 15)
        await wait_max_offset(c, b.addr, TRANS_CHECK_MAX_TIME_TOPIC, 0, 1)
        (unit,) = QueryConsumeQueueResponseBody.from_json(
            (await _cq(c, b.addr, TRANS_CHECK_MAX_TIME_TOPIC)).body).queueData
        discarded_id = create_offset_msg_id(("127.0.0.1", b.port), unit.physicOffset)
        assert (await _view(c, b.addr, unit.physicOffset)).topic == TRANS_CHECK_MAX_TIME_TOPIC

        r = await call(c, b.addr, RequestCode.RESUME_CHECK_HALF_MESSAGE, {"msgId": discarded_id})
        assert (r.code, r.remark) == (RC.SUCCESS, None)
        await wait_max_offset(c, b.addr, RMQ_SYS_TRANS_HALF_TOPIC, 0, 2)
        copy = await _view(c, b.addr, (await _half_units(c, b.addr))[-1].physicOffset)
        assert (copy.topic, copy.queue_id, copy.body) == (RMQ_SYS_TRANS_HALF_TOPIC, 0, b"too-often")
        assert copy.properties[MessageConst.TRANSACTION_CHECK_TIMES] == "0"
        assert copy.properties[MessageConst.REAL_TOPIC] == topic
    finally:
        await c.close()
        b.stop()


class _Undecided:
    """A local transaction that stays unknown until the test decides (the broker keeps checking)."""

    def __init__(self):
        self.answer = LocalTransactionState.UNKNOW
        self.checks = 0

    def execute_local_transaction(self, msg, arg):
        return LocalTransactionState.UNKNOW

    def check_local_transaction(self, msg):
        self.checks += 1
        return self.answer


async def test_resumed_half_message_is_checked_again_and_committed(tmp_path):
    """End to end with a real producer: checked transactionCheckMax (1) times, the half message is
    discarded to TRANS_CHECK_MAX_TIME_TOPIC; after RESUME_CHECK_HALF_MESSAGE the broker checks it
    again, the producer now commits, and the message reaches its topic."""
    cl = Cluster(tmp_path, brokers=1, transactionCheckInterval=100, transactionTimeOut=200, transactionCheckMax=1)
    b = cl.brokers[0]
    c = RemotingClient(name="admin-extra-e2e")
    listener = _Undecided()
    producer = TransactionProducer("admE2ePG", cl.namesrv_addr, transaction_listener=listener)
    try:
        topic = "AdmTxResume"
        await _create_topic(c, b.addr, topic, queues=1)
        await producer.start()
        sent = await producer.send_message_in_transaction(Message(topic, b"decide later"))
        assert sent.send_status == SendStatus.SEND_OK
        await wait_max_offset(c, b.addr, TRANS_CHECK_MAX_TIME_TOPIC, 0, 1, timeout=20)
        assert listener.checks >= 1
        (unit,) = QueryConsumeQueueResponseBody.from_json(
            (await _cq(c, b.addr, TRANS_CHECK_MAX_TIME_TOPIC)).body).queueData
        r = await call(c, b.addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": 0})
        assert r.ext_fields["offset"] == "0"  # not delivered

        listener.answer = LocalTransactionState.COMMIT_MESSAGE
        async with MQAdmin(cl.namesrv_addr) as admin:
            assert await admin.resume_check_half_message(
                create_offset_msg_id(("127.0.0.1", b.port), unit.physicOffset)) is True
        await wait_max_offset(c, b.addr, topic, 0, 1, timeout=20)
        r = await call(c, b.addr, RequestCode.PULL_MESSAGE, pull_header("admE2eCG", topic, 0, 0))
        (m,) = decode_messages(r.body)
        assert (m.body, m.properties[MessageConst.UNIQ_KEY]) == (b"decide later", sent.msg_id)
    finally:
        await producer.shutdown()
        await c.close()
        cl.stop()


# -- GET_ALL_PRODUCER_INFO ----------------------------------------------------------------------------


async def test_get_all_producer_info(broker, client):
    producer = RemotingClient(name="adm-producer")
    try:
        hb = HeartbeatData(clientID="127.0.0.1@admProd", producerDataSet=[
            ProducerData(groupName="admPG1"), ProducerData(groupName="admPG2")]).to_json()
        assert (await call(producer, broker.addr, RequestCode.HEART_BEAT, body=hb)).code == RC.SUCCESS
        r = await call(client, broker.addr, RequestCode.GET_ALL_PRODUCER_INFO)
        assert r.code == RC.SUCCESS, r.remark
        tree = fastjson.loads(r.body)
        assert set(tree) == {"data"}
        assert set(tree["data"]["admPG1"][0]) == {"clientId", "language", "lastUpdateTimestamp", "remoteIP", "version"}
        table = ProducerTableInfo.from_json(r.body)
        for g in ("admPG1", "admPG2"):
            (p,) = table.data[g]
            assert (p.clientId, p.language) == ("127.0.0.1@admProd", "JAVA")
            assert p.remoteIP.startswith("/127.0.0.1:") and p.lastUpdateTimestamp > 0
            assert str(p).startswith("clientId=127.0.0.1@admProd,remoteIP=/127.0.0.1:")
    finally:
        await producer.close()
    # the producer's connection closed: it leaves the table
    async def gone():
        r = await call(client, broker.addr, RequestCode.GET_ALL_PRODUCER_INFO)
        return "admPG1" not in ProducerTableInfo.from_json(r.body).data

    await async_wait_until(gone, 5.0, what="producer group admPG1 gone")


# -- REGISTER_FILTER_SERVER -----------------------------------------------------------------------------


async def test_register_filter_server(broker, client):
    r = await call(client, broker.addr, RequestCode.REGISTER_FILTER_SERVER, {"filterServerAddr": "127.0.0.1:45000"})
    assert r.code == RC.SUCCESS, r.remark
    assert r.ext_fields == {"brokerName": "adminx", "brokerId": "0"}
    r = await call(client, broker.addr, RequestCode.REGISTER_FILTER_SERVER, {})
    assert r.code == RC.SYSTEM_ERROR and "filterServerAddr" in r.remark
    r = await call(client, broker.addr, RequestCode.REGISTER_FILTER_SERVER, {"filterServerAddr": " "})
    assert r.code == RC.SYSTEM_ERROR


def test_filter_server_table_expires_idle_and_closed():
    """FilterServerManager keeps a registration 30 s (here 50 ms) after its last renewal or until its connection closes."""

    class Conn:
        closed = False

    mgr = FilterServerManager(max_idle_ms=50)
    a, b = Conn(), Conn()
    mgr.register_filter_server(a, "10.0.0.1:40000")
    mgr.register_filter_server(b, "10.0.0.2:40000")
    assert sorted(mgr.build_new_filter_server_list()) == ["10.0.0.1:40000", "10.0.0.2:40000"]
    b.closed = True
    assert mgr.build_new_filter_server_list() == ["10.0.0.1:40000"]
    wait_until(lambda: mgr.build_new_filter_server_list() == [], 5.0, what="idle filter server dropped")
    assert mgr.table == {}


# -- ACL 1.0 admin on a broker without ACL -------------------------------------------------------------------

ACL_OFF = "The broker does not enable acl."


@pytest.mark.parametrize("code, header, want", [
    (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {"accessKey": "ak", "secretKey": "12345678", "admin": "true"},
     RC.UPDATE_AND_CREATE_ACL_CONFIG_FAILED),
    (RequestCode.DELETE_ACL_CONFIG, {"accessKey": "ak"}, RC.DELETE_ACL_CONFIG_FAILED),
    (RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": "10.0.0.*", "aclFileFullPath": "x.yml"},
     RC.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED),
    (RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}, RC.SYSTEM_ERROR),
    (RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, {}, RC.SYSTEM_ERROR),
], ids=lambda v: v.name if isinstance(v, RequestCode) else None)
async def test_acl_admin_without_acl(broker, client, code, header, want):
    r = await call(client, broker.addr, code, header)
    assert (r.code, r.remark, r.body) == (want, ACL_OFF, None)


@pytest.mark.parametrize("code, header, missing", [
    (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {"secretKey": "12345678"}, "accessKey"),
    (RequestCode.DELETE_ACL_CONFIG, {}, "accessKey"),
    (RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": "10.0.0.*"}, "aclFileFullPath"),
], ids=lambda v: v.name if isinstance(v, RequestCode) else None)
async def test_acl_admin_missing_header_field(broker, client, code, header, missing):
    """As 4.9.7, the header is decoded before the (missing) validator is used: SYSTEM_ERROR naming the field."""
    r = await call(client, broker.addr, code, header)
    assert r.code == RC.SYSTEM_ERROR and f"<{missing}>" in r.remark, r.remark


# -- the MQAdmin client and bin/mqadmin ----------------------------------------------------------------------


def _mqadmin(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    # -b names the broker, so the NameServer is never asked: a closed port will do
    cmd = [str(BIN / "mqadmin"), *args, "-n", f"127.0.0.1:{free_port()}"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=env, cwd=str(ROOT))


async def test_mqadmin_client_and_tool(broker, client):
    topic = "AdmTool"
    await _create_topic(client, broker.addr, topic)
    r = await send(client, broker.addr, topic, b"tool", {"TAGS": "TagX"}, queue_id=1)
    assert r.code == RC.SUCCESS
    plain_id = r.ext_fields["msgId"]
    r = await send(client, broker.addr, topic, b"half", {"TRAN_MSG": "true", "PGROUP": "admToolPG"}, queue_id=1,
                   sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
    half_id = r.ext_fields["msgId"]
    await wait_max_offset(client, broker.addr, topic, 1, 1)
    await _commit(client, broker.addr, "toolA", topic, 1, 1)

    async with MQAdmin(f"127.0.0.1:{free_port()}") as admin:
        body = await admin.query_consume_queue(broker.addr, topic, 1, 0, 5)
        assert [u.tagsCode for u in body.queueData] == [java_string_hash("TagX")]
        with pytest.raises(MQBrokerError, match="Index 9 of 1@AdmTool is not exist!"):
            await admin.query_consume_queue(broker.addr, topic, 1, 9)
        with pytest.raises(MQBrokerError, match="is not exist!"):
            await admin.query_consume_queue(broker.addr, topic, 5, 0)
        assert await admin.query_correction_offset(broker.addr, topic, "toolNone") == {1: 1}
        assert await admin.query_correction_offset(broker.addr, topic, "toolNone", ["toolA"]) == {}
        assert await admin.resume_check_half_message(half_id) is True
        assert await admin.resume_check_half_message(plain_id) is False
        producer = RemotingClient(name="adm-tool-producer")
        try:
            hb = HeartbeatData(clientID="127.0.0.1@tool", producerDataSet=[ProducerData(groupName="admToolPG")])
            assert (await call(producer, broker.addr, RequestCode.HEART_BEAT, body=hb.to_json())).code == RC.SUCCESS
            table = await admin.get_all_producer_info(broker.addr)
            assert [p.clientId for p in table.data["admToolPG"]] == ["127.0.0.1@tool"]

            out = await asyncio.to_thread(_mqadmin, "producer", "-b", broker.addr)
            assert out.returncode == 0, out.stderr
            assert re.search(r"^producer group \(admToolPG\) instance : clientId=127\.0\.0\.1@tool,remoteIP=/127\.0\.0\.1:"
                             r"\d+, language=JAVA, version=\d+, lastUpdateTimestamp=\d+$", out.stdout, re.M), out.stdout
        finally:
            await producer.close()

    out = await asyncio.to_thread(_mqadmin, "queryCq", "-t", topic, "-q", "1", "-i", "0", "-b", broker.addr)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Queue data: \nmax: 1, min: 0\n======================================\nidx: 0\n"
                                 "ConsumeQueueData{physicOffset=")
    assert f"tagsCode={java_string_hash('TagX')}, extendDataJson='null', bitMap='null', eval=false, msg='null'}}" \
        in out.stdout
    out = await asyncio.to_thread(_mqadmin, "queryCq", "-t", topic, "-q", "1", "-i", "0", "-b", broker.addr,
                                  "-g", "toolOffline")
    assert f"Filter data: \ntoolOffline@{topic} is not online!\n" in out.stdout
    out = await asyncio.to_thread(_mqadmin, "queryCq", "-t", topic, "-q", "1", "-i", "7", "-b", broker.addr)
    assert out.returncode == 1 and f"Index 7 of 1@{topic} is not exist!" in out.stderr

"""SEND_MESSAGE / V2 / BATCH and PULL_MESSAGE over loopback against a real broker process."""

from __future__ import annotations

import time

import pytest

from broker.transaction.transactional_message_util import java_properties_string
from common.message import MessageSysFlag, decode_offset_msg_id, encode_batch_body
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.broker.helpers import call, messages, pull, send, send_header_v2, wait_max_offset


async def test_send_v2_then_pull_returns_the_stored_record(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        r = await send(c, addr, "SendPullA", b"hello", {"TAGS": "tagA", "KEYS": "k1", "UNIQ_KEY": "U1", "WAIT": "true"})
        assert r.code == ResponseCode.SUCCESS, r.remark
        ext = r.ext_fields
        assert ext["queueId"] == "0" and ext["queueOffset"] == "0"
        assert ext["MSG_REGION"] == "DefaultRegion" and ext["TRACE_ON"] == "true"
        host, phys = decode_offset_msg_id(ext["msgId"])
        assert host == ("127.0.0.1", shared_broker.port)
        r2 = await send(c, addr, "SendPullA", b"world", {"TAGS": "tagB"})
        assert r2.ext_fields["queueOffset"] == "1"

        async def found():
            p = await pull(c, addr, "gA", "SendPullA", 0, 0)
            return p if p.code == ResponseCode.SUCCESS and len(messages(p)) == 2 else None

        from tests.support import async_wait_until

        p = await async_wait_until(found, 5, what="2 messages pullable")
        assert p.remark == "FOUND"
        assert p.ext_fields["nextBeginOffset"] == "2"
        assert p.ext_fields["minOffset"] == "0" and p.ext_fields["maxOffset"] == "2"
        assert p.ext_fields["suggestWhichBrokerId"] == "0"
        m0, m1 = messages(p)
        assert m0.body == b"hello" and m1.body == b"world"
        assert m0.commit_log_offset == phys
        # WAIT is not stored; CLUSTER is added
        assert "WAIT" not in m0.properties
        assert m0.properties["CLUSTER"] == "TestCluster"
        assert m0.properties["TAGS"] == "tagA" and m0.properties["UNIQ_KEY"] == "U1"
        assert m0.store_host == ("127.0.0.1", shared_broker.port)


async def test_send_v1_long_header_names(shared_broker):
    h = send_header_v2("SendV1", {"TAGS": "x"})
    v1 = {
        "producerGroup": h["a"], "topic": h["b"], "defaultTopic": h["c"], "defaultTopicQueueNums": h["d"],
        "queueId": 1, "sysFlag": 0, "bornTimestamp": h["g"], "flag": 7, "properties": h["i"],
    }
    async with RemotingClient() as c:
        r = await call(c, shared_broker.addr, RequestCode.SEND_MESSAGE, v1, b"v1-body")
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert r.ext_fields["queueId"] == "1"
        await wait_max_offset(c, shared_broker.addr, "SendV1", 1, 1)
        p = await pull(c, shared_broker.addr, "gV1", "SendV1", 1, 0)
        assert p.code == ResponseCode.SUCCESS
        (m,) = messages(p)
        assert m.body == b"v1-body" and m.flag == 7


async def test_batch_send_goes_to_one_queue_with_consecutive_offsets(shared_broker):
    class M:
        def __init__(self, i):
            self.body = f"b{i}".encode()
            self.flag = 0
            self.properties = {"UNIQ_KEY": f"UK{i}", "TAGS": "bt"}

    body = encode_batch_body([M(i) for i in range(16)])
    async with RemotingClient() as c:
        h = send_header_v2("BatchT", {}, queue_id=2, m="true")
        r = await call(c, shared_broker.addr, RequestCode.SEND_BATCH_MESSAGE, h, body)
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert r.ext_fields["queueOffset"] == "0"
        assert len(r.ext_fields["msgId"].split(",")) == 16
        await wait_max_offset(c, shared_broker.addr, "BatchT", 2, 16)
        p = await pull(c, shared_broker.addr, "gB", "BatchT", 2, 0)
        ms = messages(p)
        assert [m.body for m in ms] == [f"b{i}".encode() for i in range(16)]
        assert [m.queue_offset for m in ms] == list(range(16))
        assert ms[3].properties["UNIQ_KEY"] == "UK3"
        # a transactional batch is refused
        h = send_header_v2("BatchT", {}, queue_id=2, m="true", sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
        r = await call(c, shared_broker.addr, RequestCode.SEND_BATCH_MESSAGE, h, body)
        assert r.code == ResponseCode.MESSAGE_ILLEGAL


async def test_negative_queue_id_lets_the_broker_pick(shared_broker):
    async with RemotingClient() as c:
        seen = set()
        for _ in range(20):
            r = await send(c, shared_broker.addr, "PickQ", b"x", queue_id=-1)
            assert r.code == ResponseCode.SUCCESS
            seen.add(int(r.ext_fields["queueId"]))
        assert seen <= {0, 1, 2, 3} and len(seen) > 1


async def test_tag_filter_on_pull(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        for tag in ("a", "b", "a", "c"):
            assert (await send(c, addr, "TagT", tag.encode(), {"TAGS": tag})).code == ResponseCode.SUCCESS
        await wait_max_offset(c, addr, "TagT", 0, 4)
        p = await pull(c, addr, "gT", "TagT", 0, 0, subscription="a || c")
        assert p.code == ResponseCode.SUCCESS
        assert [m.body for m in messages(p)] == [b"a", b"a", b"c"]
        assert p.ext_fields["nextBeginOffset"] == "4"
        p = await pull(c, addr, "gT", "TagT", 0, 1, subscription="zzz")
        assert p.code == ResponseCode.PULL_RETRY_IMMEDIATELY and p.remark == "NO_MATCHED_MESSAGE"
        assert p.ext_fields["nextBeginOffset"] == "4"


async def test_pull_offsets_out_of_range(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        for i in range(3):
            await send(c, addr, "RangeT", b"%d" % i)
        await wait_max_offset(c, addr, "RangeT", 0, 3)
        p = await pull(c, addr, "gR", "RangeT", 0, 3)
        assert p.code == ResponseCode.PULL_NOT_FOUND and p.remark == "OFFSET_OVERFLOW_ONE"
        assert p.ext_fields["nextBeginOffset"] == "3"
        p = await pull(c, addr, "gR", "RangeT", 0, 50)
        assert p.code == ResponseCode.PULL_OFFSET_MOVED and p.remark == "OFFSET_OVERFLOW_BADLY"
        # an empty queue of an existing topic
        p = await pull(c, addr, "gR", "RangeT", 1, 0)
        assert p.code == ResponseCode.PULL_NOT_FOUND
        p = await pull(c, addr, "gR", "RangeT", 1, 5)
        assert p.code == ResponseCode.PULL_OFFSET_MOVED
        assert p.ext_fields["nextBeginOffset"] == "0"
        # illegal queue id
        p = await pull(c, addr, "gR", "RangeT", 9, 0)
        assert p.code == ResponseCode.SYSTEM_ERROR and "queueId[9] is illegal" in p.remark
        # the offset-moved event was written for the group
        await wait_max_offset(c, addr, "OFFSET_MOVED_EVENT", 0, 1)
        p = await pull(c, addr, "gR2", "OFFSET_MOVED_EVENT", 0, 0)
        assert p.code == ResponseCode.SUCCESS
        assert any(b'"consumerGroup":"gR"' in m.body for m in messages(p))


async def test_pull_far_past_the_end_points_at_the_max_offset(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        for i in range(3):
            await send(c, addr, "PastT", b"%d" % i)
        await wait_max_offset(c, addr, "PastT", 0, 3)
        p = await pull(c, addr, "gPast", "PastT", 0, 50)
        assert p.code == ResponseCode.PULL_OFFSET_MOVED and p.remark == "OFFSET_OVERFLOW_BADLY"
        assert p.ext_fields["nextBeginOffset"] == "3"


async def test_pull_unknown_topic_and_missing_subscription(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        p = await pull(c, addr, "gX", "NoSuchTopic", 0, 0)
        assert p.code == ResponseCode.TOPIC_NOT_EXIST
        await send(c, addr, "SubT", b"x")
        # without the subscription bit the heartbeat-registered subscription is required
        p = await pull(c, addr, "gNoHb", "SubT", 0, 0, sys_flag=0)
        assert p.code == ResponseCode.SUBSCRIPTION_NOT_EXIST


@pytest.mark.parametrize(
    "topic,code",
    [
        ("../etc", ResponseCode.SYSTEM_ERROR),
        ("a" * 128, ResponseCode.SYSTEM_ERROR),
        ("bad topic", ResponseCode.SYSTEM_ERROR),
        ("SCHEDULE_TOPIC_XXXX", ResponseCode.NO_PERMISSION),
        ("SELF_TEST_TOPIC", ResponseCode.NO_PERMISSION),
    ],
)
async def test_send_refuses_illegal_and_forbidden_topics(shared_broker, topic, code):
    async with RemotingClient() as c:
        r = await send(c, shared_broker.addr, topic, b"x")
        assert r.code == code, r.remark
        assert r.remark
    assert not (shared_broker.store / "consumequeue" / topic).exists()
    assert not (shared_broker.store.parent / "etc").exists()


async def test_send_bad_input(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        # queue id beyond the topic's queues
        await send(c, addr, "QidT", b"x")
        r = await send(c, addr, "QidT", b"x", queue_id=99)
        assert r.code == ResponseCode.SYSTEM_ERROR and "queueId[99] is illegal" in r.remark
        # body larger than maxMessageSize (64 KiB in this broker)
        r = await send(c, addr, "QidT", b"x" * (64 * 1024 + 1))
        assert r.code == ResponseCode.MESSAGE_ILLEGAL
        # missing required header field
        h = send_header_v2("QidT")
        del h["b"]
        r = await call(c, addr, RequestCode.SEND_MESSAGE_V2, h, b"x")
        assert r.code == ResponseCode.SYSTEM_ERROR and "<b>" in r.remark
        # unparsable number
        h = send_header_v2("QidT")
        h["e"] = "zero"
        r = await call(c, addr, RequestCode.SEND_MESSAGE_V2, h, b"x")
        assert r.code == ResponseCode.SYSTEM_ERROR
        # nothing of the above was stored: the queue still holds the single good message
        await wait_max_offset(c, addr, "QidT", 0, 1)
        r = await call(c, addr, RequestCode.GET_MAX_OFFSET, {"topic": "QidT", "queueId": 0})
        assert r.ext_fields["offset"] == "1"
        # unknown request code
        r = await c.invoke(addr, RemotingCommand.request(9999), 5)
        assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_send_to_retry_topic_and_dlq_redirect(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        r = await send(c, addr, "%RETRY%gRetry", b"r1", reconsume_ignored="x", j=1, l=16)
        assert r.code == ResponseCode.SUCCESS, r.remark
        r = await send(c, addr, "%RETRY%gRetry", b"dead", j=16, l=16)
        assert r.code == ResponseCode.SUCCESS
        await wait_max_offset(c, addr, "%DLQ%gRetry", 0, 1)
        p = await pull(c, addr, "gRetry", "%DLQ%gRetry", 0, 0)
        assert p.code == ResponseCode.SUCCESS
        assert [m.body for m in messages(p)] == [b"dead"]


async def test_commit_offset_piggyback_and_query(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        for i in range(3):
            await send(c, addr, "PiggyT", b"%d" % i)
        await wait_max_offset(c, addr, "PiggyT", 0, 3)
        p = await pull(c, addr, "gP", "PiggyT", 0, 0, sys_flag=0x4 | 0x1, commit_offset=2)
        assert p.code == ResponseCode.SUCCESS
        r = await call(c, addr, RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "gP", "topic": "PiggyT", "queueId": 0})
        assert r.code == ResponseCode.SUCCESS and r.ext_fields["offset"] == "2"
        r = await call(c, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                       {"consumerGroup": "gP", "topic": "PiggyT", "queueId": 0, "commitOffset": 3})
        assert r.code == ResponseCode.SUCCESS
        r = await call(c, addr, RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "gP", "topic": "PiggyT", "queueId": 0})
        assert r.ext_fields["offset"] == "3"
        # a group that never committed reads from 0 while the queue's first message is still there
        r = await call(c, addr, RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "gNew", "topic": "PiggyT", "queueId": 0})
        assert r.code == ResponseCode.SUCCESS and r.ext_fields["offset"] == "0"
        r = await call(c, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                       {"consumerGroup": "../x", "topic": "PiggyT", "queueId": 0, "commitOffset": 3})
        assert r.code == ResponseCode.SYSTEM_ERROR


async def test_queue_offset_queries(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        t0 = int(time.time() * 1000)
        for i in range(4):
            await send(c, addr, "OffT", b"%d" % i)
        await wait_max_offset(c, addr, "OffT", 0, 4)
        r = await call(c, addr, RequestCode.GET_MAX_OFFSET, {"topic": "OffT", "queueId": 0})
        assert r.ext_fields["offset"] == "4"
        r = await call(c, addr, RequestCode.GET_MIN_OFFSET, {"topic": "OffT", "queueId": 0})
        assert r.ext_fields["offset"] == "0"
        r = await call(c, addr, RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": "OffT", "queueId": 0})
        assert r.code == ResponseCode.SUCCESS and int(r.ext_fields["timestamp"]) >= t0 - 1000
        r = await call(c, addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {"topic": "OffT", "queueId": 0, "timestamp": t0 - 60000})
        assert r.code == ResponseCode.SUCCESS and r.ext_fields["offset"] == "0"
        r = await call(c, addr, RequestCode.GET_MAX_OFFSET, {"topic": "OffT"})
        assert r.code == ResponseCode.SYSTEM_ERROR and "queueId" in r.remark
        r = await call(c, addr, RequestCode.GET_MAX_OFFSET, {"topic": "../../OffT", "queueId": 0})
        assert r.code == ResponseCode.SYSTEM_ERROR and "illegal" in r.remark


async def test_delayed_and_half_messages_are_parked(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        r = await send(c, addr, "DelayT", b"later", {"DELAY": "3", "WAIT": "true"}, queue_id=1)
        assert r.code == ResponseCode.SUCCESS
        r = await send(c, addr, "DelayT", b"clamped", {"DELAY": "99"}, queue_id=0)
        assert r.code == ResponseCode.SUCCESS
        await wait_max_offset(c, addr, "SCHEDULE_TOPIC_XXXX", 2, 1)
        (m,) = messages(await pull(c, addr, "gD", "SCHEDULE_TOPIC_XXXX", 2, 0))
        assert m.body == b"later"
        assert m.properties["REAL_TOPIC"] == "DelayT" and m.properties["REAL_QID"] == "1"
        assert m.properties["DELAY"] == "3" and m.properties["WAIT"] == "true"
        # re-serialized in Java HashMap order, as RocketMQ's CommitLog writes a delayed record
        assert m.properties_string == java_properties_string(m.properties)
        assert list(m.properties)[0] == "REAL_TOPIC"
        await wait_max_offset(c, addr, "SCHEDULE_TOPIC_XXXX", 17, 1)
        (m,) = messages(await pull(c, addr, "gD", "SCHEDULE_TOPIC_XXXX", 17, 0))
        assert m.body == b"clamped" and m.properties["DELAY"] == "18"
        r = await call(c, addr, RequestCode.GET_MAX_OFFSET, {"topic": "DelayT", "queueId": 1})
        assert r.ext_fields["offset"] == "0"
        r = await send(c, addr, "DelayT", b"x", {"DELAY": "soon"})
        # 4.9.7: Message.getDelayTimeLevel()'s Integer.parseInt throws in CommitLog.asyncPutMessage;
        # NettyRemotingAbstract answers SYSTEM_ERROR with RemotingHelper.exceptionSimpleDesc(e)
        assert r.code == ResponseCode.SYSTEM_ERROR
        assert r.remark == ('java.lang.NumberFormatException: For input string: "soon", '
                            "java.lang.NumberFormatException.forInputString(NumberFormatException.java:65)")
        # a prepared transactional message goes to the half topic, queue 0, transaction bits cleared
        r = await send(c, addr, "TxParkT", b"half", {"TRAN_MSG": "true", "PGROUP": "txg"}, queue_id=2,
                       sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
        assert r.code == ResponseCode.SUCCESS
        host, phys = decode_offset_msg_id(r.ext_fields["msgId"])
        r = await call(c, addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": phys})
        (m,) = messages(r)
        assert m.topic == "RMQ_SYS_TRANS_HALF_TOPIC" and m.queue_id == 0
        assert m.properties["REAL_TOPIC"] == "TxParkT" and m.properties["REAL_QID"] == "2"
        assert MessageSysFlag.get_transaction_value(m.sys_flag) == 0


async def test_rocketmq_binary_headers_are_answered_in_kind(shared_broker):
    from remoting.codes import SerializeType
    from tests.broker.helpers import pull_header

    addr = shared_broker.addr
    async with RemotingClient() as c:
        cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, send_header_v2("BinT", {"TAGS": "b"}), b"bin",
                                      serialize_type=SerializeType.ROCKETMQ)
        r = await c.invoke(addr, cmd, 5)
        assert r.code == ResponseCode.SUCCESS and r.serialize_type == SerializeType.ROCKETMQ
        await wait_max_offset(c, addr, "BinT", 0, 1)
        cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, pull_header("gBin", "BinT", 0, 0),
                                      serialize_type=SerializeType.ROCKETMQ)
        p = await c.invoke(addr, cmd, 5)
        assert p.code == ResponseCode.SUCCESS and p.serialize_type == SerializeType.ROCKETMQ
        assert [m.body for m in messages(p)] == [b"bin"]
        # a long-polled pull released later is answered too
        cmd = RemotingCommand.request(
            RequestCode.PULL_MESSAGE, pull_header("gBin", "BinT", 0, 1, sys_flag=0x6, suspend_ms=300),
            serialize_type=SerializeType.ROCKETMQ,
        )
        p = await c.invoke(addr, cmd, 5)
        assert p.code == ResponseCode.PULL_NOT_FOUND

"""Message trace end to end: a Python producer and consumer with trace on, real NameServer and
broker (traceTopicEnable); the records in RMQ_SYS_TRACE_TOPIC decode to Pub / SubBefore /
SubAfter for the message, and ``mqadmin queryMsgTraceById`` prints them like the Java tool."""

from __future__ import annotations

import subprocess

from client import ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from client.admin import MQAdmin
from client.client_config import ClientConfig
from client.trace.trace_data_encoder import (
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    decode_trace_data,
    encode_context,
)
from client.trace.trace_view import query_trace_by_msg_id
from common.mixall import RMQ_SYS_TRACE_TOPIC
from tests.client.conftest import create_topic, unique, wait_for
from tests.support import BIN, ROOT


def test_java_trace_records_round_trip():
    # a Pub record as the Java client's TraceDataEncoder writes it (14 fields)
    java = "Pub\x011700000000000\x01DefaultRegion\x01PG\x01T\x01ID1\x01tagA\x01k1\x01127.0.0.1:10911\x015\x013\x010\x01OFF1\x01true\x02"
    (ctx,) = decode_trace_data(java)
    assert ctx.trace_type is TraceType.Pub and ctx.group_name == "PG" and ctx.cost_time == 3 and ctx.success
    b = ctx.beans[0]
    assert (b.topic, b.msg_id, b.tags, b.keys, b.offset_msg_id, b.body_length) == ("T", "ID1", "tagA", "k1", "OFF1", 5)
    text, keys = encode_context(ctx)
    assert text == java and keys == ["ID1", "k1"]
    sub = TraceContext(TraceType.SubAfter, timestamp=5, request_id="r", cost_time=2, success=False, context_code=4,
                       beans=[TraceBean(msg_id="ID1", keys="")])
    text, _ = encode_context(sub)
    assert text == "SubAfter\x01r\x01ID1\x012\x01false\x01\x014\x015\x02"
    (back,) = decode_trace_data(text)
    assert back.context_code == 4 and not back.success and back.timestamp == 5
    end = TraceContext(TraceType.EndTransaction, 1, "R", "G", beans=[TraceBean(
        topic="T", msg_id="M", msg_type=MessageType.Trans_msg_Commit, transaction_id="M",
        transaction_state="COMMIT_MESSAGE", from_transaction_check=True)])
    (back,) = decode_trace_data(encode_context(end)[0])
    assert back.beans[0].transaction_state == "COMMIT_MESSAGE" and back.beans[0].from_transaction_check
    assert decode_trace_data("Bogus\x01x\x02Pub\x01short\x02") == []


async def test_producer_and_consumer_traces_reach_the_trace_topic(own_cluster):
    c = own_cluster(brokers=1, traceTopicEnable="true")
    ns = c.namesrv_addr
    topic = unique("TraceT")
    await create_topic(ns, topic, c.brokers)
    group = unique("TraceCG")
    async with Producer(unique("TracePG"), ns, enable_msg_trace=True) as p:
        r = await p.send(Message(topic, b"traced", tags="tagT", keys="bizKey1"))
    msg_id = r.msg_id
    seen = []

    async def listener(msgs, _ctx):
        seen.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, config=ClientConfig(namesrv_addr=ns, persist_consumer_offset_interval=0.5),
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, enable_msg_trace=True)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    async with consumer:
        await wait_for(lambda: seen, 20, "the traced message consumed")
    async with MQAdmin(ns) as admin:
        async def all_three():
            views = await query_trace_by_msg_id(admin, msg_id)
            kinds = {v.msg_type for v in views}
            return views if {"Pub", "SubBefore", "SubAfter"} <= kinds else None

        views = await wait_for(all_three, 20, "Pub, SubBefore and SubAfter records for the message")
        raw = await admin.query_message(RMQ_SYS_TRACE_TOPIC, msg_id)
    assert raw and all(m.topic == RMQ_SYS_TRACE_TOPIC for m in raw)
    pub = next(v for v in views if v.msg_type == "Pub")
    assert pub.topic == topic and pub.tags == "tagT" and pub.keys == "bizKey1" and pub.status == "success"
    assert pub.group_name.startswith("TracePG") and pub.offset_msg_id == r.offset_msg_id
    after = next(v for v in views if v.msg_type == "SubAfter")
    assert after.group_name == group and after.status == "success"

    out = subprocess.run([str(BIN / "mqadmin"), "queryMsgTraceById", "-n", ns, "-i", msg_id],
                         capture_output=True, text=True, timeout=60, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"]
    assert lines[1].startswith("Pub ") and pub.group_name in lines[1] and lines[1].split()[-1] == "success"
    assert any(line.split()[:1] == ["#Type"] and "#ConsumerGroup" in line for line in lines)
    assert any(line.startswith("Sub ") and group in line and line.split()[-1] == "success" for line in lines)


async def test_transaction_producer_traces_end_transaction(own_cluster):
    from client import LocalTransactionState, TransactionProducer

    c = own_cluster(brokers=1, traceTopicEnable="true")
    ns = c.namesrv_addr
    topic = unique("TraceTx")
    await create_topic(ns, topic, c.brokers)

    class Commit:
        def execute_local_transaction(self, msg, arg):
            return LocalTransactionState.COMMIT_MESSAGE

        def check_local_transaction(self, msg):
            return LocalTransactionState.COMMIT_MESSAGE

    async with TransactionProducer(unique("TxPG"), ns, transaction_listener=Commit(), enable_msg_trace=True) as p:
        r = await p.send_message_in_transaction(Message(topic, b"tx", keys="txKey"))
    msg_id = r.send_result.msg_id
    async with MQAdmin(ns) as admin:
        async def both():
            views = await query_trace_by_msg_id(admin, msg_id)
            return views if {"Pub", "EndTransaction"} <= {v.msg_type for v in views} else None

        views = await wait_for(both, 20, "Pub and EndTransaction records")
    end = next(v for v in views if v.msg_type == "EndTransaction")
    assert end.transaction_state == "COMMIT_MESSAGE" and end.keys == "txKey"

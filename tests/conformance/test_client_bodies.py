"""Bodies our client answers to broker -> client requests (§15, §11 ConsumerRunningInfo / ConsumeMessageDirectlyResult).

Java admin tools (mqadmin consumerStatus, monitors) read ``ConsumerRunningInfo.properties``
``PROP_CONSUME_TYPE`` (ConsumeType.valueOf: an NPE when missing) and
``PROP_CONSUMER_START_TIMESTAMP`` (Long.parseLong), as the Java client writes them.
"""

from __future__ import annotations

import pytest

from client import ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, MQAdmin, Producer, PushConsumer
from client.client_config import ClientConfig
from tests.client.cluster import Cluster
from tests.client.conftest import create_topic, wait_for

PROCESS_QUEUE_INFO_KEYS = {  # §11, transcribed
    "commitOffset", "cachedMsgMinOffset", "cachedMsgMaxOffset", "cachedMsgCount", "cachedMsgSizeInMiB",
    "transactionMsgMinOffset", "transactionMsgMaxOffset", "transactionMsgCount", "locked", "tryUnlockTimes",
    "lastLockTimestamp", "droped", "lastPullTimestamp", "lastConsumeTimestamp",
}
RUNNING_INFO_KEYS = {"jstack", "mqTable", "properties", "statusTable", "subscriptionSet"}
DIRECT_RESULT_KEYS = {"autoCommit", "consumeResult", "order", "remark", "spentTimeMills"}
CONSUME_RESULTS = {"CR_SUCCESS", "CR_LATER", "CR_ROLLBACK", "CR_COMMIT", "CR_THROW_EXCEPTION", "CR_RETURN_NULL"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("cb"), brokers=1)
    yield c
    c.stop()


async def test_running_info_and_consume_directly_shapes(cluster):
    ns = cluster.namesrv_addr
    topic, group = "ConfRunInfo", "ConfRunInfoCG"
    await create_topic(ns, topic, cluster.brokers, queues=2)
    async with Producer("ConfRunInfoPG", ns) as p:
        sent = await p.send(Message(topic, b"x"))
    got = []

    async def listener(msgs, ctx):
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = PushConsumer(group, config=ClientConfig(namesrv_addr=ns),
                     consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    c.subscribe(topic, "*")
    c.register_message_listener(listener)
    async with MQAdmin(ns) as admin:
        async with c:
            await wait_for(lambda: got, 20, "consumed")
            info = await admin.consumer_running_info(group, c.client_id)
            assert set(info) <= RUNNING_INFO_KEYS
            props = info["properties"]
            assert props["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
            assert int(props["PROP_CONSUMER_START_TIMESTAMP"]) > 1_600_000_000_000
            assert props["PROP_CONSUMEORDERLY"] == "false"
            assert int(props["PROP_THREADPOOL_CORE_SIZE"]) > 0
            assert props["PROP_CLIENT_VERSION"] == "V4_9_7"
            assert props["PROP_NAMESERVER_ADDR"] == ns
            assert all(isinstance(v, str) for v in props.values())  # java.util.Properties
            assert info["mqTable"]
            for pq in info["mqTable"].values():
                assert set(pq) == PROCESS_QUEUE_INFO_KEYS
                assert isinstance(pq["droped"], bool) and isinstance(pq["locked"], bool)
                assert pq["lastPullTimestamp"] > 1_600_000_000_000
            result = await admin.consume_message_directly(group, c.client_id, sent.offset_msg_id)
            assert set(result) <= DIRECT_RESULT_KEYS and {"autoCommit", "consumeResult", "order"} <= set(result)
            assert result["consumeResult"] in CONSUME_RESULTS
            assert isinstance(result["spentTimeMills"], int)


async def test_consumer_applies_reset_pushed_in_list_form(cluster):
    """A CPP admin makes the broker push ResetOffsetBodyForC (§15); our consumer applies it and re-consumes."""
    from remoting.client import RemotingClient
    from remoting.codes import LanguageCode, RequestCode, ResponseCode
    from remoting.command import RemotingCommand

    ns = cluster.namesrv_addr
    broker = cluster.brokers[0]
    topic, group = "ConfResetC", "ConfResetCG"
    await create_topic(ns, topic, cluster.brokers, queues=1)
    async with Producer("ConfResetCPG", ns) as p:
        for i in range(2):
            await p.send(Message(topic, b"r%d" % i))
    got = []

    async def listener(msgs, ctx):
        got.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = PushConsumer(group, config=ClientConfig(namesrv_addr=ns, persist_consumer_offset_interval=0.2),
                     consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    c.subscribe(topic, "*")
    c.register_message_listener(listener)
    async with c, RemotingClient(name="cpp-admin") as admin:
        await wait_for(lambda: len(got) == 2, 20, "consumed once")

        async def reset():
            cmd = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                                          {"topic": topic, "group": group, "timestamp": 0, "isForce": "true"})
            cmd.language = LanguageCode.CPP
            r = await admin.invoke(broker.addr, cmd, 5.0)
            return r.code == ResponseCode.SUCCESS  # SYSTEM_ERROR until the consumer committed an offset

        await wait_for(reset, 20, "reset accepted")
        await wait_for(lambda: len(got) >= 4, 20, "consumed again after the reset")
        assert sorted(got[2:4]) == [b"r0", b"r1"]


async def test_consumer_answers_get_consumer_status(cluster):
    """§15 GET_CONSUMER_STATUS_FROM_CLIENT -> GetConsumerStatusBody with the push consumer's offsets.

    A loopback RemotingServer stands in for a Java broker relaying INVOKE_BROKER_TO_GET_CONSUMER_STATUS
    (our broker does not register 223): it calls the consumer over the consumer's own connection.
    """
    import asyncio

    from remoting import fastjson
    from remoting.codes import RequestCode, ResponseCode
    from remoting.command import RemotingCommand
    from remoting.server import RemotingServer

    ns = cluster.namesrv_addr
    topic, group = "ConfStatus", "ConfStatusCG"
    await create_topic(ns, topic, cluster.brokers, queues=1)
    async with Producer("ConfStatusPG", ns) as p:
        await p.send(Message(topic, b"s"))
    got = []

    async def listener(msgs, ctx):
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = PushConsumer(group, config=ClientConfig(namesrv_addr=ns),
                     consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    c.subscribe(topic, "*")
    c.register_message_listener(listener)
    server = RemotingServer("127.0.0.1", 0, name="fake-broker")
    conns: asyncio.Queue = asyncio.Queue()

    def on_heartbeat(req, conn):
        conns.put_nowait(conn)
        return req.response_to(ResponseCode.SUCCESS)

    server.register_processor(RequestCode.HEART_BEAT, on_heartbeat)
    await server.start()
    try:
        async with c:
            await wait_for(lambda: got and c.offset_store.table.get(next(iter(c.offset_store.table), None)) == 1,
                           20, "consumed and offset advanced")
            addr = f"127.0.0.1:{server.port}"
            await c.instance.remoting.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT, None, b"{}"), 5)
            conn = await asyncio.wait_for(conns.get(), 5)
            req = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
                                          {"topic": topic, "group": group, "clientAddr": "127.0.0.1:1"})
            r = await conn.invoke(req, 5)
            assert r.code == ResponseCode.SUCCESS, r.remark
            mq = '{"brokerName":"' + cluster.brokers[0].name + '","queueId":0,"topic":"' + topic + '"}'
            assert fastjson.loads(r.body) == fastjson.loads('{"consumerTable":{},"messageQueueTable":{' + mq + ':1}}')
    finally:
        await server.stop(grace=1.0)

"""INVOKE_BROKER_TO_RESET_OFFSET (§16) pushes RESET_CONSUMER_CLIENT_OFFSET (§15) to online consumers.

The pushed body is ResetOffsetBody, or ResetOffsetBodyForC (a list, no object
keys) when the admin request came from a CPP client (4.9.7 AdminBrokerProcessor
passes ``isC`` from the request's language). The reply is always ResetOffsetBody.
"""

from __future__ import annotations

import asyncio

import pytest

from remoting import fastjson
from remoting.body.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from remoting.client import RemotingClient
from remoting.codes import LanguageCode, RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.broker.helpers import BrokerProc, call, send, wait_max_offset

RC = ResponseCode


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProc(tmp_path_factory.mktemp("reset"), "reset")
    b.start()
    yield b
    b.stop()


@pytest.mark.parametrize("language", [LanguageCode.JAVA, LanguageCode.CPP], ids=lambda x: x.name)
async def test_reset_push_body_by_requester_language(broker, language):
    topic, group = f"ConfReset{language.name}", f"ConfResetG{language.name}"
    addr = broker.addr
    consumer = RemotingClient(name="reset-consumer")
    pushed: asyncio.Queue = asyncio.Queue()

    def on_reset(req, conn):
        pushed.put_nowait(req)
        return None

    consumer.register_processor(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, on_reset)
    try:
        async with RemotingClient(name="reset-admin") as admin:
            r = await call(admin, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, {
                "topic": topic, "defaultTopic": "TBW102", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6,
                "topicFilterType": "SINGLE_TAG", "order": "false"})
            assert r.code == RC.SUCCESS
            for _ in range(3):
                assert (await send(admin, addr, topic, b"m", queue_id=0)).code == RC.SUCCESS
            await wait_max_offset(admin, addr, topic, 0, 3)
            r = await call(admin, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                           {"consumerGroup": group, "topic": topic, "queueId": 0, "commitOffset": 1})
            assert r.code == RC.SUCCESS
            hb = HeartbeatData(clientID="reset-c", consumerDataSet=[ConsumerData(
                groupName=group, subscriptionDataSet=[SubscriptionData(topic=topic)])]).to_json()
            assert (await call(consumer, addr, RequestCode.HEART_BEAT, body=hb)).code == RC.SUCCESS

            cmd = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                                          {"topic": topic, "group": group, "timestamp": -1, "isForce": "true"})
            cmd.language = language
            r = await admin.invoke(addr, cmd, 5.0)
            assert r.code == RC.SUCCESS, r.remark
            mq = '{"brokerName":"reset","queueId":0,"topic":"' + topic + '"}'
            assert fastjson.loads(r.body) == fastjson.loads('{"offsetTable":{' + mq + ':3}}')

            req = await asyncio.wait_for(pushed.get(), 5.0)
            assert req.ext_fields == {"topic": topic, "group": group, "timestamp": "-1", "isForce": "true"}
            if language == LanguageCode.CPP:
                assert fastjson.loads(req.body) == {
                    "offsetTable": [{"brokerName": "reset", "offset": 3, "queueId": 0, "topic": topic}]}
            else:
                assert fastjson.loads(req.body) == fastjson.loads('{"offsetTable":{' + mq + ':3}}')
    finally:
        await consumer.close()

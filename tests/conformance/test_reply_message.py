"""SEND_REPLY_MESSAGE_V2 (325) -> PUSH_REPLY_MESSAGE_TO_CLIENT (326) (§9, §13.1 response header).

The Java responder decodes every SUCCESS answer to a send as SendMessageResponseHeader
(msgId, queueId, queueOffset required; a missing queueId is a null-unboxing failure),
so a reply that is pushed but not stored (storeReplyMessageEnable=false) must still
carry them: 4.9.7 answers msgId "0", the queue id and queue offset 0.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from remoting.body.heartbeat import HeartbeatData, ProducerData
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import BrokerProc, call, props_string


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProc(tmp_path_factory.mktemp("reply"), "reply", storeReplyMessageEnable="false")
    b.start()
    yield b
    b.stop()


async def test_pushed_reply_answer_has_send_response_header(broker):
    requester = RemotingClient(name="requester")
    pushed: asyncio.Queue = asyncio.Queue()

    def on_reply(req, conn):
        pushed.put_nowait(req)
        return req.response_to(ResponseCode.SUCCESS)

    requester.register_processor(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, on_reply)
    try:
        hb = HeartbeatData(clientID="req-1", producerDataSet=[ProducerData(groupName="reqPG")]).to_json()
        assert (await call(requester, broker.addr, RequestCode.HEART_BEAT, body=hb)).code == ResponseCode.SUCCESS
        async with RemotingClient(name="responder") as responder:
            props = props_string({"REPLY_TO_CLIENT": "req-1", "CORRELATION_ID": "corr-1", "MSG_TYPE": "reply"})
            h = {"a": "respPG", "b": "TestCluster_REPLY_TOPIC", "c": "TBW102", "d": 4, "e": 0, "f": 0,
                 "g": int(time.time() * 1000), "h": 0, "i": props}
            r = await call(responder, broker.addr, RequestCode.SEND_REPLY_MESSAGE_V2, h, b"the reply")
            assert r.code == ResponseCode.SUCCESS, r.remark
            assert {"msgId", "queueId", "queueOffset"} <= set(r.ext_fields or {}), r.ext_fields
            int(r.ext_fields["queueId"]), int(r.ext_fields["queueOffset"])
            req = await asyncio.wait_for(pushed.get(), 5.0)
            assert req.body == b"the reply"
            ext = req.ext_fields
            assert {"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
                    "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "bornHost", "storeHost",
                    "storeTimestamp"} <= set(ext)
            assert "CORRELATION_ID\x01corr-1" in ext["properties"]
    finally:
        await requester.close()

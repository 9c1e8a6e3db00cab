"""Send-back: growing retry delay, then the DLQ after maxReconsumeTimes; orderly locks with two clients."""

from __future__ import annotations

from broker.semantics import LOCK_MAX_LIVE_TIME_ENV as LOCK_ENV
from common.message import decode_offset_msg_id
from remoting.body.consumer import LockBatchRequestBody, LockBatchResponseBody, MessageQueue
from remoting.body.subscription_group import SubscriptionGroupConfig
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import call, messages, pull, send
from tests.support import async_wait_until

GROUP = "gRetry"


async def _send_back(c, addr, phys, delay_level=0, **kw):
    hdr = {"offset": phys, "group": GROUP, "delayLevel": delay_level, **kw}
    return await call(c, addr, RequestCode.CONSUMER_SEND_MSG_BACK, hdr)


async def test_retry_with_growing_delay_then_dlq(broker_factory):
    # level 3 = 1 s, level 4 = 2 s: first retry after 1 s, second after 2 s
    b = broker_factory("r1", messageDelayLevel="1s 1s 1s 2s 3s")
    async with RemotingClient() as c:
        sgc = SubscriptionGroupConfig(groupName=GROUP, retryMaxTimes=2)
        r = await call(c, b.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, sgc.to_json())
        assert r.code == ResponseCode.SUCCESS, r.remark
        r = await send(c, b.addr, "RetryT", b"work", {"TAGS": "a", "UNIQ_KEY": "U1"})
        _, phys = decode_offset_msg_id(r.ext_fields["msgId"])
        origin = r.ext_fields["msgId"]
        assert (await _send_back(c, b.addr, -1)).code == ResponseCode.SYSTEM_ERROR
        bad = await call(c, b.addr, RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": phys, "group": "noSuchGroupX",
                                                                          "delayLevel": 0})
        # unknown groups are auto-created by default; an explicit unknown group answer is also acceptable
        assert bad.code in (ResponseCode.SUCCESS, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)

        retry_topic = f"%RETRY%{GROUP}"
        gaps = []
        for attempt in (1, 2):
            r = await _send_back(c, b.addr, phys)
            assert r.code == ResponseCode.SUCCESS, r.remark

            async def parked(q=2 + attempt - 1):
                p = await pull(c, b.addr, "gS", "SCHEDULE_TOPIC_XXXX", q, 0)
                return messages(p) if p.code == ResponseCode.SUCCESS else None

            sent_back_at = (await async_wait_until(parked, 5, what="parked retry"))[-1].store_timestamp

            async def arrived(n=attempt):
                p = await pull(c, b.addr, GROUP, retry_topic, 0, n - 1)
                return messages(p) if p.code == ResponseCode.SUCCESS else None

            (m,) = (await async_wait_until(arrived, 10, 0.05, f"retry {attempt}"))[:1]
            gaps.append(m.store_timestamp - sent_back_at)
            assert m.reconsume_times == attempt and m.body == b"work"
            assert m.properties["RETRY_TOPIC"] == "RetryT" and m.properties["ORIGIN_MESSAGE_ID"] == origin
            assert m.properties["DELAY"] == str(2 + attempt) and m.properties["REAL_TOPIC"] == retry_topic
            phys = m.commit_log_offset  # the consumer now fails on the retried copy
        assert 1000 <= gaps[0] < 2000 and 2000 <= gaps[1] < 3000, gaps
        # reconsumeTimes 2 >= retryMaxTimes 2: the next failure is a dead letter
        assert (await _send_back(c, b.addr, phys)).code == ResponseCode.SUCCESS

        async def dead():
            p = await pull(c, b.addr, GROUP, f"%DLQ%{GROUP}", 0, 0)
            return messages(p) if p.code == ResponseCode.SUCCESS else None

        (d,) = await async_wait_until(dead, 5, what="dead letter")
        assert d.reconsume_times == 3 and d.body == b"work" and d.properties["ORIGIN_MESSAGE_ID"] == origin
        # a header maxReconsumeTimes (client >= V3_4_9) overrides the group's, and level -1 goes straight to DLQ
        r = await send(c, b.addr, "RetryT", b"w2", {"UNIQ_KEY": "U2"})
        _, phys2 = decode_offset_msg_id(r.ext_fields["msgId"])
        assert (await _send_back(c, b.addr, phys2, maxReconsumeTimes=0)).code == ResponseCode.SUCCESS
        assert (await _send_back(c, b.addr, phys2, delay_level=-1)).code == ResponseCode.SUCCESS

        async def three_dead():
            p = await pull(c, b.addr, GROUP, f"%DLQ%{GROUP}", 0, 0)
            return p.code == ResponseCode.SUCCESS and len(messages(p)) == 3

        await async_wait_until(three_dead, 5, what="three dead letters")
        r = await call(c, b.addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        assert f"%DLQ%{GROUP}".encode() in r.body and retry_topic.encode() in r.body


def _lock_body(client_id, mqs):
    return LockBatchRequestBody(consumerGroup="gOrder", clientId=client_id, mqSet=mqs).to_json()


async def _lock(c, addr, client_id, mqs):
    r = await call(c, addr, RequestCode.LOCK_BATCH_MQ, None, _lock_body(client_id, mqs))
    assert r.code == ResponseCode.SUCCESS, r.remark
    return sorted(m.queueId for m in LockBatchResponseBody.from_json(r.body).lockOKMQSet)


async def test_orderly_locks_two_clients_handover(broker_factory):
    b = broker_factory("l1", env={LOCK_ENV: "1500"})
    mqs = [MessageQueue(topic="OrdT", brokerName="l1", queueId=i) for i in range(4)]
    async with RemotingClient() as c1, RemotingClient() as c2:
        assert await _lock(c1, b.addr, "client-A", mqs[:3]) == [0, 1, 2]
        assert await _lock(c2, b.addr, "client-B", mqs) == [3]  # only the free one
        assert await _lock(c1, b.addr, "client-A", mqs[:3]) == [0, 1, 2]  # re-lock refreshes
        # unlock hands queue 0 over; B may not unlock A's queues
        r = await call(c2, b.addr, RequestCode.UNLOCK_BATCH_MQ, None, _lock_body("client-B", mqs[1:2]))
        assert r.code == ResponseCode.SUCCESS
        r = await call(c1, b.addr, RequestCode.UNLOCK_BATCH_MQ, None, _lock_body("client-A", mqs[:1]))
        assert r.code == ResponseCode.SUCCESS
        assert await _lock(c2, b.addr, "client-B", mqs) == [0, 3]

        # A stops refreshing: after the expiry its queues go to B
        async def handed_over():
            return await _lock(c2, b.addr, "client-B", mqs) == [0, 1, 2, 3]

        await async_wait_until(handed_over, 5, 0.1, "expired locks handed to B")
        assert await _lock(c1, b.addr, "client-A", mqs) == []
        # as in RocketMQ 4.9.7 the broker does not enforce locks on pull: only orderly clients honour them
        r = await send(c1, b.addr, "OrdT", b"o1", queue_id=0)
        assert r.code == ResponseCode.SUCCESS

        async def pulled():
            p = await pull(c1, b.addr, "gOrder", "OrdT", 0, 0)
            return messages(p) if p.code == ResponseCode.SUCCESS else None

        assert (await async_wait_until(pulled, 5, what="pull by a non-holder"))[0].body == b"o1"
        bad = await call(c1, b.addr, RequestCode.LOCK_BATCH_MQ, None, b"{not json")
        assert bad.code == ResponseCode.SYSTEM_ERROR

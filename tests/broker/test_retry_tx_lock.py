"""CONSUMER_SEND_MSG_BACK, END_TRANSACTION and LOCK/UNLOCK_BATCH_MQ against a real broker."""

from __future__ import annotations

from common.message import MessageSysFlag, decode_offset_msg_id
from remoting.body.consumer import LockBatchRequestBody, LockBatchResponseBody, MessageQueue
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import call, messages, pull, send, wait_max_offset
from tests.support import async_wait_until


async def test_send_back_to_retry_then_dlq(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        r = await send(c, addr, "SbT", b"payload", {"TAGS": "t1", "UNIQ_KEY": "SB1"})
        _, phys = decode_offset_msg_id(r.ext_fields["msgId"])
        hdr = {"offset": phys, "group": "gSb", "delayLevel": 0, "originMsgId": "SB1", "originTopic": "SbT",
               "maxReconsumeTimes": 16}
        r = await call(c, addr, RequestCode.CONSUMER_SEND_MSG_BACK, hdr)
        assert r.code == ResponseCode.SUCCESS, r.remark
        # the retry record: in %RETRY%gSb, or in SCHEDULE_TOPIC_XXXX queue 2 (level 3) when the store delays it

        async def retry_record():
            for group, topic, qid in (("gSb", "%RETRY%gSb", 0), ("gSbX", "SCHEDULE_TOPIC_XXXX", 2)):
                p = await pull(c, addr, group, topic, qid, 0)
                if p.code == ResponseCode.SUCCESS:
                    return messages(p)
            return None

        found = await async_wait_until(retry_record, 5, what="retry record")
        m = found[0]
        assert m.body == b"payload" and m.reconsume_times == 1
        assert m.properties["RETRY_TOPIC"] == "SbT" and m.properties["DELAY"] == "3"
        assert m.properties["ORIGIN_MESSAGE_ID"]
        # negative delay level: straight to the DLQ
        r = await call(c, addr, RequestCode.CONSUMER_SEND_MSG_BACK, dict(hdr, delayLevel=-1))
        assert r.code == ResponseCode.SUCCESS
        await wait_max_offset(c, addr, "%DLQ%gSb", 0, 1)
        (d,) = messages(await pull(c, addr, "gSb", "%DLQ%gSb", 0, 0))
        assert d.body == b"payload" and "DELAY" not in d.properties
        # bad offset
        r = await call(c, addr, RequestCode.CONSUMER_SEND_MSG_BACK, dict(hdr, offset=10**12))
        assert r.code == ResponseCode.SYSTEM_ERROR


async def test_transaction_commit_and_rollback(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        results = {}
        for key in ("commit", "rollback"):
            props = {"TRAN_MSG": "true", "PGROUP": "txpg", "UNIQ_KEY": key}
            r = await send(c, addr, "TxT", key.encode(), props, group="txpg",
                           sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
            assert r.code == ResponseCode.SUCCESS, r.remark
            results[key] = r
        # half messages are parked, not visible in the real topic
        await wait_max_offset(c, addr, "RMQ_SYS_TRANS_HALF_TOPIC", 0, 2)
        p = await pull(c, addr, "gTx", "TxT", 0, 0)
        assert p.code != ResponseCode.SUCCESS
        for key, kind in (("commit", 8), ("rollback", 12)):
            r = results[key]
            _, phys = decode_offset_msg_id(r.ext_fields["msgId"])
            hdr = {"producerGroup": "txpg", "tranStateTableOffset": r.ext_fields["queueOffset"], "commitLogOffset": phys,
                   "commitOrRollback": kind, "msgId": key, "fromTransactionCheck": "false"}
            bad = await call(c, addr, RequestCode.END_TRANSACTION, dict(hdr, producerGroup="other"))
            assert bad.code == ResponseCode.SYSTEM_ERROR and "producer group" in bad.remark
            ok = await call(c, addr, RequestCode.END_TRANSACTION, hdr)
            assert ok.code == ResponseCode.SUCCESS, ok.remark
        await wait_max_offset(c, addr, "TxT", 0, 1)
        (m,) = messages(await pull(c, addr, "gTx", "TxT", 0, 0))
        assert m.body == b"commit"
        assert MessageSysFlag.get_transaction_value(m.sys_flag) == MessageSysFlag.TRANSACTION_COMMIT_TYPE
        assert m.prepared_transaction_offset > 0
        await wait_max_offset(c, addr, "RMQ_SYS_TRANS_OP_HALF_TOPIC", 0, 2)
        ops = messages(await pull(c, addr, "gOp", "RMQ_SYS_TRANS_OP_HALF_TOPIC", 0, 0))
        assert sorted(o.body for o in ops) == [b"0", b"1"] and ops[0].properties["TAGS"] == "d"


async def test_lock_batch_mq(shared_broker):
    addr = shared_broker.addr
    mqs = [MessageQueue("LockT", "shared", i) for i in range(3)]
    async with RemotingClient() as c:
        body = LockBatchRequestBody(consumerGroup="gL", clientId="c1", mqSet=mqs[:2]).to_json()
        r = await call(c, addr, RequestCode.LOCK_BATCH_MQ, body=body)
        assert set(LockBatchResponseBody.from_json(r.body).lockOKMQSet) == set(mqs[:2])
        body = LockBatchRequestBody(consumerGroup="gL", clientId="c2", mqSet=mqs).to_json()
        r = await call(c, addr, RequestCode.LOCK_BATCH_MQ, body=body)
        assert LockBatchResponseBody.from_json(r.body).lockOKMQSet == [mqs[2]]
        await call(c, addr, RequestCode.UNLOCK_BATCH_MQ,
                   body=LockBatchRequestBody(consumerGroup="gL", clientId="c1", mqSet=mqs).to_json())
        r = await call(c, addr, RequestCode.LOCK_BATCH_MQ, body=body)
        assert set(LockBatchResponseBody.from_json(r.body).lockOKMQSet) == set(mqs)

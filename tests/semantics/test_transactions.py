"""Transactional messages end to end: commit, rollback, idempotency, check-back, dying producer, restart."""

from __future__ import annotations

from common.message import MessageSysFlag, decode_message, decode_offset_msg_id
from remoting.body.heartbeat import HeartbeatData, ProducerData
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.broker.helpers import call, messages, pull, send
from tests.support import async_wait_until

PG = "txPG"
TX_CONF = {"transactionCheckInterval": 300, "transactionTimeOut": 500, "transactionCheckMax": 3}


async def send_half(c, addr, topic, key, group=PG):
    props = {"TRAN_MSG": "true", "PGROUP": group, "UNIQ_KEY": key, "TAGS": "tx"}
    r = await send(c, addr, topic, key.encode(), props, group=group, sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
    assert r.code == ResponseCode.SUCCESS, r.remark
    _, phys = decode_offset_msg_id(r.ext_fields["msgId"])
    return {"producerGroup": group, "tranStateTableOffset": int(r.ext_fields["queueOffset"]),
            "commitLogOffset": phys, "msgId": key}


async def end(c, addr, hdr, kind, **kw):
    return await call(c, addr, RequestCode.END_TRANSACTION, dict(hdr, commitOrRollback=kind, **kw))


async def real_messages(c, addr, topic):
    r = await pull(c, addr, "gTxRead", topic, 0, 0)
    return messages(r) if r.code == ResponseCode.SUCCESS else []


async def test_commit_rollback_idempotent(broker_factory):
    b = broker_factory("t1")
    async with RemotingClient() as c:
        h_commit = await send_half(c, b.addr, "TxA", "K-commit")
        h_roll = await send_half(c, b.addr, "TxA", "K-roll")
        assert await real_messages(c, b.addr, "TxA") == []  # parked as half messages
        bad = await end(c, b.addr, h_commit, 8, producerGroup="someoneElse")
        assert bad.code == ResponseCode.SYSTEM_ERROR and "producer group" in bad.remark
        bad = await end(c, b.addr, dict(h_commit, tranStateTableOffset=99), 8)
        assert bad.code == ResponseCode.SYSTEM_ERROR and "state table offset" in bad.remark
        bad = await end(c, b.addr, dict(h_commit, commitLogOffset=10**12), 8)
        assert bad.code == ResponseCode.SYSTEM_ERROR and "Find prepared" in bad.remark
        for _ in range(3):  # repeated commit / rollback: written once
            assert (await end(c, b.addr, h_commit, 8)).code == ResponseCode.SUCCESS
            assert (await end(c, b.addr, h_roll, 12)).code == ResponseCode.SUCCESS
        # the opposite decision afterwards is refused
        r = await end(c, b.addr, h_commit, 12)
        assert r.code == ResponseCode.SYSTEM_ERROR and "committed" in r.remark
        # unknown (0) gets no answer and changes nothing: a oneway is all a client sends
        await c.invoke_oneway(b.addr, RemotingCommand.request(RequestCode.END_TRANSACTION,
                                                              dict(h_roll, commitOrRollback=0)))

        async def committed():
            return await real_messages(c, b.addr, "TxA")

        (m,) = await async_wait_until(committed, 5, what="committed message")
        assert m.body == b"K-commit" and m.properties["TRAN_MSG"] == "true" and m.properties["PGROUP"] == PG
        assert MessageSysFlag.get_transaction_value(m.sys_flag) == MessageSysFlag.TRANSACTION_COMMIT_TYPE
        assert m.prepared_transaction_offset == h_commit["commitLogOffset"]
        # one op marker per transaction, none for the repeats; like RocketMQ the op topic has no topic config
        r = await call(c, b.addr, RequestCode.GET_MAX_OFFSET, {"topic": "RMQ_SYS_TRANS_OP_HALF_TOPIC", "queueId": 0})
        assert r.ext_fields["offset"] == "2"
        r = await call(c, b.addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        assert b"RMQ_SYS_TRANS_HALF_TOPIC" in r.body and b"RMQ_SYS_TRANS_OP_HALF_TOPIC" not in r.body
        r = await call(c, b.addr, RequestCode.GET_MAX_OFFSET, {"topic": "TxA", "queueId": 0})
        assert r.ext_fields["offset"] == "1"


class FakeProducer:
    """A producer connection that heartbeats and answers CHECK_TRANSACTION_STATE with END_TRANSACTION."""

    def __init__(self, addr: str, client_id: str, decide=lambda key: 8):
        self.addr = addr
        self.client_id = client_id
        self.decide = decide
        self.checks: list[tuple[dict, object]] = []
        self.client = RemotingClient(name=client_id)
        self.client.register_processor(RequestCode.CHECK_TRANSACTION_STATE, self._on_check)

    async def heartbeat(self):
        body = HeartbeatData(clientID=self.client_id, producerDataSet=[ProducerData(groupName=PG)]).to_json()
        r = await self.client.invoke(self.addr, RemotingCommand.request(RequestCode.HEART_BEAT, None, body))
        assert r.code == ResponseCode.SUCCESS

    def _on_check(self, req, conn):
        msg = decode_message(req.body)
        self.checks.append((dict(req.ext_fields), msg))
        kind = self.decide(req.ext_fields["msgId"])
        if kind is not None:
            hdr = {"producerGroup": PG, "tranStateTableOffset": req.ext_fields["tranStateTableOffset"],
                   "commitLogOffset": req.ext_fields["commitLogOffset"], "msgId": req.ext_fields["msgId"],
                   "commitOrRollback": kind, "fromTransactionCheck": "true"}
            conn.invoke_oneway(RemotingCommand.request(RequestCode.END_TRANSACTION, hdr))
        return None

    async def close(self):
        await self.client.close()


async def test_unknown_then_check_back_commits_and_rolls_back(broker_factory):
    b = broker_factory("t2", **TX_CONF)
    p = FakeProducer(b.addr, "prod-1", decide=lambda key: 8 if key.startswith("C") else 12)
    try:
        await p.heartbeat()
        async with RemotingClient() as c:
            hc = await send_half(c, b.addr, "TxB", "C1")
            hr = await send_half(c, b.addr, "TxB", "R1")
            for h in (hc, hr):  # the local transaction is still unknown
                await c.invoke_oneway(b.addr, RemotingCommand.request(RequestCode.END_TRANSACTION,
                                                                      dict(h, commitOrRollback=0)))
            await async_wait_until(lambda: len({m[0]["msgId"] for m in p.checks}) == 2, 10, what="two checks")
            hdr, msg = p.checks[0]
            assert msg.topic == "TxB" and msg.body in (b"C1", b"R1")  # real topic restored in the check body
            assert msg.properties["TRANSACTION_CHECK_TIMES"] == "1"
            assert int(hdr["commitLogOffset"]) not in (hc["commitLogOffset"], hr["commitLogOffset"])  # the copy

            async def committed():
                return await real_messages(c, b.addr, "TxB")

            (m,) = await async_wait_until(committed, 5, what="commit after check")
            assert m.body == b"C1"
            # the check progress (consumer offsets of CID_RMQ_SYS_TRANS) moves past both halves and their copies
            async def progressed():
                r = await call(c, b.addr, RequestCode.QUERY_CONSUMER_OFFSET,
                               {"consumerGroup": "CID_RMQ_SYS_TRANS", "topic": "RMQ_SYS_TRANS_HALF_TOPIC", "queueId": 0})
                return r.code == ResponseCode.SUCCESS and int(r.ext_fields["offset"]) >= 4

            await async_wait_until(progressed, 10, what="half queue check offset past the resolved messages")
            n_checks = len(p.checks)
            assert n_checks == 2
            r = await call(c, b.addr, RequestCode.GET_MAX_OFFSET, {"topic": "TxB", "queueId": 0})
            assert r.ext_fields["offset"] == "1"
    finally:
        await p.close()


async def test_dying_producer_then_live_one_and_discard_after_max(broker_factory):
    b = broker_factory("t3", **TX_CONF)
    dead = FakeProducer(b.addr, "prod-dead", decide=lambda key: None)  # never answers
    await dead.heartbeat()
    async with RemotingClient() as c:
        h = await send_half(c, b.addr, "TxC", "C-late")
        await async_wait_until(lambda: dead.checks, 10, what="first check reaches the first producer")
        await dead.close()  # dies before answering
        live = FakeProducer(b.addr, "prod-live")
        try:
            await live.heartbeat()

            async def committed():
                return await real_messages(c, b.addr, "TxC")

            (m,) = await async_wait_until(committed, 10, what="commit through the live producer")
            assert m.body == b"C-late"
            # a half message nobody answers for is checked transactionCheckMax times, then discarded
            live.decide = lambda key: None
            await send_half(c, b.addr, "TxC", "C-never")

            async def discarded():
                r = await pull(c, b.addr, "gTcm", "TRANS_CHECK_MAX_TIME_TOPIC", 0, 0)
                return messages(r) if r.code == ResponseCode.SUCCESS else None

            (d,) = await async_wait_until(discarded, 15, what="discard to TRANS_CHECK_MAX_TIME_TOPIC")
            assert d.body == b"C-never" and d.properties["TRANSACTION_CHECK_TIMES"] == "3"
            assert len([x for x in live.checks if x[0]["msgId"] == "C-never"]) == 3
        finally:
            await live.close()
    assert h["msgId"] == "C-late"


async def test_restart_in_the_middle(broker_factory):
    b = broker_factory("t4", **TX_CONF)
    async with RemotingClient() as c:
        h1 = await send_half(c, b.addr, "TxD", "D1")
        h2 = await send_half(c, b.addr, "TxD", "D2")
        assert (await end(c, b.addr, h1, 8)).code == ResponseCode.SUCCESS
    assert b.stop() == 0
    b.start()
    p = FakeProducer(b.addr, "prod-r")
    try:
        await p.heartbeat()
        async with RemotingClient() as c:
            # D1 was committed before the restart: committing again writes nothing
            assert (await end(c, b.addr, h1, 8)).code == ResponseCode.SUCCESS
            # D2 is still pending: the check after the restart resolves it (and only it)

            async def both():
                got = await real_messages(c, b.addr, "TxD")
                return got if len(got) >= 2 else None

            got = await async_wait_until(both, 10, what="D2 committed by check after restart")
            assert sorted(m.body for m in got) == [b"D1", b"D2"]
            assert {x[0]["msgId"] for x in p.checks} == {"D2"}
            assert h2["msgId"] == "D2"
    finally:
        await p.close()


async def test_check_immunity_time_delays_the_first_check(broker_factory):
    b = broker_factory("t5", **dict(TX_CONF, transactionCheckMax=15))  # immunity re-puts count as checks
    p = FakeProducer(b.addr, "prod-imm")
    try:
        await p.heartbeat()
        async with RemotingClient() as c:
            props = {"TRAN_MSG": "true", "PGROUP": PG, "UNIQ_KEY": "IMM", "CHECK_IMMUNITY_TIME_IN_SECONDS": "2"}
            r = await send(c, b.addr, "TxE", b"imm", props, group=PG, sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
            assert r.code == ResponseCode.SUCCESS
            await async_wait_until(lambda: p.checks, 10, what="check after the immunity time")
            hdr, msg = p.checks[0]
            # not checked before 2 s (transactionTimeOut is only 0.5 s); immunity copies carry the first offset
            assert msg.store_timestamp - msg.born_timestamp >= 2000
            assert int(hdr["tranStateTableOffset"]) > 1
            assert msg.properties.get("TRAN_PREPARED_QUEUE_OFFSET") == r.ext_fields["queueOffset"]

            async def committed():
                return await real_messages(c, b.addr, "TxE")

            (m,) = await async_wait_until(committed, 5, what="commit after immunity")
            assert m.body == b"imm" and m.store_timestamp - m.born_timestamp >= 2000
    finally:
        await p.close()


async def test_slave_refuses_end_transaction(broker_factory):
    b = broker_factory("t6", brokerRole="SLAVE", brokerId=1)
    async with RemotingClient() as c:
        hdr = {"producerGroup": PG, "tranStateTableOffset": 0, "commitLogOffset": 0, "msgId": "x", "commitOrRollback": 8}
        r = await call(c, b.addr, RequestCode.END_TRANSACTION, hdr)
        assert r.code == ResponseCode.SLAVE_NOT_AVAILABLE
        # no delivery/check services on a slave: delayOffset.json is not written
        r = await call(c, b.addr, RequestCode.GET_ALL_DELAY_OFFSET)
    assert not (b.store / "config" / "delayOffset.json").exists()

"""DLedger mode, real processes: the broker's own writes wait for the quorum, as client sends do.

A consumer send-back, an END_TRANSACTION commit and a delayed message coming due
are all written by the broker itself. With both followers stopped (SIGSTOP) the
leader can append but nothing commits, so none of them may be acknowledged or
counted as done; once the followers run again everything completes, and the
delayed message is delivered exactly once.
"""

from __future__ import annotations

import asyncio

import pytest

from common.message import MessageSysFlag
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.errors import RemotingError
from remoting.header.broker import ConsumerSendMsgBackRequestHeader, EndTransactionRequestHeader
from tests.dledger_broker.cluster import DLedgerCluster, max_offset, msg_offset, pull_all, send
from tests.support import async_wait_until

GROUP = "dledger-cg"
PG = "dledger-tx-pg"


async def send_back(c: RemotingClient, addr: str, offset: int) -> int:
    """CONSUMER_SEND_MSG_BACK straight to the DLQ (delay level -1); the answer's code (-1: no answer)."""
    h = ConsumerSendMsgBackRequestHeader(offset=offset, group=GROUP, delayLevel=-1, maxReconsumeTimes=16)
    try:
        r = await c.invoke(addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, h), 8)
    except RemotingError:
        return -1
    return r.code


async def end_tx(c: RemotingClient, addr: str, half: RemotingCommand) -> int:
    """END_TRANSACTION commit of the half message ``half`` (its send answer), as a request."""
    f = half.ext_fields
    h = EndTransactionRequestHeader(producerGroup=PG, tranStateTableOffset=int(f["queueOffset"]),
                                    commitLogOffset=msg_offset(f["msgId"]),
                                    commitOrRollback=MessageSysFlag.TRANSACTION_COMMIT_TYPE,
                                    msgId=f["msgId"], transactionId=f["msgId"])
    try:
        r = await c.invoke(addr, RemotingCommand.request(RequestCode.END_TRANSACTION, h), 8)
    except RemotingError:
        return -1
    return r.code


@pytest.mark.parametrize("batch_push", ["false", "true"], ids=["push1", "batchpush"])
async def test_internal_puts_wait_for_the_quorum(procs, tmp_path, batch_push):
    # DLedger-like timing (2 s heartbeats): the leader must stay leader while its followers
    # are stopped for a few seconds (with the broker's 1.2 s check-quorum it steps down, and a
    # delayed message whose put timed out may be delivered again by whichever node leads next)
    cl = DLedgerCluster(procs, tmp_path, enableBatchPush=batch_push, heartBeatTimeIntervalMs=2000).start()
    async with RemotingClient() as c:
        master = await cl.wait_master(c)
        leader = cl.index_of(master)
        followers = [i for i in range(3) if i != leader]
        r = await send(c, master, b"to-send-back", topic="IpT")
        assert r.code == ResponseCode.SUCCESS, r.remark
        consumed = msg_offset(r.ext_fields["msgId"])
        half = await send(c, master, b"tx-body", topic="IpTxT", sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE,
                          props={"TRAN_MSG": "true", "PGROUP": PG, "UNIQ_KEY": "ip-tx-1"})
        assert half.code == ResponseCode.SUCCESS, half.remark
        # a delayed message (level 1: 1 s), acknowledged by the quorum just before the followers stop
        r = await send(c, master, b"due-while-stopped", topic="IpDelayT", props={"DELAY": "1"})
        assert r.code == ResponseCode.SUCCESS, r.remark
        await async_wait_until(lambda: _max_is(c, master, "SCHEDULE_TOPIC_XXXX", 1), 10, 0.02, "delayed unit dispatched")
        for i in followers:
            cl.pause(i)
        try:
            # the leader appends each write, but no quorum acknowledges it: no SUCCESS
            code_back, code_tx = await asyncio.gather(send_back(c, master, consumed), end_tx(c, master, half))
            assert code_back != ResponseCode.SUCCESS, "send-back acknowledged without a quorum"
            assert code_tx != ResponseCode.SUCCESS, "END_TRANSACTION commit acknowledged without a quorum"
            # the delayed message comes due; its put times out too (WAIT_QUORUM_ACK_TIMEOUT after 2.5 s)
            await async_wait_until(lambda: _FAILED_DELIVERY in cl.nodes[leader].output(), 10, 0.05,
                                   "the delayed delivery put failing")
        finally:
            for i in followers:
                cl.resume(i)
        m = await cl.wait_master(c, 20)

        async def ok(call) -> bool:
            addr = (await cl.broker_addrs(c)).get(0) or m
            return await call(addr) == ResponseCode.SUCCESS

        # the consumer's retry and the producer's repeated commit (the check) now succeed
        await async_wait_until(lambda: ok(lambda a: send_back(c, a, consumed)), 30, 0.1, "send-back accepted")
        await async_wait_until(lambda: ok(lambda a: end_tx(c, a, half)), 30, 0.1, "commit accepted")
        m = await cl.wait_master(c, 20)
        assert b"to-send-back" in [x.body for x in await pull_all(c, m, f"%DLQ%{GROUP}")]
        committed = [x.body for x in await pull_all(c, m, "IpTxT")]
        if m == master:
            # the same leader settled the timed-out commit's entry first: the repeated commit wrote nothing
            assert committed == [b"tx-body"]
        else:  # another leader has no record of the first attempt: at least once
            assert b"tx-body" in committed
        # the delayed message arrives once: the timed-out attempt's entry commits (or is replaced by
        # another leader's log) and the schedule service waits for that outcome instead of putting again
        await async_wait_until(lambda: _max_is(c, m, "IpDelayT", 1), 30, 0.02, "delayed message delivered")
        assert [x.body for x in await pull_all(c, m, "IpDelayT")] == [b"due-while-stopped"]
        # and nothing more comes later (the level's task has moved past the unit)
        r = await send(c, m, b"fence", topic="IpDelayT", props={"DELAY": "1"})
        assert r.code == ResponseCode.SUCCESS, r.remark
        await async_wait_until(lambda: _max_is(c, m, "IpDelayT", 2), 30, 0.02, "fence delivered")
        assert [x.body for x in await pull_all(c, m, "IpDelayT")] == [b"due-while-stopped", b"fence"]
        # many units due at once are delivered together (a window of puts awaiting the quorum), once each
        many = [b"many-%03d" % k for k in range(100)]
        rs = await asyncio.gather(*(send(c, m, b, topic="IpDelayT", props={"DELAY": "1"}) for b in many))
        assert all(r.code == ResponseCode.SUCCESS for r in rs)
        await async_wait_until(lambda: _max_is(c, m, "IpDelayT", 102), 30, 0.02, "100 delayed messages delivered")
        got = [x.body for x in await pull_all(c, m, "IpDelayT")]
        assert len(got) == 102 and sorted(got[2:]) == many


_FAILED_DELIVERY = "delivering delayed message of level 1 failed"


async def _max_is(c, addr, topic, n) -> bool:
    return await max_offset(c, addr, topic) >= n

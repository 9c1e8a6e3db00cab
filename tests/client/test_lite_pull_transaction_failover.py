"""LitePullConsumer (assign/subscribe, poll, seek, commit), transactions, NameServer fail-over, allocation."""

from __future__ import annotations

import asyncio
import threading

import pytest

from client import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    LitePullConsumer,
    LocalTransactionState,
    Message,
    MessageQueue,
    MQAdmin,
    MQClientError,
    Producer,
    PushConsumer,
    SendStatus,
    TransactionProducer,
    allocate_averagely,
    allocate_averagely_by_circle,
)
from client.blocking import BlockingLitePullConsumer, BlockingProducer, BlockingPushConsumer
from client.message import msg_id_of
from tests.client.conftest import create_topic, unique, wait_for


async def send_n(ns, topic, n, prefix="m"):
    async with Producer(unique("PG"), ns) as p:
        return [await p.send(Message(topic, f"{prefix}{i}".encode())) for i in range(n)]


async def poll_until(c: LitePullConsumer, pred, timeout=20.0):
    got = []

    async def step():
        got.extend(await c.poll(0.2))
        return pred(got)

    await wait_for(step, timeout, "polled")
    return got


async def test_lite_pull_assign_poll_seek_commit(cluster):
    ns = cluster.namesrv_addr
    topic = unique("LiteAssign")
    await create_topic(ns, topic, cluster.brokers[:1], queues=2)
    rs = await send_n(ns, topic, 20)
    group = unique("LPG")
    c = LitePullConsumer(group, ns, auto_commit=False, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    await c.start()
    try:
        mqs = await c.fetch_message_queues(topic)
        assert mqs == [MessageQueue(topic, "brokera", 0), MessageQueue(topic, "brokera", 1)]
        c.assign(mqs)
        got = await poll_until(c, lambda g: len(g) >= 20)
        assert sorted(msg_id_of(m) for m in got) == sorted(r.msg_id for r in rs)
        q0 = mqs[0]
        n0 = sum(1 for r in rs if r.message_queue == q0)
        await c.seek(q0, 0)  # re-read queue 0 from the start
        again = await poll_until(c, lambda g: len(g) >= n0)
        assert all(m.queue_id == 0 for m in again) and [m.queue_offset for m in again] == list(range(n0))
        with pytest.raises(MQClientError, match="Seek offset illegal"):
            await c.seek(q0, 10_000)
        assert await c.committed(q0) in (-1, 0)
        await c.commit_sync()
        assert await c.committed(q0) == n0
    finally:
        await c.shutdown()
    async with MQAdmin(ns) as admin:
        stats = await admin.consume_stats(group, topic)
    assert sum(ow.consumerOffset for ow in stats.offsetTable.values()) == 20


async def test_lite_pull_subscribe_auto_commit_resumes(cluster):
    ns = cluster.namesrv_addr
    topic = unique("LiteSub")
    group = unique("LPS")
    await create_topic(ns, topic, cluster.brokers)
    first = await send_n(ns, topic, 30, "a")
    c = LitePullConsumer(group, ns, auto_commit=True, auto_commit_interval=0.2,
                         consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    c.subscribe(topic, "*")
    async with c:
        got = await poll_until(c, lambda g: len(g) >= 30)
    assert {msg_id_of(m) for m in got} == {r.msg_id for r in first}
    second = await send_n(ns, topic, 10, "b")
    c2 = LitePullConsumer(group, ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    c2.subscribe(topic)
    async with c2:
        got2 = await poll_until(c2, lambda g: len(g) >= 10)
        got2 += await c2.poll(0.3)
    assert {msg_id_of(m) for m in got2} == {r.msg_id for r in second}


class TxListener:
    def __init__(self):
        self.checked = threading.Event()
        self.local = {}

    def execute_local_transaction(self, msg, arg):
        return arg

    def check_local_transaction(self, msg):
        self.checked.set()
        return LocalTransactionState.COMMIT_MESSAGE


async def test_transaction_commit_rollback_and_check(own_cluster):
    c = own_cluster(brokers=1, transactionCheckInterval=500, transactionTimeOut=500)
    ns = c.namesrv_addr
    topic = unique("TxTopic")
    await create_topic(ns, topic, c.brokers, queues=1)
    listener = TxListener()
    p = TransactionProducer(unique("TPG"), ns, transaction_listener=listener)
    await p.start()
    try:
        committed = await p.send_message_in_transaction(Message(topic, b"commit me"), LocalTransactionState.COMMIT_MESSAGE)
        rolled = await p.send_message_in_transaction(Message(topic, b"roll me back"),
                                                     LocalTransactionState.ROLLBACK_MESSAGE)
        unknown = await p.send_message_in_transaction(Message(topic, b"ask me later"), LocalTransactionState.UNKNOW)
        assert committed.send_status == SendStatus.SEND_OK and committed.local_transaction_state.name == "COMMIT_MESSAGE"
        lp = LitePullConsumer(unique("TXC"), ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        lp.subscribe(topic)
        async with lp:
            got = await poll_until(lp, lambda g: {m.body for m in g} >= {b"commit me", b"ask me later"}, 30)
            got += await lp.poll(0.5)
        bodies = sorted(m.body for m in got)
        assert bodies == [b"ask me later", b"commit me"]
        assert listener.checked.is_set()
        assert {msg_id_of(m) for m in got} == {committed.msg_id, unknown.msg_id}
        assert rolled.msg_id not in {msg_id_of(m) for m in got}
    finally:
        await p.shutdown()


async def test_namesrv_failover(own_cluster):
    c = own_cluster(brokers=1, namesrvs=2)
    ns = c.namesrv_addr
    topic = unique("FailoverTopic")
    await create_topic(ns, topic, c.brokers)
    async with MQAdmin(c.namesrvs[1].addr) as admin:
        await wait_for(lambda: _routed(admin, topic), 15, "second NameServer knows the broker")
    c.namesrvs[0].stop()  # the first in the list is gone: clients move on to the second
    got = []

    async def listener(msgs, ctx):
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    cons = PushConsumer(unique("CGN"), config=ClientConfig(namesrv_addr=ns),
                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    cons.subscribe(topic)
    cons.register_message_listener(listener)
    async with cons:
        rs = await send_n(ns, topic, 10)
        await wait_for(lambda: {r.msg_id for r in rs} <= {msg_id_of(m) for m in got}, 20)


async def _routed(admin, topic):
    try:
        await admin.topic_route(topic)
        return True
    except Exception:
        return False


def test_blocking_facade_round_trip(cluster):
    ns = cluster.namesrv_addr
    topic = unique("BlockTopic")
    asyncio.run(create_topic(ns, topic, cluster.brokers))
    got = []
    done = threading.Event()

    def listener(msgs, ctx):  # runs on a consume thread
        got.extend(msgs)
        if len(got) >= 5:
            done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    cons = BlockingPushConsumer(unique("BCG"), ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    cons.subscribe(topic)
    cons.register_message_listener(listener)
    with cons, BlockingProducer(unique("BPG"), ns) as p:
        results = [p.send(Message(topic, b"blocking %d" % i)) for i in range(5)]
        assert done.wait(20)
    assert {r.msg_id for r in results} <= {msg_id_of(m) for m in got}
    lp = BlockingLitePullConsumer(unique("BLP"), ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    lp.subscribe(topic)
    with lp:
        polled = []
        for _ in range(100):
            polled += lp.poll(0.2)
            if len(polled) >= 5:
                break
    assert len(polled) == 5


def _q(n, brokers=("a", "b")):
    return sorted((MessageQueue("T", b, i) for b in brokers for i in range(n)),
                  key=lambda q: (q.topic, q.brokerName, q.queueId))


def test_allocation_matches_java():
    mqs = _q(4)  # a0..a3 b0..b3
    cids = ["c1", "c2", "c3"]
    ids = lambda qs: [f"{q.brokerName}{q.queueId}" for q in qs]  # noqa: E731
    assert [ids(allocate_averagely("g", c, mqs, cids)) for c in cids] == [
        ["a0", "a1", "a2"], ["a3", "b0", "b1"], ["b2", "b3"]]
    assert [ids(allocate_averagely_by_circle("g", c, mqs, cids)) for c in cids] == [
        ["a0", "a3", "b2"], ["a1", "b0", "b3"], ["a2", "b1"]]
    many = [f"c{i}" for i in range(10)]
    assert [len(allocate_averagely("g", c, mqs, sorted(many))) for c in sorted(many)] == [1] * 8 + [0] * 2
    assert allocate_averagely("g", "stranger", mqs, cids) == []
    with pytest.raises(ValueError):
        allocate_averagely("g", "c1", mqs, [])

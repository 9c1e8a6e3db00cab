"""PushConsumer against real processes: clustering with rebalance, broadcasting, filters, offsets, restarts."""

from __future__ import annotations

import asyncio
import collections
import os

import pytest

from client import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    Message,
    MessageModel,
    MQAdmin,
    MQBrokerError,
    Producer,
    PushConsumer,
    select_message_queue_by_hash,
)
from client.message import MessageQueue, msg_id_of
from remoting import ResponseCode
from remoting.body.consumer import ResetOffsetBody
from tests.client.conftest import create_topic, unique, wait_for


class Collector:
    """A concurrent listener recording every delivered message id and body."""

    def __init__(self):
        self.msgs = []
        self.ids = collections.Counter()

    async def __call__(self, msgs, ctx):
        for m in msgs:
            self.msgs.append(m)
            self.ids[msg_id_of(m)] += 1
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS


def fast_config(ns: str, **kw) -> ClientConfig:
    return ClientConfig(namesrv_addr=ns, persist_consumer_offset_interval=0.5, **kw)


def consumer(group, ns, listener, topic, expr="*", **kw) -> PushConsumer:
    c = PushConsumer(group, config=fast_config(ns), consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **kw)
    c.subscribe(topic, expr)
    c.register_message_listener(listener)
    return c


def consumed_through(c: PushConsumer, topic: str) -> int:
    """The offsets the consumer has consumed through, summed over the topic's queues: once it equals
    what was sent, every message was delivered or filtered out, so a wrong extra delivery has shown."""
    return sum(off for mq, off in c.offset_store.table.items() if mq.topic == topic)


async def send_n(ns, topic, n, prefix="m", **kw) -> list[str]:
    async with Producer(unique("PG"), ns) as p:
        rs = await asyncio.gather(*[p.send(Message(topic, f"{prefix}{i}".encode(), **kw)) for i in range(n)])
    return [r.msg_id for r in rs]


async def test_cluster_consumer_gets_every_message_once(cluster):
    topic = unique("PushAll")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    ids = await send_n(cluster.namesrv_addr, topic, 200)
    col = Collector()
    async with consumer(unique("CG"), cluster.namesrv_addr, col, topic) as c:
        await wait_for(lambda: set(ids) <= set(col.ids), 20, "all consumed")
        assert len([q for q in c.rebalance.process_queue_table if q.topic == topic]) == 8
        assert {q.topic for q in c.rebalance.process_queue_table} <= {topic, f"%RETRY%{c.group}"}
    assert max(col.ids.values()) == 1


async def test_tag_filter_is_rechecked_client_side(cluster):
    topic = unique("PushTags")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    async with Producer(unique("PG"), cluster.namesrv_addr) as p:
        for i in range(30):
            await p.send(Message(topic, b"x%d" % i, tags="abc"[i % 3]))
        # a matching sentinel at the end of every queue: once each is consumed and nothing pulled is
        # left unconsumed, every message before it was pulled and filtered, so a wrong one has shown
        mqs = await p.fetch_publish_message_queues(topic)
        for mq in mqs:
            await p.send(Message(topic, b"end", tags="a"), mq=mq)
    col = Collector()
    c = consumer(unique("CG"), cluster.namesrv_addr, col, topic, "a || c")

    def all_filtered_through() -> bool:
        ends = sum(m.body == b"end" for m in col.msgs)
        return ends == len(mqs) and all(pq.msg_count == 0 for pq in c.rebalance.process_queue_table.values())

    async with c:
        await wait_for(all_filtered_through, 20, "every queue's sentinel consumed")
    assert sorted(m.tags for m in col.msgs if m.body != b"end") == ["a"] * 10 + ["c"] * 10


async def test_rebalance_as_consumers_join_and_leave(cluster):
    topic = unique("PushRebalance")
    group = unique("CGR")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    ns = cluster.namesrv_addr
    c1_col, c2_col = Collector(), Collector()
    c1 = consumer(group, ns, c1_col, topic)
    await c1.start()
    sent: list[str] = []
    try:
        await wait_for(lambda: len([q for q in c1.rebalance.process_queue_table if q.topic == topic]) == 8, 20)
        sent += await send_n(ns, topic, 100, "a")
        await wait_for(lambda: set(sent) <= set(c1_col.ids), 20, "c1 consumed the first batch")

        c2 = consumer(group, ns, c2_col, topic)
        await c2.start()

        def split():
            q1 = {q for q in c1.rebalance.process_queue_table if q.topic == topic}
            q2 = {q for q in c2.rebalance.process_queue_table if q.topic == topic}
            return len(q1) == 4 and len(q2) == 4 and not q1 & q2

        await wait_for(split, 25, "queues split between two consumers")
        sent += await send_n(ns, topic, 100, "b")
        both = lambda: set(sent) <= set(c1_col.ids) | set(c2_col.ids)  # noqa: E731
        await wait_for(both, 20, "second batch consumed by both")
        assert c2_col.msgs, "the new consumer took part"

        await c2.shutdown()
        await wait_for(lambda: len([q for q in c1.rebalance.process_queue_table if q.topic == topic]) == 8, 25,
                       "c1 took every queue back")
        sent += await send_n(ns, topic, 100, "c")
        await wait_for(both, 20, "third batch consumed")
    finally:
        await c1.shutdown()
    all_ids = c1_col.ids + c2_col.ids
    assert set(sent) <= set(all_ids)
    dups = sum(v - 1 for v in all_ids.values())
    assert dups <= 60, f"{dups} duplicates: only messages in flight at a rebalance may repeat"


async def test_broadcasting_delivers_everything_to_each_consumer(cluster, tmp_path):
    topic = unique("PushBroadcast")
    group = unique("CGB")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    cols = [Collector(), Collector()]
    cs = [consumer(group, cluster.namesrv_addr, col, topic, message_model=MessageModel.BROADCASTING,
                   offset_store_dir=str(tmp_path / f"o{i}")) for i, col in enumerate(cols)]
    for c in cs:
        await c.start()
    try:
        await wait_for(lambda: all(len([q for q in c.rebalance.process_queue_table]) == 8 for c in cs), 20)
        ids = await send_n(cluster.namesrv_addr, topic, 50)
        for col in cols:
            await wait_for(lambda col=col: set(ids) <= set(col.ids), 20, "each consumer got all")
        client_ids = [c.client_id for c in cs]
    finally:
        for c in cs:
            await c.shutdown()
    for i, cid in enumerate(client_ids):
        path = tmp_path / f"o{i}" / cid / group / "offsets.json"
        # Java's offsets.json: fastjson with MessageQueue objects as keys
        table = ResetOffsetBody.from_json(path.read_text()).offsetTable
        assert sum(table.values()) == 50 and {mq.topic for mq in table} == {topic}


async def test_offsets_committed_to_broker_and_resumed(cluster):
    topic = unique("PushOffsets")
    group = unique("CGO")
    ns = cluster.namesrv_addr
    await create_topic(ns, topic, cluster.brokers)
    ids1 = await send_n(ns, topic, 40, "first")
    col = Collector()
    async with consumer(group, ns, col, topic):
        await wait_for(lambda: set(ids1) <= set(col.ids), 20)
    async with MQAdmin(ns) as admin:
        stats = await admin.consume_stats(group, topic)
    assert sum(ow.consumerOffset for mq, ow in stats.offsetTable.items() if mq.topic == topic) == 40
    ids2 = await send_n(ns, topic, 10, "second")
    col2 = Collector()
    c2 = consumer(group, ns, col2, topic)
    async with c2:
        await wait_for(lambda: set(ids2) <= set(col2.ids) and consumed_through(c2, topic) == 50, 20)
    assert not set(ids1) & set(col2.ids), "committed messages are not consumed again"


async def test_consume_from_last_offset_on_a_fresh_queue_starts_at_zero_as_java(cluster):
    """The broker answers offset 0 (not QUERY_NOT_FOUND) for a new group while the queue's first
    message is still in memory, so even CONSUME_FROM_LAST_OFFSET reads the history, exactly as Java does."""
    topic = unique("PushLast")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    old = await send_n(cluster.namesrv_addr, topic, 20, "old")
    col = Collector()
    c = PushConsumer(unique("CGL"), config=fast_config(cluster.namesrv_addr))
    assert c.consume_from_where == ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    c.subscribe(topic)
    c.register_message_listener(col)
    async with c:
        await wait_for(lambda: set(old) <= set(col.ids), 20)


async def test_sync_listener_runs_on_thread_pool_with_batches(cluster):
    topic = unique("PushSync")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers[:1], queues=1)
    ids = await send_n(cluster.namesrv_addr, topic, 30)
    sizes, threads, got = [], set(), []
    import threading

    def listener(msgs, ctx):
        sizes.append(len(msgs))
        threads.add(threading.current_thread().name)
        got.extend(msg_id_of(m) for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async with consumer(unique("CGS"), cluster.namesrv_addr, listener, topic, consume_message_batch_max_size=8):
        await wait_for(lambda: set(ids) <= set(got), 20)
    assert max(sizes) > 1 and max(sizes) <= 8
    assert all(t.startswith("Consume_") for t in threads)


async def test_broker_restart_mid_consume_resumes_from_committed_offset(own_cluster):
    c = own_cluster(brokers=1)
    ns = c.namesrv_addr
    topic = unique("PushRestart")
    await create_topic(ns, topic, c.brokers, queues=2)
    first = await send_n(ns, topic, 50, "before")
    col = Collector()
    cons = consumer(unique("CGX"), ns, col, topic)
    await cons.start()
    try:
        await wait_for(lambda: set(first) <= set(col.ids), 20)
        async with MQAdmin(ns) as admin:
            async def committed():
                stats = await admin.consume_stats(cons.group, topic)
                return sum(ow.consumerOffset for ow in stats.offsetTable.values()) == 50
            await wait_for(committed, 10, "offsets committed")
        c.brokers[0].stop()
        c.brokers[0].start()
        second = await wait_for(lambda: _try_send(ns, topic), 30, "broker back")
        await wait_for(lambda: set(second) <= set(col.ids), 30, "messages after restart consumed")
    finally:
        await cons.shutdown()
    assert max(col.ids[i] for i in first) == 1, "nothing before the restart was consumed twice"


async def _try_send(ns, topic):
    try:
        return await send_n(ns, topic, 20, "after")
    except Exception:
        return None


async def test_sql92_subscription(own_cluster):
    c = own_cluster(brokers=1, enablePropertyFilter="true")
    topic = unique("PushSql")
    await create_topic(c.namesrv_addr, topic, c.brokers)
    async with Producer(unique("PG"), c.namesrv_addr) as p:
        for i in range(20):
            m = Message(topic, b"v%d" % i)
            m.put_user_property("a", str(i))
            await p.send(m)
    col = Collector()
    cons = PushConsumer(unique("CGQ"), config=fast_config(c.namesrv_addr),
                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    cons.subscribe(topic, "a >= 15", "SQL92")
    cons.register_message_listener(col)
    async with cons:
        await wait_for(lambda: len(col.msgs) >= 5 and consumed_through(cons, topic) == 20, 20)
    assert sorted(int(m.properties["a"]) for m in col.msgs) == [15, 16, 17, 18, 19]


async def test_failed_message_is_redelivered_from_retry_topic(cluster):
    topic = unique("PushRetry")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    [mid] = await send_n(cluster.namesrv_addr, topic, 1)
    deliveries = []

    async def listener(msgs, ctx):
        deliveries.extend(msgs)
        if len(deliveries) == 1:
            ctx.delay_level_when_next_consume = 1  # 1 s
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async with consumer(unique("CGF"), cluster.namesrv_addr, listener, topic):
        await wait_for(lambda: len(deliveries) >= 2, 25, "redelivery")
    again = deliveries[1]
    assert msg_id_of(again) == mid and again.topic == topic and again.reconsume_times >= 1


async def test_orderly_consumer_keeps_per_queue_order(cluster):
    topic = unique("PushOrderly")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    async with Producer(unique("PG"), cluster.namesrv_addr) as p:
        for i in range(60):
            await p.send(Message(topic, f"{i % 6}:{i}".encode()), selector=select_message_queue_by_hash, arg=i % 6)
    seen: dict[str, list[int]] = collections.defaultdict(list)

    async def listener(msgs, ctx):
        for m in msgs:
            k, v = m.body.decode().split(":")
            seen[k].append(int(v))
        return ConsumeOrderlyStatus.SUCCESS

    c = PushConsumer(unique("CGOrd"), config=fast_config(cluster.namesrv_addr),
                     consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    c.subscribe(topic)
    c.register_message_listener_orderly(listener)
    async with c:
        await wait_for(lambda: sum(len(v) for v in seen.values()) >= 60, 25, "orderly consumption")
    for k, vs in seen.items():
        assert vs == sorted(vs), f"order {k} out of order: {vs}"


def test_offset_dir_never_escapes(tmp_path):
    from client.offset_store import LocalFileOffsetStore

    with pytest.raises(ValueError):
        LocalFileOffsetStore("../../etc", "G", str(tmp_path))
    with pytest.raises(ValueError):
        LocalFileOffsetStore("127.0.0.1@1", "../x", str(tmp_path))
    s = LocalFileOffsetStore("127.0.0.1@1", "G", str(tmp_path))
    assert os.path.dirname(s.path).startswith(str(tmp_path))


async def test_running_info_consume_directly_and_unregister(cluster):
    topic = unique("PushDirect")
    group = unique("CGD")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    async with Producer(unique("PG"), cluster.namesrv_addr) as p:
        r = await p.send(Message(topic, b"direct me"))
    col = Collector()
    c = consumer(group, cluster.namesrv_addr, col, topic)
    async with MQAdmin(cluster.namesrv_addr) as admin:
        async with c:
            await wait_for(lambda: col.msgs, 20)
            info = await admin.consumer_running_info(group, c.client_id)
            assert {s["topic"] for s in info["subscriptionSet"]} == {topic, f"%RETRY%{group}"}
            assert info["properties"]["messageModel"] == "CLUSTERING"
            result = await admin.consume_message_directly(group, c.client_id, r.offset_msg_id)
            assert result["consumeResult"] == "CR_SUCCESS"
            assert [m.body for m in col.msgs].count(b"direct me") == 2
        # shutdown unregistered the client from every broker: the group has no connection left
        with pytest.raises(MQBrokerError):
            await admin.consumer_connection(group)


async def test_delay_level_message_arrives_later(cluster):
    topic = unique("PushDelay")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    col = Collector()
    async with consumer(unique("CGDelay"), cluster.namesrv_addr, col, topic) as c:
        await wait_for(lambda: len([q for q in c.rebalance.process_queue_table if q.topic == topic]) == 8, 20)
        async with Producer(unique("PG"), cluster.namesrv_addr) as p:
            r = await p.send(Message(topic, b"later", delay_time_level=1))  # level 1 = 1 s
            now = await p.send(Message(topic, b"now"))
        await wait_for(lambda: {now.msg_id, r.msg_id} <= set(col.ids), 20, "both delivered")
    by_id = {msg_id_of(m): m for m in col.msgs}
    delayed = by_id[r.msg_id]
    assert delayed.topic == topic and delayed.body == b"later"
    assert delayed.store_timestamp - delayed.born_timestamp >= 900
    assert col.msgs.index(by_id[now.msg_id]) < col.msgs.index(delayed)


async def test_local_retry_when_send_back_and_resend_both_fail(cluster):
    """Java's last resort: when neither CONSUMER_SEND_MSG_BACK nor the resend to %RETRY% works, the
    batch is consumed again locally (after 5 s) and its offset is not committed until then."""
    topic = unique("PushLocalRetry")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers[:1], queues=1)
    [mid] = await send_n(cluster.namesrv_addr, topic, 1)
    deliveries = []

    async def listener(msgs, ctx):
        deliveries.extend(msgs)
        return (ConsumeConcurrentlyStatus.RECONSUME_LATER if len(deliveries) == 1
                else ConsumeConcurrentlyStatus.CONSUME_SUCCESS)

    c = consumer(unique("CGLR"), cluster.namesrv_addr, listener, topic)
    async with c:
        refused = []

        async def refuse(*a, **kw):  # fault injection: the broker path and the resend path are both down
            refused.append(a)
            raise MQBrokerError(ResponseCode.SYSTEM_ERROR, "injected")

        c.instance.api.consumer_send_message_back = refuse
        c._inner_producer.send = refuse
        await wait_for(lambda: deliveries, 20, "first delivery")
        mq = MessageQueue(topic, "brokera", 0)
        await wait_for(lambda: len(refused) >= 2, 10, "send-back and resend both refused")
        assert c.offset_store.table.get(mq, 0) == 0, "offset held back while the message awaits its local retry"
        await wait_for(lambda: len(deliveries) >= 2, 10, "local redelivery")
        await wait_for(lambda: c.offset_store.table.get(mq) == 1, 5, "offset advanced after success")
    assert [msg_id_of(m) for m in deliveries[:2]] == [mid, mid]
    assert deliveries[1].reconsume_times == 1 and deliveries[1].topic == topic


async def test_flow_control_caps_cached_messages_per_queue(cluster):
    topic = unique("PushFlow")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers[:1], queues=1)
    ids = await send_n(cluster.namesrv_addr, topic, 200)
    release = asyncio.Event()
    got = []

    async def slow(msgs, ctx):
        await release.wait()
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = consumer(unique("CGFlow"), cluster.namesrv_addr, slow, topic, pull_threshold_for_queue=20, pull_batch_size=8)
    async with c:
        mq = MessageQueue(topic, "brokera", 0)
        await wait_for(lambda: mq in c.rebalance.process_queue_table
                       and c.rebalance.process_queue_table[mq].msg_count > 0, 20)
        pq = c.rebalance.process_queue_table[mq]
        peak = 0
        for _ in range(50):  # watch for half a second: pulling must stop near the threshold
            peak = max(peak, pq.msg_count)
            await asyncio.sleep(0.01)
        assert 20 < peak <= 20 + 8 + 8, peak
        release.set()
        await wait_for(lambda: set(ids) <= {msg_id_of(m) for m in got}, 20, "everything after release")

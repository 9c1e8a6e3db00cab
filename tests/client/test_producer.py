"""Producer against real NameServer and broker processes: send variants, batches, ordering, compression, ids."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import time

import pytest

from client import (
    Message,
    MessageQueue,
    MQAdmin,
    MQBrokerError,
    MQClientError,
    Producer,
    SendStatus,
    select_message_queue_by_hash,
)
from client.message_id import MessageClientIDSetter, _month_start_ms, get_ip_from_id
from common.message import MessageSysFlag, decode_message, decode_offset_msg_id
from remoting import RemotingClient, RemotingCommand, RequestCode, ResponseCode
from tests.client.conftest import create_topic, unique, wait_for


@pytest.fixture
async def producer(cluster):
    p = Producer(unique("PG"), cluster.namesrv_addr)
    await p.start()
    yield p
    await p.shutdown()


async def raw_view(offset_msg_id: str):
    (host, port), off = decode_offset_msg_id(offset_msg_id)
    async with RemotingClient() as c:
        r = await c.invoke(f"{host}:{port}", RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": off}), 5)
    assert r.code == ResponseCode.SUCCESS, r
    return decode_message(r.body)


async def test_sync_send_stores_tags_keys_properties_and_uniq_key(cluster, producer):
    topic = unique("TopicSync")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    msg = Message(topic, b"hello world", tags="TagA", keys=["k1", "k2"])
    msg.put_user_property("color", "red")
    r = await producer.send(msg)
    assert r.send_status == SendStatus.SEND_OK
    assert len(r.msg_id) == 32 and r.msg_id == r.msg_id.upper()
    (host, port), _ = decode_offset_msg_id(r.offset_msg_id)
    assert f"{host}:{port}" in {b.addr for b in cluster.brokers}
    async with MQAdmin(cluster.namesrv_addr) as admin:
        m = await admin.view_message(r.offset_msg_id)
    assert m.topic == topic and m.body == b"hello world"
    assert m.properties["TAGS"] == "TagA" and m.properties["KEYS"] == "k1 k2" and m.properties["color"] == "red"
    assert m.properties["UNIQ_KEY"] == r.msg_id
    assert m.queue_id == r.message_queue.queueId and m.queue_offset == r.queue_offset


async def test_round_robin_over_both_brokers_and_async_and_oneway(cluster, producer):
    topic = unique("TopicRR")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    results = [await producer.send(Message(topic, b"m%d" % i)) for i in range(16)]
    used = {(r.message_queue.brokerName, r.message_queue.queueId) for r in results}
    assert {b for b, _ in used} == {"brokera", "brokerb"} and len(used) == 8

    seen = []
    fut = producer.send_async(Message(topic, b"async-1"), callback=lambda r, e: seen.append((r, e)))
    r = await fut
    assert r.send_status == SendStatus.SEND_OK
    await wait_for(lambda: seen, 5, "callback")
    assert seen[0][0] is r and seen[0][1] is None

    key = unique("oneway")
    await producer.send_oneway(Message(topic, b"oneway body", keys=key))
    async with MQAdmin(cluster.namesrv_addr) as admin:
        found = await wait_for(lambda: admin.query_message(topic, key), 10, "oneway message indexed")
    assert found[0].body == b"oneway body"


async def test_async_send_failure_reaches_callback(cluster, producer):
    errors = []
    fut = producer.send_async(Message("bad topic!", b"x"), callback=lambda r, e: errors.append(e))
    with pytest.raises(MQClientError):
        await fut
    await wait_for(lambda: errors, 5)
    assert isinstance(errors[0], MQClientError)


async def test_batch_goes_to_one_queue_with_consecutive_offsets(cluster, producer):
    topic = unique("TopicBatch")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    msgs = [Message(topic, f"batch-{i}".encode(), tags="B", keys=f"bk{i}") for i in range(10)]
    r = await producer.send_batch(msgs)
    assert r.send_status == SendStatus.SEND_OK
    ids = r.msg_id.split(",")
    assert len(ids) == 10 and len(set(ids)) == 10
    async with MQAdmin(cluster.namesrv_addr) as admin:
        got = await admin.query_message_by_offset(topic, r.message_queue.brokerName, r.message_queue.queueId,
                                                  r.queue_offset, 32)
    got = got[:10]
    assert [m.body for m in got] == [f"batch-{i}".encode() for i in range(10)]
    assert [m.queue_offset for m in got] == list(range(r.queue_offset, r.queue_offset + 10))
    assert [m.properties["UNIQ_KEY"] for m in got] == ids
    with pytest.raises(MQClientError):
        await producer.send_batch([Message(topic, b"a"), Message(topic + "x", b"b")])
    with pytest.raises(MQClientError):
        await producer.send_batch([Message(topic, b"a", delay_time_level=2)])


async def test_selector_keeps_each_order_on_one_queue_in_order(cluster, producer):
    topic = unique("TopicOrder")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    by_order: dict[int, list] = {}
    for i in range(40):
        order_id = i % 5
        r = await producer.send(Message(topic, f"{order_id}:{i}".encode()), selector=select_message_queue_by_hash,
                                arg=order_id)
        by_order.setdefault(order_id, []).append(r)
    mqs = await producer.fetch_publish_message_queues(topic)
    for order_id, rs in by_order.items():
        assert {r.message_queue for r in rs} == {mqs[order_id % len(mqs)]}
        offs = [r.queue_offset for r in rs]
        assert offs == sorted(offs)
    # explicit queue
    target = MessageQueue(topic, "brokerb", 2)
    r = await producer.send(Message(topic, b"to queue"), target)
    assert r.message_queue == target


async def test_large_body_is_zlib_compressed_and_round_trips(cluster, producer):
    topic = unique("TopicZip")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers[:1])
    body = b"compress me please " * 1000
    r = await producer.send(Message(topic, body))
    raw = await raw_view(r.offset_msg_id)
    assert raw.sys_flag & MessageSysFlag.COMPRESSED
    assert raw.sys_flag & MessageSysFlag.COMPRESSION_TYPE_MASK == MessageSysFlag.COMPRESSION_ZLIB
    assert len(raw.body) < len(body) // 10
    small = await producer.send(Message(topic, b"s" * 4095))
    assert not (await raw_view(small.offset_msg_id)).sys_flag & MessageSysFlag.COMPRESSED
    async with MQAdmin(cluster.namesrv_addr) as admin:
        assert (await admin.view_message(r.offset_msg_id)).body == body


async def test_four_mib_message(cluster, producer):
    topic = unique("TopicBig")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers[:1])
    body = os.urandom(4 * 1024 * 1024)
    r = await producer.send(Message(topic, body), timeout=15)
    assert r.send_status == SendStatus.SEND_OK
    async with MQAdmin(cluster.namesrv_addr, timeout=15) as admin:
        assert (await admin.view_message(r.offset_msg_id)).body == body
    with pytest.raises(MQClientError) as ei:
        await producer.send(Message(topic, b"x" * (4 * 1024 * 1024 + 1)))
    assert "max" in str(ei.value)


async def test_bad_messages_are_refused_before_sending(cluster, producer):
    for bad in (Message("bad topic", b"x"), Message("", b"x"), Message("TopicOk", b"")):
        with pytest.raises(MQClientError):
            await producer.send(bad)
    with pytest.raises(MQClientError):
        await producer.send(Message("SCHEDULE_TOPIC_XXXX", b"x"))
    with pytest.raises(ValueError):
        Message("T", b"x").put_user_property("", "v")


async def test_auto_created_topic_through_tbw102(cluster, producer):
    topic = unique("TopicAuto")
    r = await producer.send(Message(topic, b"first"))
    assert r.send_status == SendStatus.SEND_OK
    async with MQAdmin(cluster.namesrv_addr) as admin:
        route = await wait_for(lambda: _route_or_none(admin, topic), 10, "auto-created route")
    assert route.queueDatas[0].writeQueueNums == 4


async def _route_or_none(admin, topic):
    try:
        return await admin.topic_route(topic)
    except MQBrokerError:
        return None


async def test_retry_on_another_broker_when_one_is_down(own_cluster):
    c = own_cluster(brokers=2)
    topic = unique("TopicFailover")
    await create_topic(c.namesrv_addr, topic, c.brokers)
    async with Producer(unique("PGF"), c.namesrv_addr) as p:
        await p.send(Message(topic, b"warm"))
        c.brokers[0].stop()  # the route cached by the producer still lists it
        results = [await p.send(Message(topic, b"m%d" % i)) for i in range(8)]
    assert all(r.send_status == SendStatus.SEND_OK for r in results)
    assert {r.message_queue.brokerName for r in results} == {"brokerb"}


async def test_send_timeout_is_bounded(own_cluster):
    c = own_cluster(brokers=1)
    topic = unique("TopicTimeout")
    await create_topic(c.namesrv_addr, topic, c.brokers)
    async with Producer(unique("PGT"), c.namesrv_addr, send_msg_timeout=1.0) as p:
        await p.send(Message(topic, b"warm"))
        c.brokers[0].proc.signal(__import__("signal").SIGSTOP)
        try:
            t0 = time.monotonic()
            with pytest.raises((MQClientError, MQBrokerError)):
                await p.send(Message(topic, b"stuck"))
            assert time.monotonic() - t0 < 3.0
        finally:
            c.brokers[0].proc.signal(__import__("signal").SIGCONT)


def test_uniq_id_layout_matches_java():
    gen = MessageClientIDSetter(ip="10.1.2.3", pid=0x12345, loader_hash=0x0A0B0C0D)
    before = int(time.time() * 1000)
    a, b = gen.create_uniq_id(), gen.create_uniq_id()
    raw = bytes.fromhex(a)
    assert len(raw) == 16 and a == a.upper()
    assert raw[:4] == socket.inet_aton("10.1.2.3")
    assert struct.unpack(">h", raw[4:6])[0] == 0x2345
    assert struct.unpack(">i", raw[6:10])[0] == 0x0A0B0C0D
    start, _ = _month_start_ms(before)
    delta = struct.unpack(">i", raw[10:14])[0]
    # Java's (int) cast of the ms since the month's start wraps 24.8 days into the month: compare mod 2^32
    drift = (before - start - delta) % 2**32
    assert min(drift, 2**32 - drift) < 5000
    c1, c2 = struct.unpack(">h", raw[14:16])[0], struct.unpack(">h", bytes.fromhex(b)[14:16])[0]
    assert (c2 - c1) & 0xFFFF == 1
    assert get_ip_from_id(a) == "10.1.2.3"


async def test_many_concurrent_sends_share_connections(cluster, producer):
    topic = unique("TopicConc")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    rs = await asyncio.gather(*[producer.send(Message(topic, b"c" * 100)) for _ in range(500)])
    assert all(r.send_status == SendStatus.SEND_OK for r in rs)
    assert len({r.msg_id for r in rs}) == 500
    assert len(producer.instance.remoting.connections) <= 3  # one per broker (+ NameServer)


async def test_concurrent_sends_are_batched_and_keep_per_message_fields(cluster, producer):
    topic = unique("TopicAccum")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers)
    await producer.send(Message(topic, b"warm up the route"))
    msgs = [Message(topic, f"acc-{i}".encode(), tags=f"t{i % 3}", keys=f"ak{i}") for i in range(300)]
    rs = await asyncio.gather(*[producer.send(m, timeout=15) for m in msgs])
    assert producer.accumulator.batches_sent > 0 and producer.accumulator.messages_batched > 1
    assert len({r.msg_id for r in rs}) == 300 and len({r.offset_msg_id for r in rs}) == 300
    assert len({(r.message_queue, r.queue_offset) for r in rs}) == 300
    async with MQAdmin(cluster.namesrv_addr) as admin:
        for i in (0, 77, 299):
            m = await admin.view_message(rs[i].offset_msg_id)
            assert m.body == f"acc-{i}".encode() and m.tags == f"t{i % 3}" and m.keys == f"ak{i}"
            assert m.properties["UNIQ_KEY"] == rs[i].msg_id
            assert (m.queue_id, m.queue_offset) == (rs[i].message_queue.queueId, rs[i].queue_offset)


async def test_a_refused_message_does_not_fail_its_batch_neighbours(own_cluster):
    c = own_cluster(brokers=1, maxMessageSize=2000)
    topic = unique("TopicRefuse")
    await create_topic(c.namesrv_addr, topic, c.brokers, queues=1)
    async with Producer(unique("PGR"), c.namesrv_addr) as p:
        await p.send(Message(topic, b"warm"))
        msgs = [Message(topic, b"x" * (3000 if i == 5 else 10)) for i in range(20)]
        outcomes = await asyncio.gather(*[p.send(m) for m in msgs], return_exceptions=True)
    assert isinstance(outcomes[5], MQBrokerError) and outcomes[5].code == ResponseCode.MESSAGE_ILLEGAL
    assert all(o.send_status == SendStatus.SEND_OK for i, o in enumerate(outcomes) if i != 5)

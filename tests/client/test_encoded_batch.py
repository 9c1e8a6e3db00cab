"""Producer.send_encoded_batch: a batch body its sender encoded, against real NameServer and broker processes."""

from __future__ import annotations

import pytest

from client import Message, MessageQueue, MQAdmin, MQClientError, Producer, SendStatus
from client.producer import EncodedBatch
from common.message import encode_batch_body
from tests.client.conftest import create_topic, unique


async def test_encoded_batch_is_stored_in_order_with_its_uniq_keys(cluster):
    topic = unique("TopicEncoded")
    await create_topic(cluster.namesrv_addr, topic, cluster.brokers[:1], queues=2)
    keys = [f"{i:032X}" for i in range(5)]
    msgs = [Message(topic, f"m{i}".encode(), tags="T", properties={"UNIQ_KEY": k}) for i, k in enumerate(keys)]
    async with Producer(unique("PGEncoded"), cluster.namesrv_addr) as p:
        mq = MessageQueue(topic, cluster.brokers[0].name, 1)
        r = await p.send_encoded_batch(EncodedBatch(topic, encode_batch_body(msgs), keys), mq)
        assert r.send_status == SendStatus.SEND_OK and r.msg_id == ",".join(keys)
        assert r.message_queue == mq
        with pytest.raises(MQClientError, match="batch is empty") as ei:
            await p.send_encoded_batch(EncodedBatch(topic, b"", []))
        assert ei.value.code == 13
        with pytest.raises(MQClientError, match="the batch size over max value") as ei:
            big = EncodedBatch(topic, b"x" * (p.max_message_size + 1), ["k"])
            await p.send_encoded_batch(big)
        assert ei.value.code == 13
        with pytest.raises(MQClientError, match="forbidden"):
            await p.send_encoded_batch(EncodedBatch("%RETRY%g", encode_batch_body(msgs[:1]), keys[:1]))
    async with MQAdmin(cluster.namesrv_addr) as admin:
        stored = [await admin.view_message(i) for i in r.offset_msg_id.split(",")]
    assert [m.body for m in stored] == [f"m{i}".encode() for i in range(5)]
    assert [m.queue_offset for m in stored] == list(range(r.queue_offset, r.queue_offset + 5))
    assert [m.properties["UNIQ_KEY"] for m in stored] == keys and {m.queue_id for m in stored} == {1}

"""The transaction check pass on a real store in tmp_path, driven by an injected clock (no waiting).

The producer channel is a recorder: what the check sends over the network is
covered end to end in test_transactions.py; here the subject is the decision
logic (young/old, op markers, offsets, discard).
"""

from __future__ import annotations

import pytest

from broker.client_channel_info import ClientChannelInfo
from broker.config import BrokerConfig
from broker.consumer_offset_manager import ConsumerOffsetManager
from broker.producer_manager import ProducerManager
from broker.topic_config_manager import TopicConfigManager
from broker.transaction.transactional_message_bridge import TransactionalMessageBridge
from broker.transaction.transactional_message_service import (
    COMMIT,
    ROLLBACK,
    TransactionalMessageService,
    TransactionCheckListener,
)
from broker.transaction.transactional_message_util import CONSUMER_GROUP, HALF_TOPIC, OP_TOPIC
from common.message import MessageExtBrokerInner, decode_message
from common.util import now_ms
from remoting.codes import ResponseCode
from store.config import MessageStoreConfig
from store.default_message_store import DefaultMessageStore

PG = "pgAlgo"
HOUR = 3600 * 1000


class RecordingChannel:
    closed = False
    remote_addr = "127.0.0.1:1"

    def __init__(self):
        self.sent = []

    def invoke_oneway(self, cmd):
        self.sent.append(cmd)


class Clock:
    def __init__(self, t: int):
        self.t = t

    def __call__(self) -> int:
        return self.t


@pytest.fixture
def env(tmp_path):
    sc = MessageStoreConfig(storePathRootDir=str(tmp_path / "store"), mappedFileSizeCommitLog=1 << 20,
                            mappedFileSizeConsumeQueue=6000, fileReservedTime=72)
    store = DefaultMessageStore(sc, store_host=("127.0.0.1", 10911))
    assert store.load()
    bc = BrokerConfig()
    topics = TopicConfigManager(bc, str(tmp_path / "topics.json"))
    offsets = ConsumerOffsetManager(str(tmp_path / "consumerOffset.json"))
    producers = ProducerManager()
    ch = RecordingChannel()
    producers.register_producer(PG, ClientChannelInfo(channel=ch, client_id="c1"))
    bridge = TransactionalMessageBridge(store, topics, offsets, "b", ("127.0.0.1", 10911))
    clock = Clock(0)
    svc = TransactionalMessageService(bridge, file_reserved_hours=72, clock=clock)
    listener = TransactionCheckListener(bridge, producers, topics)
    yield store, bridge, svc, listener, ch, clock, offsets
    store.shutdown_sync()


def put_half(store, bridge, key: str, born: int):
    msg = MessageExtBrokerInner(topic="RealT", queue_id=2, body=key.encode(),
                                properties={"TRAN_MSG": "true", "PGROUP": PG, "UNIQ_KEY": key},
                                born_timestamp=born)
    r = store.put_message(bridge.parse_half_message_inner(msg))
    assert r.is_ok()
    store.dispatch_pending()
    return store.look_message_by_offset(r.append_result.wrote_offset)


async def run(svc, listener, store, timeout=6000, check_max=15):
    await svc.check(timeout, check_max, listener)
    store.dispatch_pending()


async def _never_written(_inner):
    raise AssertionError("must not write")


async def test_young_waits_old_is_checked_then_resolved(env):
    store, bridge, svc, listener, ch, clock, offsets = env
    born = now_ms()
    half = put_half(store, bridge, "K1", born=born)
    clock.t = half.store_timestamp + 1  # stored before the round began, but too young to check
    await run(svc, listener, store)
    assert ch.sent == [] and offsets.query_offset(CONSUMER_GROUP, HALF_TOPIC, 0) == -1
    clock.t = born + 7000  # older than transactionTimeOut
    await run(svc, listener, store)
    (cmd,) = ch.sent
    copy = decode_message(cmd.body)
    assert copy.topic == "RealT" and copy.queue_id == 2 and copy.properties["TRANSACTION_CHECK_TIMES"] == "1"
    assert int(cmd.ext_fields["tranStateTableOffset"]) == 1  # the re-appended copy
    assert cmd.ext_fields["msgId"] == "K1" and cmd.ext_fields["transactionId"] == "K1"
    assert offsets.query_offset(CONSUMER_GROUP, HALF_TOPIC, 0) == 1
    # the producer commits the copy; the next pass consumes the op marker and both offsets advance
    copy_ext = store.look_message_by_offset(int(cmd.ext_fields["commitLogOffset"]))
    async def put_final(inner):
        return ResponseCode.SUCCESS, None, (await store.put_message_async(inner)).is_ok()

    res = await svc.end_transaction(copy_ext, COMMIT, copy_ext.commit_log_offset, put_final)
    assert res.written
    store.dispatch_pending()
    clock.t += 7000
    await run(svc, listener, store)
    assert len(ch.sent) == 1  # no new check
    assert offsets.query_offset(CONSUMER_GROUP, HALF_TOPIC, 0) == 2
    assert offsets.query_offset(CONSUMER_GROUP, OP_TOPIC, 0) == 1
    # the original (offset 0) ends late: the same transaction, nothing written again
    again = await svc.end_transaction(half, COMMIT, half.commit_log_offset, _never_written)
    assert again.duplicate and again.code == ResponseCode.SUCCESS
    conflict = await svc.end_transaction(half, ROLLBACK, half.commit_log_offset, None)
    assert conflict.duplicate and conflict.code == ResponseCode.SYSTEM_ERROR


async def test_discarded_after_max_checks_and_when_too_old(env):
    store, bridge, svc, listener, ch, clock, offsets = env
    put_half(store, bridge, "K2", born=now_ms() - 73 * HOUR)  # older than fileReservedTime (72 h)
    clock.t = now_ms() + 1
    await run(svc, listener, store)
    assert ch.sent == [] and listener.discarded == 1
    assert store.get_max_offset_in_queue("TRANS_CHECK_MAX_TIME_TOPIC", 0) == 1
    assert offsets.query_offset(CONSUMER_GROUP, HALF_TOPIC, 0) == 1
    # checked check_max times: discarded on the next visit
    put_half(store, bridge, "K3", born=now_ms() - 10_000)
    clock.t = now_ms() + 1
    for n in range(1, 4):
        clock.t += 10_000
        await run(svc, listener, store, check_max=3)
        assert len(ch.sent) == n
    clock.t += 10_000
    await run(svc, listener, store, check_max=3)
    assert len(ch.sent) == 3 and listener.discarded == 2
    d = store.look_message_by_offset(store.get_commit_log_offset_in_queue("TRANS_CHECK_MAX_TIME_TOPIC", 0, 1))
    assert d.body == b"K3" and d.properties["TRANSACTION_CHECK_TIMES"] == "3"


async def test_rollback_before_check_means_no_check(env):
    store, bridge, svc, listener, ch, clock, offsets = env
    half = put_half(store, bridge, "K4", born=now_ms())
    res = await svc.end_transaction(half, ROLLBACK, half.commit_log_offset, None)
    assert res.code == ResponseCode.SUCCESS and not res.written
    store.dispatch_pending()
    clock.t = half.born_timestamp + 60_000
    await run(svc, listener, store)
    assert ch.sent == []
    assert offsets.query_offset(CONSUMER_GROUP, HALF_TOPIC, 0) == 1
    assert offsets.query_offset(CONSUMER_GROUP, OP_TOPIC, 0) == 1
    assert store.get_max_offset_in_queue("RealT", 2) == 0

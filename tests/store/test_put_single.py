"""common.speedups.put_single: CommitLog.put_message's usual case in one compiled call.

The reference is CommitLog.put_message's general path (what runs under the pure twin, which
declines everything). Two logs are fed the same random messages, one with the compiled twin
and one with the pure one, and must end byte for byte and field for field the same: the files,
the results, what is stamped into each message, the queue offsets and the prepared
DispatchRequests. The mix covers what the compiled twin must decline (IPv6 hosts, file rolls,
delays on SCHEDULE_TOPIC, properties given only as a map, illegal messages, a full prepared
queue) as well as what it takes; a count checks that it did take most of them.
"""

from __future__ import annotations

import copy
import random

import pytest

from common import speedups
from common.message import MessageExtBrokerInner, properties_to_string
from store import commit_log as commit_log_module
from store.message_store import PutMessageStatus
from tests.store.store_helpers import open_store, small_config

needs_compiled = pytest.mark.skipif(speedups.compiled is None, reason="common._speedups not built")

NOW = 1_800_000_000_000
REQ_FIELDS = ("topic", "queue_id", "commit_log_offset", "msg_size", "tags_code", "store_timestamp",
              "consume_queue_offset", "keys", "uniq_key", "sys_flag", "prepared_transaction_offset",
              "success", "bit_map", "properties_string", "properties")
MSG_FIELDS = ("topic", "queue_id", "sys_flag", "store_timestamp", "queue_offset", "commit_log_offset",
              "properties_string")


def random_messages(seed: int, n: int) -> list[MessageExtBrokerInner]:
    rnd = random.Random(seed)
    topics = ["TopicA", "TopicB", "T\u00f3pico", commit_log_module.SCHEDULE_TOPIC]
    out = []
    for i in range(n):
        topic = rnd.choice(topics)
        props: dict[str, str] = {}
        if rnd.random() < 0.7:
            props["TAGS"] = rnd.choice(["TagA", "TagB", "\u00e9t\u00e9", f"t{rnd.randrange(50)}"])
        if rnd.random() < 0.4:
            props["KEYS"] = rnd.choice(["k1", "k1 k2", f"key{i}"])
        if rnd.random() < 0.8:
            props["UNIQ_KEY"] = f"7F0000010000{i:020X}"
        if rnd.random() < 0.15:
            props["DELAY"] = str(rnd.randrange(1, 5))
        if rnd.random() < 0.02:
            props["p"] = "a\x00b"  # illegal: a NUL
        if rnd.random() < 0.01:
            props["big"] = "v" * 33000  # illegal: properties over 32767 bytes
        text = properties_to_string(props)
        if props and rnd.random() < 0.05:
            text = ""  # given only as a map: the general path serializes it
        body = rnd.randbytes(rnd.choice([0, 5, 300, 1024, 2000]))
        if rnd.random() < 0.01:
            body = bytes(5000)  # over maxMessageSize
        born = ("::1", 4000) if rnd.random() < 0.05 else (rnd.choice(["127.0.0.1", "10.0.0.7"]), 40000 + i % 7)
        store = ("::1", 10911) if rnd.random() < 0.03 else ("127.0.0.1", 10911)
        out.append(MessageExtBrokerInner(
            topic=topic, queue_id=rnd.randrange(4), flag=rnd.randrange(-3, 100), body=body, properties=props,
            properties_string=text, sys_flag=rnd.choice([0, 0, 0, 0x4, 0x8, 0xC, 0x10, 0x1]),
            born_timestamp=1_700_000_000_000 + i, born_host=born, store_host=store,
            reconsume_times=rnd.randrange(3), prepared_transaction_offset=rnd.choice([0, 0, 12345]),
            body_crc=rnd.choice([-1, -1, 77]),
        ))
    return out


def open_log(root, put_single, capacity: int):
    store = open_store(small_config(root, maxMessageSize=4096))
    log = store.commit_log
    log.enable_prepared_dispatch(capacity)
    log.put_single = put_single
    return log


def result_fields(r) -> tuple:
    a = r.append_result
    ar = None if a is None else (a.status, a.wrote_offset, a.wrote_bytes, a.msg_id, a.store_timestamp,
                                 a.logics_offset, a.msg_num, a.page_cache_rt)
    return r.status, r.remark, ar


def log_bytes(log) -> list[bytes]:
    return [bytes(mf.mm[:mf.wrote_position]) for mf in log.mapped_file_queue.mapped_files]


@needs_compiled
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("capacity", [65536, 7])
def test_compiled_twin_stores_what_the_general_path_stores(tmp_path, seed, capacity):
    taken = []

    def counting(*args):
        r = speedups.compiled.put_single(*args)
        taken.append(r is not None)
        return r

    fast = open_log(tmp_path / "fast", counting, capacity)
    ref = open_log(tmp_path / "ref", speedups.pure.put_single, capacity)
    msgs = random_messages(seed, 600)
    twins = copy.deepcopy(msgs)
    for k, (m, t) in enumerate(zip(msgs, twins, strict=True)):
        got, want = fast.put_message(m, NOW + k // 50), ref.put_message(t, NOW + k // 50)
        assert result_fields(got) == result_fields(want), k
        assert [getattr(m, f) for f in MSG_FIELDS] == [getattr(t, f) for f in MSG_FIELDS], k
        if capacity < 100 and k % 5 == 0:  # the reput takes what is queued now and then
            for q in (fast.prepared, ref.prepared):
                q.clear()
        got_reqs = [tuple(getattr(r, f) for f in REQ_FIELDS) for r in fast.prepared]
        want_reqs = [tuple(getattr(r, f) for f in REQ_FIELDS) for r in ref.prepared]
        assert got_reqs == want_reqs, k
    assert log_bytes(fast) == log_bytes(ref)
    assert fast.topic_queue_table == ref.topic_queue_table
    for a, b in zip(fast.mapped_file_queue.mapped_files, ref.mapped_file_queue.mapped_files, strict=True):
        assert (a.wrote_position, a.committed_position, a.store_timestamp) == \
            (b.wrote_position, b.committed_position, b.store_timestamp)
    # the mix has refusals and rolls, and the compiled twin took the usual case
    assert len(fast.mapped_file_queue.mapped_files) > 3
    assert sum(taken) > len(taken) // 2, (sum(taken), len(taken))


@needs_compiled
def test_refusals_are_worded_by_the_general_path(tmp_path):
    log = open_log(tmp_path, speedups.compiled.put_single, 100)
    warm = MessageExtBrokerInner(topic="TopicA", body=b"x", born_host=("127.0.0.1", 1), store_host=("127.0.0.1", 2))
    assert log.put_message(warm, NOW).status is PutMessageStatus.PUT_OK
    assert log.put_message(copy.deepcopy(warm), NOW).status is PutMessageStatus.PUT_OK
    big = copy.deepcopy(warm)
    big.body = bytes(5000)
    nul = copy.deepcopy(warm)
    nul.properties_string = "a\x01b\x00\x02"
    for m in (big, nul):
        assert speedups.compiled.put_single(log, m, NOW, commit_log_module._PUT_KIT) is None
        r = log.put_message(m, NOW)
        assert r.status is PutMessageStatus.MESSAGE_ILLEGAL and r.remark
    assert log.topic_queue_table == {"TopicA-0": 2}


@needs_compiled
def test_bad_arguments_are_type_errors(tmp_path):
    log = open_log(tmp_path, speedups.compiled.put_single, 100)
    msg = MessageExtBrokerInner(topic="TopicA", body=b"x", born_host=("127.0.0.1", 1), store_host=("127.0.0.1", 2))
    with pytest.raises(TypeError):
        speedups.compiled.put_single(log, msg, NOW)
    with pytest.raises(TypeError):
        speedups.compiled.put_single(log, msg, NOW, (1, 2))
    with pytest.raises(TypeError):
        speedups.compiled.put_single(log, msg, "now", commit_log_module._PUT_KIT)
    # a message of another class is declined, not misread
    assert speedups.compiled.put_single(log, object(), NOW, commit_log_module._PUT_KIT) is None


def test_pure_twin_declines():
    assert speedups.pure.put_single(None, None, NOW, ()) is None

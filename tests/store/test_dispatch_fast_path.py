"""The dispatch fast paths give what the straightforward code gives.

Property lookup without a full parse, the prefix-cached key hash, the batched
index put (header written once per dispatch pass) and lazily parsed properties.
"""

from __future__ import annotations

import random
import struct

from common.message import properties_to_string, string_to_properties
from common.record_codec import find_property as _prop
from common.util import java_string_hash
from store.dispatch import DispatchRequest
from store.index_file import IndexFile, PrefixedKeyHasher, index_file_size, index_key_hash
from tests.store.store_helpers import make_msg, open_store, small_config
from tests.support import async_wait_until


def test_prop_matches_a_full_parse():
    cases = [
        "",
        "KEYS\x01a b",
        "XKEYS\x01no\x02KEYS\x01yes",
        "KEYS\x01first\x02KEYS\x01last",
        "KEYS\x01\x02TAGS\x01t",  # empty value reads as absent
        "TAGS\x01v\x01with\x01sep\x02UNIQ_KEY\x01U1",
        "UNIQ_KEY\x01U\x02KEYS\x01k\x02",
        "A\x01KEYS\x01\x02KEYS",  # the name inside a value, then without a value
    ]
    rnd = random.Random(5)
    alphabet = ["KEYS", "TAGS", "UNIQ_KEY", "\x01", "\x02", "x", "é", "KEY", "S"]
    cases += ["".join(rnd.choice(alphabet) for _ in range(rnd.randrange(12))) for _ in range(3000)]
    for s in cases:
        full = string_to_properties(s)
        for name in ("KEYS", "TAGS", "UNIQ_KEY"):
            assert _prop(s, name + "\x01") == full.get(name), (s, name)


def test_prefixed_hash_equals_java_hash_of_the_whole_key():
    rnd = random.Random(9)
    keys = ["", "k", "a" * 24, "a" * 25, "7F00000100002A9F0000" + "0" * 12, "ключ", "混合key" * 9, "\U0001F600x",
            "x" * 1100]
    keys += ["".join(rnd.choice("0123456789ABCDEFé ") for _ in range(rnd.randrange(60))) for _ in range(2000)]
    for topic in ("T", "BenchTopic", "%RETRY%g", "Тема"):
        h = PrefixedKeyHasher(topic + "#")
        for k in keys:
            whole = topic + "#" + k
            assert h(k) == index_key_hash(whole)
            j = java_string_hash(whole)
            assert index_key_hash(whole) == (0 if j == -(2**31) else abs(j))


def test_put_hashes_writes_what_put_key_writes(tmp_path):
    a = IndexFile(str(tmp_path / "a"), 7, 30)
    b = IndexFile(str(tmp_path / "b"), 7, 30, end_phy_offset=500, end_timestamp=1_800_000_000_000)
    c = IndexFile(str(tmp_path / "c"), 7, 30)
    d = IndexFile(str(tmp_path / "d"), 7, 30, end_phy_offset=500, end_timestamp=1_800_000_000_000)
    t0 = 1_800_000_003_000
    for i in range(12):
        keys = [f"k{i}", f"u{i}", "shared"]
        got_a = a.put_hashes([index_key_hash(k) for k in keys], 1000 + i, t0 + 1500 * i)
        got_b = b.put_hashes([index_key_hash(k) for k in keys], 1000 + i, t0 + 1500 * i)
        got_c = sum(c.put_key(k, 1000 + i, t0 + 1500 * i) for k in keys)
        got_d = sum(d.put_key(k, 1000 + i, t0 + 1500 * i) for k in keys)
        assert (got_a, got_b) == (got_c, got_d)
    assert a.put_hashes([1, 2], 9, t0) == 0  # full: 29 entries + the unused entry 0
    for x, y in ((a, c), (b, d)):
        x.flush()
        y.flush()
        assert (tmp_path / x.file_name).read_bytes() == (tmp_path / y.file_name).read_bytes()
        x.close()
        y.close()


async def test_running_store_writes_the_index_header_after_each_pass(tmp_path):
    cfg = small_config(tmp_path)
    store = open_store(cfg)
    store.start()
    try:
        for i in range(5):
            assert store.put_message(make_msg(keys=f"key{i} other{i}", props={"UNIQ_KEY": f"U{i:031d}"})).is_ok()
        await async_wait_until(store.now_dispatched, what="dispatch")
        f = store.index_service.index_files[-1]
        # read the file as another process would (no flush happened yet): the header is current
        raw = (tmp_path / "index" / f.file_name).read_bytes()
        assert len(raw) == index_file_size(cfg.maxHashSlotNum, cfg.maxIndexNum)
        begin_ts, end_ts, begin_phy, end_phy, _slots, count = struct.unpack_from(">qqqqii", raw)
        assert count == 1 + 5 * 3
        assert end_phy == store.commit_log.get_max_offset() - store.look_message_by_offset(end_phy).store_size
        assert begin_phy == 0 and begin_ts > 0 and end_ts >= begin_ts
    finally:
        await store.shutdown()


def test_dispatch_request_properties_are_parsed_lazily():
    s = properties_to_string({"KEYS": "a b", "TAGS": "t", "X": "y"})
    r = DispatchRequest("T", properties_string=s)
    assert r._properties is None
    assert r.properties == {"KEYS": "a b", "TAGS": "t", "X": "y"}
    assert DispatchRequest("T").properties == {}
    r.properties = {"A": "b"}
    assert r.properties == {"A": "b"}


async def test_reput_dispatches_tags_keys_and_delay_codes(tmp_path):
    store = open_store(small_config(tmp_path))
    try:
        assert store.put_message(make_msg(tags="TagZ", keys="k1  k2")).is_ok()
        sched = make_msg(topic="SCHEDULE_TOPIC_XXXX", queue_id=2, tags="T", props={"DELAY": "3"})
        assert store.put_message(sched).is_ok()
        store.dispatch_pending()
        cq = store.consume_queues.find("TopicA", 0)
        assert cq.get_unit(0)[2] == java_string_hash("TagZ")
        sq = store.consume_queues.find("SCHEDULE_TOPIC_XXXX", 2)
        assert sq.get_unit(0)[2] == sched.store_timestamp + store.config.delay_levels_ms()[2]
        assert len(store.query_message("TopicA", "k2", 10, 0, 2**63 - 1).buffers) == 1
    finally:
        store.shutdown_sync()

"""ConsumerFilterManager: heartbeat registration rules and consumerFilter.json persistence."""

from __future__ import annotations

import json

from broker.filter import BloomFilter, ConsumerFilterManager, consumer_filter_path
from common.filter import SubscriptionData, build_subscription_data

DAY = 24 * 3600 * 1000


class Clock:
    def __init__(self, now: int = 1_700_000_000_000):
        self.now = now

    def __call__(self) -> int:
        return self.now


def sql(topic, expression, version):
    s = build_subscription_data(topic, expression, "SQL92")
    s.subVersion = version
    return s


def manager(path=None, clock=None, **kw) -> ConsumerFilterManager:
    return ConsumerFilterManager(str(path) if path else None, clock=clock or Clock(), **kw)


def test_register_only_sql92_subscriptions():
    m = manager()
    m.register("g", [build_subscription_data("A", "TagA"), sql("B", "b = 1", 10)])
    assert m.get("A", "g") is None
    d = m.get("B", "g")
    assert (d.topic, d.consumerGroup, d.expression, d.expressionType, d.clientVersion) == ("B", "g", "b = 1", "SQL92", 10)
    assert not d.is_dead()
    assert d.compiledExpression.evaluate({"b": "1"})
    assert d.bloomFilterData == m.bloom_filter.generate("g#B")
    assert m.register_topic("B", "g2", "", "SQL92", 1) is False
    assert m.get("B", "g2") is None


def test_versions_decide_updates():
    m = manager()
    assert m.register_topic("T", "g", "a > 1", "SQL92", 10)
    # same or older version: ignored, even with another expression
    assert not m.register_topic("T", "g", "a > 2", "SQL92", 10)
    assert not m.register_topic("T", "g", "a > 2", "SQL92", 9)
    assert m.get("T", "g").expression == "a > 1"
    # newer version, same expression: refreshed in place
    old = m.get("T", "g")
    assert m.register_topic("T", "g", "a > 1", "SQL92", 11)
    assert m.get("T", "g") is old and old.clientVersion == 11
    # newer version, new expression: replaced
    assert m.register_topic("T", "g", "a > 2", "SQL92", 12)
    assert m.get("T", "g").expression == "a > 2" and m.get("T", "g").clientVersion == 12


def test_bad_expression_is_not_registered_and_replaces_nothing_silently():
    m = manager()
    assert not m.register_topic("T", "g", "a >", "SQL92", 1)
    assert m.get("T", "g") is None
    assert m.register_topic("T", "g", "a > 1", "SQL92", 2)
    # a newer broken expression removes the old filter: pulls then get FILTER_DATA_NOT_EXIST
    assert not m.register_topic("T", "g", "a > ", "SQL92", 3)
    assert m.get("T", "g") is None


def test_dropped_topic_and_unregister_mark_dead_then_revive():
    clock = Clock()
    m = manager(clock=clock)
    m.register("g", [sql("A", "a = 1", 5), sql("B", "b = 1", 5)])
    clock.now += 1000
    m.register("g", [sql("A", "a = 1", 5)])  # B no longer subscribed
    assert m.get("B", "g").is_dead() and m.get("B", "g").deadTime == clock.now
    assert not m.get("A", "g").is_dead()
    m.unregister("g")
    assert m.get("A", "g").is_dead()
    # the same version registered again revives it
    assert m.register_topic("A", "g", "a = 1", "SQL92", 5)
    assert not m.get("A", "g").is_dead()


def test_clean_removes_long_dead_filters_on_encode():
    clock = Clock()
    m = manager(clock=clock, filter_data_clean_time_span=DAY)
    m.register_topic("T", "g", "a = 1", "SQL92", 1)
    m.register_topic("T", "h", "a = 2", "SQL92", 1)
    m.unregister("g")
    clock.now += DAY - 1
    assert "g" in json.loads(m.encode())["filterDataByTopic"]["T"]["groupFilterData"]
    clock.now += 1
    groups = json.loads(m.encode())["filterDataByTopic"]["T"]["groupFilterData"]
    assert list(groups) == ["h"]
    m.unregister("h")
    clock.now += DAY
    assert json.loads(m.encode()) == {"filterDataByTopic": {}}


def test_encoded_shape_matches_rocketmq(tmp_path):
    clock = Clock(1690000000000)
    m = manager(clock=clock, bloom_filter=BloomFilter(20, 32))
    m.register_topic("T", "g", "a > 5", "SQL92", 1690000000000)
    doc = json.loads(m.encode())
    entry = doc["filterDataByTopic"]["T"]["groupFilterData"]["g"]
    assert doc["filterDataByTopic"]["T"]["topic"] == "T"
    assert entry == {
        "bloomFilterData": {"bitNum": 112, "bitPos": m.bloom_filter.calc_bit_positions("g#T")},
        "bornTime": 1690000000000,
        "clientVersion": 1690000000000,
        "consumerGroup": "g",
        "dead": False,
        "deadTime": 0,
        "expression": "a > 5",
        "expressionType": "SQL92",
        "topic": "T",
    }
    assert list(entry) == sorted(entry)  # fastjson writes keys in order


def test_persist_and_reload(tmp_path):
    path = consumer_filter_path(str(tmp_path))
    assert path == str(tmp_path / "config" / "consumerFilter.json")
    clock = Clock()
    m = manager(path, clock)
    m.register("g", [sql("T", "a BETWEEN 1 AND 5", 100), sql("U", "color = 'red'", 100)])
    m.persist()
    text = (tmp_path / "config" / "consumerFilter.json").read_text(encoding="utf-8")
    assert text.startswith('{\n\t"filterDataByTopic":{')

    clock.now += 60_000
    m2 = manager(path, clock)
    assert m2.load()
    d = m2.get("T", "g")
    assert d.expression == "a BETWEEN 1 AND 5" and d.clientVersion == 100
    assert d.compiledExpression.evaluate({"a": "3"}) and not d.compiledExpression.evaluate({"a": "9"})
    assert d.bloomFilterData == m.get("T", "g").bloomFilterData
    # after a restart every filter is dead (30 s ago) until its consumer's next heartbeat
    assert d.is_dead() and d.deadTime == clock.now - 30_000
    assert m2.register_topic("T", "g", "a BETWEEN 1 AND 5", "SQL92", 100)
    assert not m2.get("T", "g").is_dead()
    assert m2.get("U", "g").is_dead()


def test_second_persist_keeps_backup_and_bak_is_used_when_main_is_broken(tmp_path):
    path = tmp_path / "config" / "consumerFilter.json"
    m = manager(path)
    m.register_topic("T", "g", "a = 1", "SQL92", 1)
    m.persist()
    m.register_topic("T", "h", "a = 2", "SQL92", 1)
    m.persist()
    assert (tmp_path / "config" / "consumerFilter.json.bak").exists()
    path.write_text("{ not json", encoding="utf-8")
    m2 = manager(path)
    assert m2.load()
    assert m2.get("T", "g") is not None and m2.get("T", "h") is None  # the previous version


def test_load_missing_file_is_empty(tmp_path):
    m = manager(tmp_path / "config" / "consumerFilter.json")
    assert m.load()
    assert m.topics() == []


def test_load_file_written_by_rocketmq(tmp_path):
    path = tmp_path / "consumerFilter.json"
    bloom = BloomFilter(20, 64)
    pos = bloom.calc_bit_positions("g#T")
    path.write_text(
        '{\n\t"filterDataByTopic":{\n\t\t"T":{\n\t\t\t"groupFilterData":{\n\t\t\t\t"g":{'
        f'"bloomFilterData":{{"bitNum":{bloom.m},"bitPos":{pos}}},"bornTime":1690000000000,'
        '"clientVersion":1690000000000,"consumerGroup":"g","dead":false,"deadTime":0,'
        '"expression":"a > 5","expressionType":"SQL92","topic":"T"}\n\t\t\t},\n\t\t\t"topic":"T"\n\t\t}\n\t}\n}',
        encoding="utf-8",
    )
    m = manager(path, bloom_filter=bloom)
    assert m.load()
    d = m.get("T", "g")
    assert d.compiledExpression.evaluate({"a": "6"})
    # a broker with another bloom size ignores all of it
    other = manager(path, bloom_filter=BloomFilter(20, 32))
    assert other.load()
    assert other.get("T", "g") is None


def test_golden_store_consumer_filter_file_loads(golden_store):
    m = manager(golden_store / "store" / "config" / "consumerFilter.json")
    assert m.load()
    assert m.topics() == []


def test_names_from_heartbeats_never_become_paths(tmp_path):
    path = tmp_path / "config" / "consumerFilter.json"
    m = manager(path)
    m.register("../../evil", [sql("../../etc/passwd", "a = 1", 1)])
    m.persist()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["config", "consumerFilter.json"]
    m2 = manager(path)
    assert m2.load()
    assert m2.get("../../etc/passwd", "../../evil").expression == "a = 1"


def test_subscription_objects_from_heartbeat_json():
    m = manager()
    sub = SubscriptionData.from_json(
        '{"classFilterMode":false,"codeSet":[],"expressionType":"SQL92","subString":"a > 5",'
        '"subVersion":1690000000001,"tagsSet":[],"topic":"TopicTest"}'
    )
    m.register("g", [sub])
    assert m.get("TopicTest", "g").clientVersion == 1690000000001
    assert [d.topic for d in m.get_by_group("g")] == ["TopicTest"]
    assert [d.consumerGroup for d in m.get_by_topic("TopicTest")] == ["g"]

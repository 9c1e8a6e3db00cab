"""The generic bean codec of remoting.body: what a field declaration alone makes a bean read and write.

Every RocketMQ body rides on it; these pin its rules on the real beans (bytes as fastjson writes
them) and on the metadata that marks the exceptions (REQUIRED, KEYED, absent, decoded_by).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from remoting.body import REQUIRED, BodyError, JsonBody, absent, decoded_by
from remoting.body.admin import ConsumerOffsetSerializeWrapper, TopicOffset, TopicStatsTable
from remoting.body.consumer import ConsumeStats, MessageQueue, OffsetMovedEvent, OffsetWrapper
from remoting.body.heartbeat import ConsumerData, HeartbeatData
from remoting.body.kv import KVTable
from remoting.body.route import QueueData
from remoting.body.subscription_group import SubscriptionGroupWrapper
from remoting.body.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper, TopicFilterType


def test_keys_alphabetical_and_none_fields_left_out():
    tc = TopicConfig("T", readQueueNums=2, writeQueueNums=2, perm=6)
    assert tc.to_json() == (
        b'{"order":false,"perm":6,"readQueueNums":2,"topicFilterType":"SINGLE_TAG","topicName":"T",'
        b'"topicSysFlag":0,"writeQueueNums":2}'
    )
    assert DataVersion(5, 1).to_json() == b'{"counter":1,"timestamp":5}'
    assert DataVersion(5, 1, 9).to_json() == b'{"counter":1,"stateVersion":9,"timestamp":5}'


def test_bean_keyed_map_written_as_object_keys_and_read_back():
    mq = MessageQueue("T", "b", 3)
    stats = ConsumeStats({mq: OffsetWrapper(10, 7, 123)}, consumeTps=1.5)
    raw = stats.to_json()
    assert raw == (
        b'{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":3,"topic":"T"}:'
        b'{"brokerOffset":10,"consumerOffset":7,"lastTimestamp":123}}}'
    )
    assert ConsumeStats.from_json(raw) == stats
    assert ConsumeStats.from_json(stats.to_json(standard=True)) == stats
    table = TopicStatsTable({mq: TopicOffset(1, 2, 3)})
    assert TopicStatsTable.from_json(table.to_json()) == table


def test_int_keys_bare_and_nested_maps():
    w = ConsumerOffsetSerializeWrapper({"T@g": {0: 5, 1: 7}})
    assert w.to_json() == b'{"offsetTable":{"T@g":{0:5,1:7}}}'
    assert ConsumerOffsetSerializeWrapper.from_json(w.to_json()) == w
    assert ConsumerOffsetSerializeWrapper.from_json(b'{"offsetTable":{"T@g":{"0":"5"}}}').offsetTable == {"T@g": {0: 5}}


def test_values_converted_as_fastjson_reads_them():
    tc = TopicConfig.from_obj({"topicName": 7, "perm": "4", "order": 1, "attributes": {"a": 1}})
    assert (tc.topicName, tc.perm, tc.order, tc.attributes) == ("7", 4, True, {"a": "1"})
    with pytest.raises(BodyError, match="perm"):
        TopicConfig.from_obj({"topicName": "T", "perm": "x"})
    with pytest.raises(BodyError, match="unknown topicFilterType"):
        TopicConfig.from_obj({"topicName": "T", "topicFilterType": "NONE"})
    assert TopicConfig.from_obj({"topicName": "T", "topicFilterType": "MULTI_TAG"}).topicFilterType is TopicFilterType.MULTI_TAG


def test_missing_fields_take_defaults_and_required_ones_are_refused():
    assert QueueData.from_obj({"brokerName": "b"}) == QueueData("b")
    assert MessageQueue.from_obj({}) == MessageQueue("", "", 0)  # no default: the type's zero
    with pytest.raises(BodyError, match="queueData without brokerName"):
        QueueData.from_obj({"perm": 6})
    with pytest.raises(BodyError, match="heartbeatData without clientID"):
        HeartbeatData.from_obj({"producerDataSet": []})
    with pytest.raises(BodyError, match="offsetMovedEvent without messageQueue"):
        OffsetMovedEvent.from_obj({"consumerGroup": "g"})
    with pytest.raises(BodyError, match="kvTable is not an object"):
        KVTable.from_obj([1])
    with pytest.raises(BodyError, match="is not an array"):
        HeartbeatData.from_obj({"clientID": "c", "consumerDataSet": {}})


def test_keyed_field_taken_from_the_map_key():
    w = TopicConfigSerializeWrapper.from_obj({"topicConfigTable": {"T1": {"perm": 2}}, "dataVersion": {"counter": 1}})
    assert w.topicConfigTable["T1"].topicName == "T1" and w.topicConfigTable["T1"].perm == 2
    assert w.dataVersion.counter == 1 and w.dataVersion.timestamp == 0  # absent(int): a missing timestamp is 0
    with pytest.raises(BodyError, match="topicConfig without topicName"):
        TopicConfig.from_obj({"perm": 2})
    g = SubscriptionGroupWrapper.from_obj({"subscriptionGroupTable": {"G": {"retryMaxTimes": "3"}}})
    assert g.subscriptionGroupTable["G"].groupName == "G" and g.subscriptionGroupTable["G"].retryMaxTimes == 3
    assert g.dataVersion == DataVersion(0, 0)  # absent(...): no dataVersion reads as (0, 0)


def test_decoded_by_field_reader():
    cd = ConsumerData.from_obj({"groupName": "g", "consumeType": 0, "messageModel": "BroadCasting", "consumeFromWhere": 4})
    assert (cd.consumeType, cd.messageModel, cd.consumeFromWhere) == (
        "CONSUME_ACTIVELY", "BROADCASTING", "CONSUME_FROM_FIRST_OFFSET")
    with pytest.raises(BodyError, match="out of range"):
        ConsumerData.from_obj({"groupName": "g", "consumeType": 7})


@dataclass(slots=True)
class _Probe(JsonBody):
    name: str = field(metadata=REQUIRED)
    tags: list[str] | None = None
    when: int = field(default=5, metadata=absent(lambda: -1))
    level: str = field(default="LOW", metadata=decoded_by(lambda v: str(v).upper()))
    children: dict[str, list[QueueData]] = field(default_factory=dict)


def test_a_new_bean_needs_only_its_fields():
    p = _Probe("x", ["a"], 9, "HIGH", {"k": [QueueData("b", 1, 1, 6)]})
    assert _Probe.from_json(p.to_json()) == p
    assert p.to_obj()["children"] == {"k": [{"brokerName": "b", "perm": 6, "readQueueNums": 1, "topicSysFlag": 0,
                                             "writeQueueNums": 1}]}
    q = _Probe.from_obj({"name": "y", "level": "mid"})
    assert (q.tags, q.when, q.level, q.children) == (None, -1, "MID", {})
    assert _Probe("z").to_json() == b'{"children":{},"level":"LOW","name":"z","when":5}'
    with pytest.raises(BodyError, match="_Probe without name"):
        _Probe.from_obj({})

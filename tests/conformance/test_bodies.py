"""JSON bodies (§11) written by our bean classes equal literal JSON transcribed from the spec.

Trees are compared after parsing both sides with our tolerant fastjson reader;
key forms (bare numbers, objects in key position, quoted/stringified keys in
standard mode) are checked on the raw bytes.
"""

from __future__ import annotations

import orjson
import pytest

from remoting import fastjson
from remoting.body.admin import ConsumerOffsetSerializeWrapper, GroupList, TopicOffset, TopicStatsTable
from remoting.body.cluster import ClusterInfo, TopicList
from remoting.body.consumer import (
    Connection,
    ConsumerConnection,
    ConsumeStats,
    GetConsumerListByGroupResponseBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    OffsetMovedEvent,
    OffsetWrapper,
    ProducerConnection,
    ResetOffsetBody,
    ResetOffsetBodyForC,
)
from remoting.body.heartbeat import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from remoting.body.kv import KVTable
from remoting.body.register_broker import RegisterBrokerBody
from remoting.body.route import BrokerData, QueueData, TopicRouteData
from remoting.body.subscription_group import SubscriptionGroupConfig, SubscriptionGroupWrapper
from remoting.body.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper

MQ = '{"brokerName":"b1","queueId":0,"topic":"T"}'
DV = '{"counter":3,"timestamp":1690000000000}'
TC = ('{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T",'
      '"topicSysFlag":0,"writeQueueNums":8}')
SUB = ('{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA",'
       '"subVersion":1690000000000,"tagsSet":["TagA"],"topic":"T"}')
CONN = '{"clientAddr":"127.0.0.1:50000","clientId":"10.0.0.9@1","language":"JAVA","version":407}'


def _mq():
    return MessageQueue(topic="T", brokerName="b1", queueId=0)


def _tc():
    return TopicConfig(topicName="T", readQueueNums=8, writeQueueNums=8, perm=6)


def _dv():
    return DataVersion(timestamp=1690000000000, counter=3)


def _sub():
    return SubscriptionData(topic="T", subString="TagA", expressionType="TAG", tagsSet=["TagA"], codeSet=[2598919],
                            subVersion=1690000000000, classFilterMode=False)


def _conn():
    return Connection(clientId="10.0.0.9@1", clientAddr="127.0.0.1:50000", language="JAVA", version=407)


CASES = {
    "MessageQueue": (_mq, MQ),
    "DataVersion": (_dv, DV),
    "TopicConfig": (_tc, TC),
    "TopicConfigSerializeWrapper": (
        lambda: TopicConfigSerializeWrapper(topicConfigTable={"T": _tc()}, dataVersion=_dv()),
        '{"dataVersion":' + DV + ',"topicConfigTable":{"T":' + TC + '}}',
    ),
    "RegisterBrokerBody": (
        lambda: RegisterBrokerBody(
            topicConfigSerializeWrapper=TopicConfigSerializeWrapper(topicConfigTable={"T": _tc()}, dataVersion=_dv()),
            filterServerList=[]),
        '{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":' + DV
        + ',"topicConfigTable":{"T":' + TC + '}}}',
    ),
    "QueueData": (
        lambda: QueueData(brokerName="b1", readQueueNums=4, writeQueueNums=4, perm=6, topicSysFlag=0),
        '{"brokerName":"b1","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}',
    ),
    "BrokerData": (
        lambda: BrokerData(cluster="c", brokerName="b1", brokerAddrs={0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}),
        '{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"b1","cluster":"c"}',
    ),
    "TopicRouteData": (
        lambda: TopicRouteData(
            queueDatas=[QueueData(brokerName="b1", readQueueNums=4, writeQueueNums=4, perm=6)],
            brokerDatas=[BrokerData(cluster="c", brokerName="b1", brokerAddrs={0: "10.0.0.1:10911"})],
            filterServerTable={}, orderTopicConf="b1:4"),
        '{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"b1","cluster":"c"}],'
        '"filterServerTable":{},"orderTopicConf":"b1:4",'
        '"queueDatas":[{"brokerName":"b1","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}',
    ),
    "ClusterInfo": (
        lambda: ClusterInfo(
            brokerAddrTable={"b1": BrokerData(cluster="c", brokerName="b1", brokerAddrs={0: "10.0.0.1:10911"})},
            clusterAddrTable={"c": ["b1"]}),
        '{"brokerAddrTable":{"b1":{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"b1","cluster":"c"}},'
        '"clusterAddrTable":{"c":["b1"]}}',
    ),
    "TopicList": (lambda: TopicList(topicList=["T"], brokerAddr="10.0.0.1:10911"),
                  '{"brokerAddr":"10.0.0.1:10911","topicList":["T"]}'),
    "TopicList(no brokerAddr)": (lambda: TopicList(topicList=["T"]), '{"topicList":["T"]}'),
    "KVTable": (lambda: KVTable(table={"k": "v"}), '{"table":{"k":"v"}}'),
    "SubscriptionData": (_sub, SUB),
    "ConsumerData": (
        lambda: ConsumerData(groupName="g", consumeType="CONSUME_PASSIVELY", messageModel="CLUSTERING",
                             consumeFromWhere="CONSUME_FROM_FIRST_OFFSET", subscriptionDataSet=[_sub()]),
        '{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"g",'
        '"messageModel":"CLUSTERING","subscriptionDataSet":[' + SUB + '],"unitMode":false}',
    ),
    "ProducerData": (lambda: ProducerData(groupName="pg"), '{"groupName":"pg"}'),
    "HeartbeatData": (
        lambda: HeartbeatData(clientID="cid", producerDataSet=[ProducerData(groupName="pg")]),
        '{"clientID":"cid","consumerDataSet":[],"producerDataSet":[{"groupName":"pg"}]}',
    ),
    "Connection": (_conn, CONN),
    "ConsumerConnection": (
        lambda: ConsumerConnection(connectionSet=[_conn()], subscriptionTable={"T": _sub()},
                                   consumeType="CONSUME_PASSIVELY", messageModel="CLUSTERING",
                                   consumeFromWhere="CONSUME_FROM_LAST_OFFSET"),
        '{"connectionSet":[' + CONN + '],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
        '"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{"T":' + SUB + '}}',
    ),
    "ProducerConnection": (lambda: ProducerConnection(connectionSet=[_conn()]), '{"connectionSet":[' + CONN + ']}'),
    "GetConsumerListByGroupResponseBody": (
        lambda: GetConsumerListByGroupResponseBody(consumerIdList=["a", "b"]), '{"consumerIdList":["a","b"]}'),
    "LockBatchRequestBody": (
        lambda: LockBatchRequestBody(consumerGroup="g", clientId="cid", mqSet=[_mq()]),
        '{"clientId":"cid","consumerGroup":"g","mqSet":[' + MQ + ']}',
    ),
    "LockBatchResponseBody": (lambda: LockBatchResponseBody(lockOKMQSet=[_mq()]), '{"lockOKMQSet":[' + MQ + ']}'),
    "ConsumeStats": (
        lambda: ConsumeStats(offsetTable={_mq(): OffsetWrapper(10, 8, 1690000000000)}, consumeTps=1.5),
        '{"consumeTps":1.5,"offsetTable":{' + MQ
        + ':{"brokerOffset":10,"consumerOffset":8,"lastTimestamp":1690000000000}}}',
    ),
    "TopicStatsTable": (
        lambda: TopicStatsTable(offsetTable={_mq(): TopicOffset(minOffset=0, maxOffset=5,
                                                                lastUpdateTimestamp=1690000000000)}),
        '{"offsetTable":{' + MQ + ':{"lastUpdateTimestamp":1690000000000,"maxOffset":5,"minOffset":0}}}',
    ),
    "ResetOffsetBody": (lambda: ResetOffsetBody(offsetTable={_mq(): 42}), '{"offsetTable":{' + MQ + ':42}}'),
    "ResetOffsetBodyForC": (
        lambda: ResetOffsetBodyForC(offsetTable={_mq(): 42}),
        '{"offsetTable":[{"brokerName":"b1","offset":42,"queueId":0,"topic":"T"}]}',
    ),
    "ConsumerOffsetSerializeWrapper": (
        lambda: ConsumerOffsetSerializeWrapper(offsetTable={"T@g": {0: 5, 1: 7}}),
        '{"offsetTable":{"T@g":{0:5,1:7}}}',
    ),
    "SubscriptionGroupConfig(defaults)": (
        lambda: SubscriptionGroupConfig(groupName="g"),
        '{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,'
        '"groupName":"g","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,'
        '"whichBrokerWhenConsumeSlowly":1}',
    ),
    "SubscriptionGroupWrapper": (
        lambda: SubscriptionGroupWrapper(subscriptionGroupTable={"g": SubscriptionGroupConfig(groupName="g")},
                                         dataVersion=_dv()),
        '{"dataVersion":' + DV + ',"subscriptionGroupTable":{"g":{"brokerId":0,"consumeBroadcastEnable":true,'
        '"consumeEnable":true,"consumeFromMinEnable":true,"groupName":"g","notifyConsumerIdsChangedEnable":true,'
        '"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}}}',
    ),
    "GroupList": (lambda: GroupList(groupList=["g"]), '{"groupList":["g"]}'),
    "OffsetMovedEvent": (
        lambda: OffsetMovedEvent(consumerGroup="g", messageQueue=_mq(), offsetRequest=100, offsetNew=5),
        '{"consumerGroup":"g","messageQueue":' + MQ + ',"offsetNew":5,"offsetRequest":100}',
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_body_shape_matches_spec(name):
    make, literal = CASES[name]
    ours = make().to_json()
    assert fastjson.loads(ours) == fastjson.loads(literal), f"{name}:\n ours: {ours.decode()}\n spec: {literal}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_body_reads_spec_literal(name):
    """Java's JSON (the literal) decodes to the same bean we would write."""
    make, literal = CASES[name]
    cls = type(make())
    assert fastjson.loads(cls.from_json(literal).to_json()) == fastjson.loads(literal)


@pytest.mark.parametrize("name", sorted(CASES))
def test_body_fields_alphabetical_like_fastjson(name):
    """fastjson writes bean fields in alphabetical order; keep byte-for-byte parity where cheap."""
    make, literal = CASES[name]
    if "{{" in literal or "Wrapper" in name or "Info" in name:
        pytest.skip("map order is not fixed")
    assert make().to_json().decode() == literal


def test_integer_keys_bare_in_default_mode():
    """§11.2: Integer/Long map keys are written unquoted by fastjson's default mode."""
    out = BrokerData(cluster="c", brokerName="b1", brokerAddrs={0: "a:1", 1: "b:2"}).to_json()
    assert b'{0:"a:1",1:"b:2"}' in out


def test_object_keys_in_key_position_in_default_mode():
    """§11.2: object keys (MessageQueue) are written as JSON objects in key position."""
    out = ResetOffsetBody(offsetTable={_mq(): 42}).to_json()
    assert out == ('{"offsetTable":{' + MQ + ':42}}').encode()


def test_standard_mode_quotes_keys_and_escapes_non_ascii():
    """§11.3: numeric keys quoted, object keys stringified, non-ASCII \\uXXXX, maps sorted."""
    route = TopicRouteData(
        queueDatas=[QueueData(brokerName="b\u00e9", readQueueNums=1, writeQueueNums=1, perm=6)],
        brokerDatas=[BrokerData(cluster="c", brokerName="b\u00e9", brokerAddrs={1: "y:2", 0: "x:1"})],
    )
    out = route.to_json(standard=True)
    assert out.isascii()
    assert b'"brokerAddrs":{"0":"x:1","1":"y:2"}' in out
    assert b'"b\\u00E9"' in out or b'"b\\u00e9"' in out
    tree = orjson.loads(out)  # standard JSON
    assert tree["brokerDatas"][0]["brokerName"] == "b\u00e9"
    rb = ResetOffsetBody(offsetTable={_mq(): 42}).to_json(standard=True)
    assert orjson.loads(rb) == {"offsetTable": {MQ: 42}}


def test_reader_accepts_both_key_forms():
    """§11.2/§11.3: a Python reader must accept bare-number and object keys, and their standard forms."""
    for text in ('{"offsetTable":{' + MQ + ':42}}', orjson.dumps({"offsetTable": {MQ: 42}}).decode()):
        assert ResetOffsetBody.from_json(text).offsetTable == {_mq(): 42}
    for text in ('{"brokerAddrs":{0:"x:1"},"brokerName":"b","cluster":"c"}',
                 '{"brokerAddrs":{"0":"x:1"},"brokerName":"b","cluster":"c"}'):
        assert BrokerData.from_json(text).brokerAddrs == {0: "x:1"}


def test_nulls_omitted():
    """§11.1: null fields are omitted, never written as null."""
    assert b"null" not in ConsumerConnection(connectionSet=[_conn()]).to_json()
    assert b"null" not in TopicRouteData().to_json()
    assert b"null" not in TopicRouteData().to_json(standard=True)


def test_unknown_keys_ignored_and_missing_defaulted():
    """§11.1: parsers ignore unknown keys (e.g. 5.x additions) and default missing ones."""
    tc = TopicConfig.from_json('{"topicName":"T","attributes":{},"futureKey":1}')
    assert (tc.readQueueNums, tc.writeQueueNums, tc.perm, tc.order) == (16, 16, 6, False)
    dv = DataVersion.from_json('{"counter":2,"stateVersion":1,"timestamp":5}')
    assert (dv.counter, dv.timestamp) == (2, 5)
    bd = BrokerData.from_json('{"brokerAddrs":{0:"x:1"},"brokerName":"b","cluster":"c","enableActingMaster":false,'
                              '"zoneName":"z"}')
    assert bd.brokerAddrs == {0: "x:1"}
    sg = SubscriptionGroupConfig.from_json('{"groupName":"g","consumeMessageOrderly":true,"groupSysFlag":0}')
    assert sg.retryMaxTimes == 16 and sg.consumeEnable is True

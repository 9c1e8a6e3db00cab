"""The headers and bodies of the less common admin requests match RocketMQ 4.9.7's beans.

The spec (§9) only names these codes; the field tables below are transcribed from the 4.9.7
Java classes (header fields, ``@CFNotNull`` = "R"; body fields as fastjson writes them:
alphabetical, nulls left out, Integer map keys bare). The literals are what a 4.9.7 broker
or tool writes; each must decode to the same bean we would write, and ours must be written
byte for byte like it.
"""

from __future__ import annotations

import pytest

from remoting import fastjson
from remoting.body.admin_extra import (
    ConsumeQueueData,
    GetBrokerClusterAclConfigResponseBody,
    PlainAccessConfig,
    ProducerInfo,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    QueryCorrectionOffsetBody,
)
from remoting.body.heartbeat import SubscriptionData
from remoting.header import HeaderError
from remoting.header import admin_extra as h

# class -> {field: (python type, "R" required / "O" optional)}
HEADERS = {
    h.CreateAccessConfigRequestHeader: {
        "accessKey": (str, "R"), "secretKey": (str, "O"), "whiteRemoteAddress": (str, "O"), "admin": (bool, "O"),
        "defaultTopicPerm": (str, "O"), "defaultGroupPerm": (str, "O"), "topicPerms": (str, "O"),
        "groupPerms": (str, "O")},
    h.DeleteAccessConfigRequestHeader: {"accessKey": (str, "R")},
    h.UpdateGlobalWhiteAddrsConfigRequestHeader: {"globalWhiteAddrs": (str, "R"), "aclFileFullPath": (str, "R")},
    h.GetBrokerAclConfigResponseHeader: {
        "version": (str, "R"), "allAclFileVersion": (str, "O"), "brokerName": (str, "R"), "brokerAddr": (str, "R"),
        "clusterName": (str, "R")},
    # Java has no @CFNotNull here; its primitives stay 0 when absent. A missing topic fails in
    # Java too (NullPointerException -> SYSTEM_ERROR), so ours requires it.
    h.QueryConsumeQueueRequestHeader: {
        "topic": (str, "R"), "queueId": (int, "O"), "index": (int, "O"), "count": (int, "O"),
        "consumerGroup": (str, "O")},
    h.QueryCorrectionOffsetHeader: {"filterGroups": (str, "O"), "compareGroup": (str, "R"), "topic": (str, "R")},
    h.ResumeCheckHalfMessageRequestHeader: {"msgId": (str, "O")},  # @CFNullable
    h.GetAllProducerInfoRequestHeader: {},
    h.RegisterFilterServerRequestHeader: {"filterServerAddr": (str, "R")},
    h.RegisterFilterServerResponseHeader: {"brokerName": (str, "R"), "brokerId": (int, "R")},
}


@pytest.mark.parametrize("cls", list(HEADERS), ids=lambda c: c.__name__)
def test_header_fields_match_java(cls):
    ours = {name: (typ, "R" if req else "O") for name, typ, req in cls._spec}
    assert ours == HEADERS[cls]


def test_absent_java_primitives_default_to_zero():
    got = h.QueryConsumeQueueRequestHeader.from_ext_fields({"topic": "T"})
    assert (got.queueId, got.index, got.count, got.consumerGroup) == (0, 0, 0, None)
    with pytest.raises(HeaderError, match="<topic>"):
        h.QueryConsumeQueueRequestHeader.from_ext_fields({"queueId": "1"})
    assert h.CreateAccessConfigRequestHeader.from_ext_fields({"accessKey": "ak"}).admin is False


SUB = SubscriptionData(topic="T", subString="TagA", tagsSet=["TagA"], codeSet=[2598919], subVersion=1)
SUB_JSON = ('{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA",'
            '"subVersion":1,"tagsSet":["TagA"],"topic":"T"}')

CASES = {
    "ConsumeQueueData": (
        lambda: ConsumeQueueData(physicOffset=120, physicSize=180, tagsCode=2598919),
        '{"eval":false,"physicOffset":120,"physicSize":180,"tagsCode":2598919}'),
    "ConsumeQueueData-ext": (
        lambda: ConsumeQueueData(physicOffset=1, physicSize=2, tagsCode=-2147483649, msg="Cq extend not exist!addr: "
                                 "-2147483649", bitMap="{1}", extendDataJson="{}", eval=True),
        '{"bitMap":"{1}","eval":true,"extendDataJson":"{}","msg":"Cq extend not exist!addr: -2147483649",'
        '"physicOffset":1,"physicSize":2,"tagsCode":-2147483649}'),
    "QueryConsumeQueueResponseBody": (
        lambda: QueryConsumeQueueResponseBody(subscriptionData=SUB, filterData="null", maxQueueIndex=3,
                                              minQueueIndex=0, queueData=[ConsumeQueueData(0, 180, 5)]),
        '{"filterData":"null","maxQueueIndex":3,"minQueueIndex":0,"queueData":[{"eval":false,"physicOffset":0,'
        '"physicSize":180,"tagsCode":5}],"subscriptionData":' + SUB_JSON + '}'),
    "QueryConsumeQueueResponseBody-nogroup": (
        lambda: QueryConsumeQueueResponseBody(maxQueueIndex=3, minQueueIndex=1, queueData=[]),
        '{"maxQueueIndex":3,"minQueueIndex":1,"queueData":[]}'),
    "QueryCorrectionOffsetBody": (
        lambda: QueryCorrectionOffsetBody({0: 5, 1: 2**63 - 1}),
        '{"correctionOffsets":{0:5,1:9223372036854775807}}'),
    "ProducerTableInfo": (
        lambda: ProducerTableInfo({"PG": [ProducerInfo("10.0.0.1@1", "/10.0.0.1:50000", "JAVA", 413, 1700000000000)]}),
        '{"data":{"PG":[{"clientId":"10.0.0.1@1","language":"JAVA","lastUpdateTimestamp":1700000000000,'
        '"remoteIP":"/10.0.0.1:50000","version":413}]}}'),
    "GetBrokerClusterAclConfigResponseBody": (
        lambda: GetBrokerClusterAclConfigResponseBody(
            globalWhiteAddrs=["10.10.103.*"],
            plainAccessConfigs=[PlainAccessConfig(accessKey="RocketMQ", secretKey="12345678", admin=False,
                                                  defaultTopicPerm="DENY", defaultGroupPerm="SUB",
                                                  topicPerms=["topicA=DENY"], groupPerms=["groupA=DENY"],
                                                  whiteRemoteAddress="")]),
        '{"globalWhiteAddrs":["10.10.103.*"],"plainAccessConfigs":[{"accessKey":"RocketMQ","admin":false,'
        '"defaultGroupPerm":"SUB","defaultTopicPerm":"DENY","groupPerms":["groupA=DENY"],"secretKey":"12345678",'
        '"topicPerms":["topicA=DENY"],"whiteRemoteAddress":""}]}'),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_body_written_like_fastjson(name):
    make, literal = CASES[name]
    assert make().to_json().decode() == literal


@pytest.mark.parametrize("name", sorted(CASES))
def test_body_reads_java_literal(name):
    make, literal = CASES[name]
    cls = type(make())
    assert cls.from_json(literal) == make()


def test_correction_offsets_read_in_standard_form_too():
    """A standard-JSON writer quotes the Integer keys; both forms read the same."""
    assert QueryCorrectionOffsetBody.from_json('{"correctionOffsets":{"0":5}}').correctionOffsets == {0: 5}


def test_java_to_string_forms():
    """What mqadmin prints: ConsumeQueueData.toString (queryCq) and ProducerInfo.toString (producer)."""
    assert str(ConsumeQueueData(1, 2, 3)) == (
        "ConsumeQueueData{physicOffset=1, physicSize=2, tagsCode=3, extendDataJson='null', bitMap='null', "
        "eval=false, msg='null'}")
    assert str(ProducerInfo("c", "/1.2.3.4:5", "JAVA", 9, 10)) == (
        "clientId=c,remoteIP=/1.2.3.4:5, language=JAVA, version=9, lastUpdateTimestamp=10")


def test_unknown_keys_ignored():
    body = QueryConsumeQueueResponseBody.from_json('{"maxQueueIndex":1,"future":{"x":1}}')
    assert (body.maxQueueIndex, body.queueData, body.subscriptionData) == (1, None, None)
    assert fastjson.loads(body.to_json()) == {"maxQueueIndex": 1, "minQueueIndex": 0}

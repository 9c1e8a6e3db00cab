"""HEART_BEAT bodies: enum fields arrive as names (Java) or as ordinals (the C++ client)."""

from __future__ import annotations

import orjson
import pytest

from remoting.body import BodyError
from remoting.body.heartbeat import ConsumerData


def _consumer(**enums):
    return orjson.dumps({"groupName": "g", "subscriptionDataSet": [], "unitMode": False, **enums})


def test_enum_names_pass_through():
    cd = ConsumerData.from_obj(
        orjson.loads(_consumer(consumeType="CONSUME_ACTIVELY", messageModel="BROADCASTING",
                               consumeFromWhere="CONSUME_FROM_TIMESTAMP"))
    )
    assert (cd.consumeType, cd.messageModel, cd.consumeFromWhere) == (
        "CONSUME_ACTIVELY", "BROADCASTING", "CONSUME_FROM_TIMESTAMP")


def test_enum_ordinals_map_to_java_names_as_fastjson_does():
    # exactly what the C++ client 2.x sends for a clustering push consumer
    cd = ConsumerData.from_obj(orjson.loads(_consumer(consumeFromWhere=0, consumeType=1, messageModel=1)))
    assert (cd.consumeType, cd.messageModel, cd.consumeFromWhere) == (
        "CONSUME_PASSIVELY", "CLUSTERING", "CONSUME_FROM_LAST_OFFSET")
    cd = ConsumerData.from_obj(orjson.loads(_consumer(consumeFromWhere=4, consumeType=0, messageModel=0)))
    assert (cd.consumeType, cd.messageModel, cd.consumeFromWhere) == (
        "CONSUME_ACTIVELY", "BROADCASTING", "CONSUME_FROM_FIRST_OFFSET")


def test_out_of_range_ordinal_is_a_clear_error():
    with pytest.raises(BodyError, match="ordinal 7"):
        ConsumerData.from_obj(orjson.loads(_consumer(messageModel=7)))


def test_enum_names_match_case_insensitively_as_fastjson_does():
    # the Go client writes its MessageModel as "BroadCasting" / "Clustering"
    cd = ConsumerData.from_obj(orjson.loads(_consumer(messageModel="BroadCasting", consumeType="CONSUME_PASSIVELY")))
    assert cd.messageModel == "BROADCASTING"
    cd = ConsumerData.from_obj(orjson.loads(_consumer(messageModel="Clustering")))
    assert cd.messageModel == "CLUSTERING"

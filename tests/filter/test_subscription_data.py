"""common.filter: TAG expressions (FilterAPI) and the SubscriptionData JSON of heartbeats."""

from __future__ import annotations

import json

import pytest

from common.filter import (
    SUB_ALL,
    ExpressionType,
    SubscriptionData,
    SubscriptionParseError,
    build_subscription_data,
    java_trim,
    parse_tags,
)

# "TagA".hashCode() = 84*31^3 + 97*31^2 + 103*31 + 65
TAG_A = 2598919
TAG_B = 2598920


def _wrap32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 2**32 if x >= 2**31 else x


def test_is_tag_type():
    assert ExpressionType.is_tag_type(None)
    assert ExpressionType.is_tag_type("")
    assert ExpressionType.is_tag_type("TAG")
    assert not ExpressionType.is_tag_type("SQL92")
    assert not ExpressionType.is_tag_type("tag")


@pytest.mark.parametrize("sub", [None, "", "*"])
def test_parse_tags_all(sub):
    assert parse_tags(sub) == ([], [])


@pytest.mark.parametrize(
    ("sub", "tags", "codes"),
    [
        ("TagA", ["TagA"], [TAG_A]),
        ("TagA || TagB", ["TagA", "TagB"], [TAG_A, TAG_B]),
        ("  TagA\t||\nTagB  ", ["TagA", "TagB"], [TAG_A, TAG_B]),
        ("TagA||TagA", ["TagA"], [TAG_A]),
        ("||TagA||", ["TagA"], [TAG_A]),
        ("TagA|| ||TagB", ["TagA", "TagB"], [TAG_A, TAG_B]),
        (" * ", ["*"], [42]),  # only an exact "*" means all
        ("a|b", ["a|b"], [(97 * 31 + 124) * 31 + 98]),
        # Java trim() keeps U+3000; the hash wraps to a signed 32-bit int
        ("\u3000TagA", ["\u3000TagA"], [_wrap32(0x3000 * 31**4 + TAG_A)]),
    ],
)
def test_parse_tags(sub, tags, codes):
    assert parse_tags(sub) == (tags, codes)


def test_parse_tags_only_separators_is_an_error():
    # Java's "||".split("\\|\\|") is empty: FilterAPI throws "subString split error"
    with pytest.raises(SubscriptionParseError, match="split error"):
        parse_tags("||")
    with pytest.raises(SubscriptionParseError):
        parse_tags("||||")
    # whitespace between separators is a (dropped) part, not an error: matches nothing
    assert parse_tags(" || ") == ([], [])


def test_java_trim_strips_control_chars_not_unicode_spaces():
    assert java_trim("\x00\x01 a \x1f") == "a"
    assert java_trim("\u00a0a\u3000") == "\u00a0a\u3000"


def test_build_tag_subscription():
    sub = build_subscription_data("T", "TagA || TagB")
    assert (sub.topic, sub.subString, sub.expressionType) == ("T", "TagA || TagB", "TAG")
    assert sub.tagsSet == ["TagA", "TagB"] and sub.codeSet == [TAG_A, TAG_B]
    assert sub.classFilterMode is False
    assert sub.subVersion > 1_600_000_000_000  # ms timestamp
    for all_sub in (None, "", "*"):
        s = build_subscription_data("T", all_sub, None)
        assert s.subString == SUB_ALL and s.tagsSet == [] and s.codeSet == [] and s.is_sub_all()


def test_build_sql_subscription():
    sub = build_subscription_data("T", "a > 5 AND b = 'x'", ExpressionType.SQL92)
    assert sub.subString == "a > 5 AND b = 'x'"
    assert sub.expressionType == "SQL92"
    assert sub.tagsSet == [] and sub.codeSet == []
    assert not sub.is_sub_all()
    with pytest.raises(SubscriptionParseError, match="Expression can't be null"):
        build_subscription_data("T", "", "SQL92")
    with pytest.raises(SubscriptionParseError):
        build_subscription_data("T", None, "SQL92")


# What a Java 4.9 client puts in HeartbeatData.consumerDataSet[].subscriptionDataSet
# (fastjson: alphabetical keys, sets as arrays, no filterClassSource).
JAVA_TAG_JSON = (
    '{"classFilterMode":false,"codeSet":[2598919,2598920],"expressionType":"TAG",'
    '"subString":"TagA || TagB","subVersion":1690000000000,"tagsSet":["TagA","TagB"],"topic":"TopicTest"}'
)
JAVA_SQL_JSON = (
    '{"classFilterMode":false,"codeSet":[],"expressionType":"SQL92","subString":"a > 5",'
    '"subVersion":1690000000001,"tagsSet":[],"topic":"TopicTest"}'
)


def test_json_from_java_and_back():
    sub = SubscriptionData.from_json(JAVA_TAG_JSON)
    assert sub == SubscriptionData(
        topic="TopicTest",
        subString="TagA || TagB",
        tagsSet=["TagA", "TagB"],
        codeSet=[TAG_A, TAG_B],
        subVersion=1690000000000,
        expressionType="TAG",
        classFilterMode=False,
    )
    assert sub.to_json() == JAVA_TAG_JSON
    sql = SubscriptionData.from_json(JAVA_SQL_JSON.encode())
    assert sql.expressionType == "SQL92" and sql.subString == "a > 5" and sql.subVersion == 1690000000001
    assert sql.to_json() == JAVA_SQL_JSON


def test_built_subscription_serialises_like_java():
    sub = build_subscription_data("TopicTest", "TagA || TagB")
    sub.subVersion = 1690000000000
    assert sub.to_json() == JAVA_TAG_JSON
    assert SubscriptionData.from_json(sub.to_json()) == sub


def test_json_tolerates_unknown_and_missing_keys():
    sub = SubscriptionData.from_json('{"topic":"T","filterClassSource":"x","somethingNew":[1]}')
    assert sub.topic == "T" and sub.subString == "*" and sub.expressionType == "TAG"
    assert sub.tagsSet == [] and sub.codeSet == [] and sub.classFilterMode is False
    d = json.loads(sub.to_json())
    assert sorted(d) == ["classFilterMode", "codeSet", "expressionType", "subString", "subVersion", "tagsSet", "topic"]


@pytest.mark.parametrize("bad", ["not json", "[1,2]", '{"codeSet":["x"]}', '{"codeSet":[4294967296]}'])
def test_bad_json(bad):
    with pytest.raises(SubscriptionParseError):
        SubscriptionData.from_json(bad)

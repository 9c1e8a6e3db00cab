"""SQL92 consumer filters wired through heartbeats, pulls and consumerFilter.json (real bin/mqbroker)."""

from __future__ import annotations

import json

from remoting.body.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import call, messages, pull, send, wait_max_offset
from tests.support import wait_until


def _heartbeat(group: str, subs: list[SubscriptionData], client_id: str = "127.0.0.1@wiring") -> bytes:
    return HeartbeatData(
        clientID=client_id, consumerDataSet=[ConsumerData(groupName=group, subscriptionDataSet=subs)]
    ).to_json()


def _sql(topic: str, expression: str, version: int) -> SubscriptionData:
    return SubscriptionData(topic=topic, subString=expression, expressionType="SQL92", subVersion=version)


async def _fill(c: RemotingClient, addr: str, topic: str, values: list[str], extra: dict | None = None) -> None:
    for i, a in enumerate(values):
        r = await send(c, addr, topic, b"m%d" % i, {"a": a, **(extra or {})}, queue_id=0)
        assert r.code == ResponseCode.SUCCESS, r.remark
    await wait_max_offset(c, addr, topic, 0, len(values))


async def test_filter_data_answers_follow_the_heartbeat(broker_factory):
    b = broker_factory("fw", enablePropertyFilter="true")
    addr = b.addr
    async with RemotingClient() as c:
        await _fill(c, addr, "FwT", ["1", "5", "9"])
        # an expression that does not compile: registered as a subscription, but no filter data
        r = await call(c, addr, RequestCode.HEART_BEAT, body=_heartbeat("gFw", [_sql("FwT", "a >", 100)]))
        assert r.code == ResponseCode.SUCCESS
        p = await pull(c, addr, "gFw", "FwT", 0, 0, sys_flag=0, sub_version=100)
        assert p.code == ResponseCode.FILTER_DATA_NOT_EXIST, (p.code, p.remark)
        # a newer, valid expression replaces it
        r = await call(c, addr, RequestCode.HEART_BEAT, body=_heartbeat("gFw", [_sql("FwT", "a > 3", 101)]))
        assert r.code == ResponseCode.SUCCESS
        p = await pull(c, addr, "gFw", "FwT", 0, 0, sys_flag=0, sub_version=101)
        assert p.code == ResponseCode.SUCCESS, (p.code, p.remark)
        assert [m.body for m in messages(p)] == [b"m1", b"m2"]
        # the consumer is ahead of what the broker has
        p = await pull(c, addr, "gFw", "FwT", 0, 0, sys_flag=0, sub_version=102)
        assert p.code == ResponseCode.SUBSCRIPTION_NOT_LATEST
        # an older heartbeat changes nothing
        r = await call(c, addr, RequestCode.HEART_BEAT, body=_heartbeat("gFw", [_sql("FwT", "a > 100", 50)]))
        p = await pull(c, addr, "gFw", "FwT", 0, 0, sys_flag=0, sub_version=101)
        assert [m.body for m in messages(p)] == [b"m1", b"m2"]


async def test_sql92_pull_needs_property_filter_enabled(broker_factory):
    b = broker_factory("fwoff")
    async with RemotingClient() as c:
        await _fill(c, b.addr, "OffT", ["1"])
        r = await call(c, b.addr, RequestCode.HEART_BEAT, body=_heartbeat("gOff", [_sql("OffT", "a > 0", 7)]))
        assert r.code == ResponseCode.SUCCESS
        # filter data exists (heartbeats register it anyway), the broker refuses to evaluate it
        p = await pull(c, b.addr, "gOff", "OffT", 0, 0, sys_flag=0, sub_version=7)
        assert p.code == ResponseCode.SYSTEM_ERROR and "SQL92" in p.remark
        # a bad expression in the pull itself is a parse failure (as 4.9.7), whatever the flag
        p = await pull(c, b.addr, "gOff", "OffT", 0, 0, subscription="a >", expression_type="SQL92")
        assert p.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_filter_support_retry_uses_the_original_topic_expression(broker_factory):
    b = broker_factory("fwr", enablePropertyFilter="true")
    addr = b.addr
    retry = "%RETRY%gR"
    async with RemotingClient() as c:
        subs = [_sql("RT", "a > 3", 10), SubscriptionData(topic=retry, subString="*", subVersion=10)]
        r = await call(c, addr, RequestCode.HEART_BEAT, body=_heartbeat("gR", subs))
        assert r.code == ResponseCode.SUCCESS
        await _fill(c, addr, retry, ["1", "5", "9"], {"RETRY_TOPIC": "RT"})
        p = await pull(c, addr, "gR", retry, 0, 0, sys_flag=0, sub_version=10)
        assert [m.body for m in messages(p)] == [b"m0", b"m1", b"m2"]  # filterSupportRetry off
        r = await call(c, addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"filterSupportRetry=true\n")
        assert r.code == ResponseCode.SUCCESS, r.remark
        p = await pull(c, addr, "gR", retry, 0, 0, sys_flag=0, sub_version=10)
        assert p.code == ResponseCode.SUCCESS, (p.code, p.remark)
        assert [m.body for m in messages(p)] == [b"m1", b"m2"]


def _stored(path) -> dict:
    if not path.exists():
        return {}
    doc = json.loads(path.read_text())
    return {
        (topic, group): data
        for topic, t in doc.get("filterDataByTopic", {}).items()
        for group, data in t.get("groupFilterData", {}).items()
    }


async def test_consumer_filters_persist_and_die_with_the_group(broker_factory):
    b = broker_factory("fwp", enablePropertyFilter="true")
    path = b.store / "config" / "consumerFilter.json"
    async with RemotingClient() as c:
        r = await call(c, b.addr, RequestCode.HEART_BEAT, body=_heartbeat("gP", [_sql("PT", "a > 1", 5)]))
        assert r.code == ResponseCode.SUCCESS
        # persisted by the periodic task (every 10 s) while the broker runs
        wait_until(lambda: ("PT", "gP") in _stored(path), timeout=25, what="consumerFilter.json written")
        data = _stored(path)[("PT", "gP")]
        assert data["expression"] == "a > 1" and data["clientVersion"] == 5 and data["deadTime"] == 0
    # the client's connection closed: the group is gone and its filter is dead (persisted at shutdown)
    assert b.stop() == 0
    data = _stored(path)[("PT", "gP")]
    assert data["deadTime"] > 0
    # loaded at start, kept (dead) until filterDataCleanTimeSpan, written back at shutdown
    b.start()
    assert b.stop() == 0
    assert _stored(path)[("PT", "gP")]["expression"] == "a > 1"

"""SQL92 and TAG filtering end to end: a real bin/mqbroker (enablePropertyFilter=true) over loopback."""

from __future__ import annotations

import pytest

from common.filter import build_subscription_data
from remoting.body.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import BrokerProc, call, messages, pull, send, wait_max_offset

MESSAGES = [
    (b"m0", {"a": "1", "color": "red", "TAGS": "TagA"}),
    (b"m1", {"a": "5", "color": "blue", "TAGS": "TagB"}),
    (b"m2", {"a": "7", "color": "red", "TAGS": "TagA"}),
    (b"m3", {"a": "x", "color": "red"}),  # 'a' is not a number: evaluation error, no match
    (b"m4", {"color": "green", "TAGS": "TagC"}),
    (b"m5", {"a": "10", "price": "9.5", "TAGS": "TagB"}),
]


@pytest.fixture
def broker(procs, tmp_path):
    return BrokerProc(tmp_path, "filterb", start_proc=procs.start, enablePropertyFilter="true").start()


async def _fill(c: RemotingClient, addr: str, topic: str) -> None:
    for body, props in MESSAGES:
        r = await send(c, addr, topic, body, props, queue_id=0)
        assert r.code == ResponseCode.SUCCESS, r.remark
    await wait_max_offset(c, addr, topic, 0, len(MESSAGES))


def bodies(resp) -> list[bytes]:
    return [m.body for m in messages(resp)]


async def test_sql92_pull_with_subscription_in_request(broker):
    addr = broker.addr
    async with RemotingClient() as c:
        await _fill(c, addr, "SqlT")
        cases = {
            "a > 3": [b"m1", b"m2", b"m5"],
            "a > 3 AND color = 'red'": [b"m2"],
            "color IN ('red', 'green') AND TAGS IS NOT NULL": [b"m0", b"m2", b"m4"],
            "a BETWEEN 5 AND 7 OR price > 9.0": [b"m1", b"m2", b"m5"],
            "TAGS = 'TagB'": [b"m1", b"m5"],
            "a IS NULL": [b"m4"],
        }
        for expression, expected in cases.items():
            p = await pull(c, addr, "gSql", "SqlT", 0, 0, subscription=expression, expression_type="SQL92")
            assert p.code == ResponseCode.SUCCESS, (expression, p.code, p.remark)
            assert bodies(p) == expected, expression
            assert p.ext_fields["nextBeginOffset"] == str(len(MESSAGES))

        p = await pull(c, addr, "gSql", "SqlT", 0, 0, subscription="color = 'purple'", expression_type="SQL92")
        assert p.code == ResponseCode.PULL_RETRY_IMMEDIATELY and p.remark == "NO_MATCHED_MESSAGE"

        p = await pull(c, addr, "gSql", "SqlT", 0, 0, subscription="a >", expression_type="SQL92")
        assert p.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED

        # the TAG filter of the same broker still works by hash code
        p = await pull(c, addr, "gTag", "SqlT", 0, 0, subscription="TagA || TagC")
        assert p.code == ResponseCode.SUCCESS and bodies(p) == [b"m0", b"m2", b"m4"]


async def test_sql92_pull_with_heartbeat_subscription(broker):
    addr = broker.addr
    async with RemotingClient() as c:
        await _fill(c, addr, "SqlHbT")
        sd = build_subscription_data("SqlHbT", "a >= 5 AND TAGS <> 'TagB'", "SQL92")
        hb = HeartbeatData(
            clientID="127.0.0.1@filter-test",
            consumerDataSet=[
                ConsumerData(
                    groupName="gSqlHb",
                    subscriptionDataSet=[
                        SubscriptionData(
                            topic=sd.topic,
                            subString=sd.subString,
                            expressionType=sd.expressionType,
                            subVersion=sd.subVersion,
                        )
                    ],
                )
            ],
        ).to_json()
        r = await call(c, addr, RequestCode.HEART_BEAT, body=hb)
        assert r.code == ResponseCode.SUCCESS, r.remark
        # no subscription bit: the broker uses what the heartbeat registered
        p = await pull(c, addr, "gSqlHb", "SqlHbT", 0, 0, sys_flag=0, sub_version=sd.subVersion)
        assert p.code == ResponseCode.SUCCESS, (p.code, p.remark)
        assert bodies(p) == [b"m2"]

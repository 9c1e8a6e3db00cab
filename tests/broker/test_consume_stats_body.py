"""GET_CONSUME_STATS / GET_BROKER_CONSUME_STATS bodies, written by the broker's direct writer, and the
GET_ALL_SUBSCRIPTIONGROUP_CONFIG body (orjson) are byte for byte what the generic bean encoding
(to_obj + fastjson.dumps) gives: fastjson's default form, each MessageQueue an object key, as the Java
admin tools parse it."""

from __future__ import annotations

from client.consume_lag import GroupLag, consume_lag
from remoting import fastjson
from remoting.body.consumer import ConsumeStats, MessageQueue
from remoting.body.subscription_group import SubscriptionGroupConfig, SubscriptionGroupWrapper
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import call, pull, send, wait_max_offset


def _generic_consume_stats(obj: dict) -> dict:
    """The bean round trip: decode into ConsumeStats, encode its tree again."""
    return ConsumeStats.from_obj(obj).to_obj()


async def _traffic(c: RemotingClient, addr: str, t: str = "Csb") -> None:
    # two topics with lag on some queues; gCsb consumes both, gCsc one, gCsd is known but has no offsets
    # (each test its own topics: the broker is shared by the module)
    for topic, n in ((f"{t}T1", 5), (f"{t}T2", 3)):
        for i in range(n):
            await send(c, addr, topic, b"m%d" % i, queue_id=i % 2)
        await wait_max_offset(c, addr, topic, 0, (n + 1) // 2)
        await wait_max_offset(c, addr, topic, 1, n // 2)
    for group in ("gCsb", "gCsc", "gCsd"):  # a pull auto-creates the subscription group
        assert (await pull(c, addr, group, f"{t}T1", 0, 0)).code == ResponseCode.SUCCESS
    for group, topic, qid, off in (("gCsb", "T1", 0, 2), ("gCsb", "T1", 1, 1), ("gCsb", "T2", 0, 2),
                                   ("gCsc", "T2", 1, 1)):
        await call(c, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": group, "topic": t + topic, "queueId": qid, "commitOffset": off})


async def test_consume_stats_bytes_match_the_bean_encoding(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        await _traffic(c, addr)
        r = await call(c, addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "gCsb"})
        assert r.code == ResponseCode.SUCCESS, r.remark
        tree = fastjson.loads(r.body)
        assert r.body == fastjson.dumps(_generic_consume_stats(tree))
        assert r.body.startswith(b'{"consumeTps":')  # a double, written as Java does (0.0, 230.76923076923077)
        assert b',"offsetTable":{{"brokerName":"shared","queueId":0,"topic":"CsbT1"}:{"brokerOffset":3,' \
            b'"consumerOffset":2,"lastTimestamp":' in r.body
        cs = ConsumeStats.from_json(r.body)
        assert [(mq.topic, mq.queueId) for mq in cs.offsetTable][:2] == [("CsbT1", 0), ("CsbT1", 1)]
        w = cs.offsetTable[MessageQueue("CsbT2", "shared", 1)]
        assert (w.brokerOffset, w.consumerOffset, w.lastTimestamp) == (1, 0, 0)
        assert cs.offsetTable[MessageQueue("CsbT2", "shared", 0)].lastTimestamp > 0

        r = await call(c, addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "gCsc", "topic": "CsbT2"})
        assert r.body == fastjson.dumps(_generic_consume_stats(fastjson.loads(r.body)))


async def test_broker_consume_stats_bytes_match_the_bean_encoding(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        await _traffic(c, addr, "Bcb")
        r = await call(c, addr, RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false", "timeoutMillis": 3000})
        assert r.code == ResponseCode.SUCCESS, r.remark
        tree = fastjson.loads(r.body)
        generic = {"brokerAddr": tree["brokerAddr"],
                   "consumeStatsList": [{g: [_generic_consume_stats(s) for s in stats] for g, stats in e.items()}
                                        for e in tree["consumeStatsList"]],
                   "totalDiff": tree["totalDiff"]}
        assert r.body == fastjson.dumps(generic)
        per_group = {g: stats for e in tree["consumeStatsList"] for g, stats in e.items()}
        assert per_group["gCsd"] == []  # known group without committed offsets: listed, empty
        assert [len(s["offsetTable"]) for s in per_group["gCsb"]] == [4, 4, 4, 4]  # BcbT1, BcbT2, CsbT1, CsbT2 (4 write queues)
        diff = sum(w["brokerOffset"] - w["consumerOffset"]
                   for stats in per_group.values() for s in stats for w in s["offsetTable"].values())
        assert tree["totalDiff"] == diff
        assert b'{"gCsb":[{"consumeTps":' in r.body
        assert b'"offsetTable":{{"brokerName":"shared","queueId":0,"topic":"BcbT1"}:{"brokerOffset":3,' in r.body


async def test_all_subscription_group_bytes_match_the_bean_encoding(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        sgc = SubscriptionGroupConfig(groupName="gSgb", consumeEnable=False, retryMaxTimes=3, brokerId=1)
        r = await call(c, addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=sgc.to_json())
        assert r.code == ResponseCode.SUCCESS, r.remark
        r = await call(c, addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        wrapper = SubscriptionGroupWrapper.from_json(r.body)
        assert wrapper.subscriptionGroupTable["gSgb"] == sgc and wrapper.dataVersion.counter > 0
        assert r.body == fastjson.dumps(wrapper.to_obj())
        assert b'"gSgb":{"brokerId":1,"consumeBroadcastEnable":true,"consumeEnable":false,' in r.body


async def test_consume_lag_reads_the_answer_whole_or_a_page_of_groups(shared_broker):
    """client.consume_lag over a real answer: the page path (only some groups' entries parsed), the whole
    path and a standard-mode JSON answer agree with a full bean decode."""
    addr = shared_broker.addr
    async with RemotingClient() as c:
        await _traffic(c, addr, "Lag")
        r = await call(c, addr, RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false", "timeoutMillis": 3000})
    tree = fastjson.loads(r.body)
    want = {}
    for entry in tree["consumeStatsList"]:
        for g, stats in entry.items():
            beans = [ConsumeStats.from_obj(s) for s in stats]
            lagging = [w for cs in beans for w in cs.offsetTable.values() if w.brokerOffset > w.consumerOffset]
            want[g] = GroupLag(sum(cs.consumeTps for cs in beans),
                               sum(w.brokerOffset - w.consumerOffset for w in lagging),
                               min((w.lastTimestamp for w in lagging if w.lastTimestamp > 0), default=0))
    assert want["gCsb"].diff > 0 and want["gCsb"].oldest > 0 and want["gCsd"] == GroupLag()
    assert consume_lag(r.body) == want
    first, last = (next(iter(tree["consumeStatsList"][i])) for i in (0, -1))  # the cut's two edge cases
    page = {first, "gCsb", "gCsd", last, "NotOnThisBroker"}
    expected = {g: want[g] for g in page - {"NotOnThisBroker"}}
    assert len(expected) >= 3 and consume_lag(r.body, page) == expected
    assert consume_lag(fastjson.dumps(tree, standard=True), page) == expected

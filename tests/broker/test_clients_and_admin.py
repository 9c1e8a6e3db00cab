"""Heartbeats, consumer membership notifications, and the admin requests."""

from __future__ import annotations

from common.filter import build_subscription_data
from remoting import fastjson
from remoting.body.admin import GroupList, TopicStatsTable
from remoting.body.consumer import (
    ConsumerConnection,
    ConsumeStats,
    GetConsumerListByGroupResponseBody,
    MessageQueue,
    ProducerConnection,
    ResetOffsetBody,
)
from remoting.body.heartbeat import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from remoting.body.kv import KVTable
from remoting.body.subscription_group import SubscriptionGroupConfig, SubscriptionGroupWrapper
from remoting.body.topic_config import TopicConfigSerializeWrapper
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.broker.helpers import call, messages, pull, send, wait_max_offset
from tests.support import async_wait_until


def heartbeat(client_id: str, group: str | None, topics: list[str], producer_group: str | None = None,
              model: str = "CLUSTERING", sub: str = "*") -> bytes:
    consumers = []
    if group:
        subs = []
        for t in topics:
            sd = build_subscription_data(t, sub)
            subs.append(SubscriptionData(topic=t, subString=sd.subString, tagsSet=sd.tagsSet, codeSet=sd.codeSet,
                                         subVersion=sd.subVersion))
        consumers.append(ConsumerData(groupName=group, messageModel=model, subscriptionDataSet=subs))
    producers = [ProducerData(producer_group)] if producer_group else []
    return HeartbeatData(clientID=client_id, producerDataSet=producers, consumerDataSet=consumers).to_json()


class Notified:
    """A client that records NOTIFY_CONSUMER_IDS_CHANGED requests the broker sends it."""

    def __init__(self):
        self.client = RemotingClient()
        self.groups: list[str] = []
        self.resets: list[bytes] = []
        self.client.register_processor(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_notify)
        self.client.register_processor(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._on_reset)

    def _on_notify(self, req, conn):
        self.groups.append(req.ext_fields["consumerGroup"])
        return None

    def _on_reset(self, req, conn):
        self.resets.append(req.body)
        return None


async def test_heartbeat_registers_consumers_and_notifies_membership_changes(shared_broker):
    addr = shared_broker.addr
    a, b = Notified(), Notified()
    try:
        r = await call(a.client, addr, RequestCode.HEART_BEAT, body=heartbeat("cidA", "gHb", ["HbT"]))
        assert r.code == ResponseCode.SUCCESS, r.remark
        r = await call(a.client, addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "gHb"})
        assert GetConsumerListByGroupResponseBody.from_json(r.body).consumerIdList == ["cidA"]
        # the retry topic of the group now exists
        r = await call(a.client, addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        assert "%RETRY%gHb" in TopicConfigSerializeWrapper.from_json(r.body).topicConfigTable
        # a second member joins: both are told
        r = await call(b.client, addr, RequestCode.HEART_BEAT, body=heartbeat("cidB", "gHb", ["HbT"]))
        assert r.code == ResponseCode.SUCCESS
        await async_wait_until(lambda: a.groups and b.groups, 5, what="both members notified")
        assert a.groups[-1] == "gHb"
        r = await call(a.client, addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "gHb"})
        assert sorted(GetConsumerListByGroupResponseBody.from_json(r.body).consumerIdList) == ["cidA", "cidB"]
        # connection list with subscriptions
        r = await call(a.client, addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "gHb"})
        cc = ConsumerConnection.from_json(r.body)
        assert sorted(c.clientId for c in cc.connectionSet) == ["cidA", "cidB"]
        assert "HbT" in cc.subscriptionTable and cc.messageModel == "CLUSTERING"
        # pull with the heartbeat-registered subscription (no subscription bit)
        await send(a.client, addr, "HbT", b"x")
        await wait_max_offset(a.client, addr, "HbT", 0, 1)
        p = await pull(a.client, addr, "gHb", "HbT", 0, 0, sys_flag=0)
        assert p.code == ResponseCode.SUCCESS
        # b leaves by closing its connection: a is notified again and the list shrinks
        before = len(a.groups)
        await b.client.close()
        await async_wait_until(lambda: len(a.groups) > before, 5, what="notify after member left")

        async def only_a():
            r = await call(a.client, addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "gHb"})
            return GetConsumerListByGroupResponseBody.from_json(r.body).consumerIdList == ["cidA"]

        await async_wait_until(only_a, 5)
        # UNREGISTER_CLIENT removes the last one
        r = await call(a.client, addr, RequestCode.UNREGISTER_CLIENT, {"clientID": "cidA", "consumerGroup": "gHb"})
        assert r.code == ResponseCode.SUCCESS
        r = await call(a.client, addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "gHb"})
        assert r.code == ResponseCode.SYSTEM_ERROR
        r = await call(a.client, addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "gHb"})
        assert r.code == ResponseCode.CONSUMER_NOT_ONLINE
    finally:
        await a.client.close()
        await b.client.close()


async def test_heartbeat_bad_input(shared_broker):
    async with RemotingClient() as c:
        r = await call(c, shared_broker.addr, RequestCode.HEART_BEAT, body=b"{not json")
        assert r.code == ResponseCode.SYSTEM_ERROR
        r = await call(c, shared_broker.addr, RequestCode.HEART_BEAT, body=heartbeat("cid", "../evil", ["T"]))
        assert r.code == ResponseCode.SYSTEM_ERROR and "illegal" in r.remark
        r = await call(c, shared_broker.addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        assert "%RETRY%../evil" not in TopicConfigSerializeWrapper.from_json(r.body).topicConfigTable


async def test_producer_connection_list(shared_broker):
    async with RemotingClient() as c:
        r = await call(c, shared_broker.addr, RequestCode.HEART_BEAT, body=heartbeat("pid1", None, [], producer_group="pgX"))
        assert r.code == ResponseCode.SUCCESS
        r = await call(c, shared_broker.addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "pgX"})
        assert r.code == ResponseCode.SUCCESS
        pc = ProducerConnection.from_json(r.body)
        assert [x.clientId for x in pc.connectionSet] == ["pid1"] and pc.connectionSet[0].version == 407
        r = await call(c, shared_broker.addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "nobody"})
        assert r.code == ResponseCode.SYSTEM_ERROR


async def test_topic_admin(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        h = {"topic": "AdmT", "defaultTopic": "TBW102", "readQueueNums": 3, "writeQueueNums": 2, "perm": 6,
             "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false"}
        r = await call(c, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, h)
        assert r.code == ResponseCode.SUCCESS, r.remark
        r = await call(c, addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        tc = TopicConfigSerializeWrapper.from_json(r.body).topicConfigTable["AdmT"]
        assert (tc.readQueueNums, tc.writeQueueNums, tc.perm) == (3, 2, 6)
        # stats: one entry per write queue
        await send(c, addr, "AdmT", b"x", queue_id=1)
        await wait_max_offset(c, addr, "AdmT", 1, 1)
        r = await call(c, addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": "AdmT"})
        st = TopicStatsTable.from_json(r.body)
        assert len(st.offsetTable) == 2
        q1 = st.offsetTable[MessageQueue("AdmT", "shared", 1)]
        assert q1.maxOffset == 1 and q1.lastUpdateTimestamp > 0
        r = await call(c, addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": "NopeT"})
        assert r.code == ResponseCode.TOPIC_NOT_EXIST
        # illegal / system / reserved names
        for bad in ("../x", "SCHEDULE_TOPIC_XXXX", "rmq_sys_foo", "TestCluster", "TBW102"):
            r = await call(c, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, dict(h, topic=bad))
            assert r.code == ResponseCode.SYSTEM_ERROR, bad
        # missing header field
        r = await call(c, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "X"})
        assert r.code == ResponseCode.SYSTEM_ERROR and "is null" in r.remark
        # wrong perm: a write-only topic cannot be pulled, a read-only one cannot be sent to... by perm bits
        r = await call(c, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, dict(h, topic="WriteOnlyT", perm=2))
        assert r.code == ResponseCode.SUCCESS
        await send(c, addr, "WriteOnlyT", b"x")
        p = await pull(c, addr, "gW", "WriteOnlyT", 0, 0)
        assert p.code == ResponseCode.NO_PERMISSION
        # delete
        r = await call(c, addr, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "AdmT"})
        assert r.code == ResponseCode.SUCCESS
        r = await call(c, addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        assert "AdmT" not in TopicConfigSerializeWrapper.from_json(r.body).topicConfigTable
        r = await call(c, addr, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "../../etc"})
        assert r.code == ResponseCode.SYSTEM_ERROR
        r = await call(c, addr, RequestCode.GET_TOPIC_NAME_LIST)
        assert "WriteOnlyT" in fastjson.loads(r.body)["topicList"]


async def test_subscription_group_admin(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        body = SubscriptionGroupConfig(groupName="gAdm", retryMaxTimes=3, consumeBroadcastEnable=False).to_json()
        r = await call(c, addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
        assert r.code == ResponseCode.SUCCESS
        r = await call(c, addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        w = SubscriptionGroupWrapper.from_json(r.body)
        assert w.subscriptionGroupTable["gAdm"].retryMaxTimes == 3
        assert "TOOLS_CONSUMER" in w.subscriptionGroupTable
        r = await call(c, addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                       body=SubscriptionGroupConfig(groupName="a/b").to_json())
        assert r.code == ResponseCode.SYSTEM_ERROR
        r = await call(c, addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=b"[1,2")
        assert r.code == ResponseCode.SYSTEM_ERROR
        r = await call(c, addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "gAdm"})
        assert r.code == ResponseCode.SUCCESS
        r = await call(c, addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        assert "gAdm" not in SubscriptionGroupWrapper.from_json(r.body).subscriptionGroupTable


async def test_consume_stats_reset_offset_and_offset_table(shared_broker):
    addr = shared_broker.addr
    n = Notified()
    try:
        c = n.client
        for i in range(5):
            await send(c, addr, "StatT", b"%d" % i)
        await wait_max_offset(c, addr, "StatT", 0, 5)
        await call(c, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": "gStat", "topic": "StatT", "queueId": 0, "commitOffset": 2})
        for q in (1, 2, 3):
            await call(c, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                       {"consumerGroup": "gStat", "topic": "StatT", "queueId": q, "commitOffset": 0})
        r = await call(c, addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "gStat", "topic": "StatT"})
        cs = ConsumeStats.from_json(r.body)
        w = cs.offsetTable[MessageQueue("StatT", "shared", 0)]
        assert (w.brokerOffset, w.consumerOffset) == (5, 2) and w.lastTimestamp > 0
        assert len(cs.offsetTable) == 4
        r = await call(c, addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "StatT"})
        assert "gStat" in GroupList.from_json(r.body).groupList
        # reset with nobody online
        hdr = {"topic": "StatT", "group": "gStat", "timestamp": -1, "isForce": "true"}
        r = await call(c, addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, hdr)
        assert r.code == ResponseCode.CONSUMER_NOT_ONLINE
        # a consumer online gets RESET_CONSUMER_CLIENT_OFFSET with the table
        await call(c, addr, RequestCode.HEART_BEAT, body=heartbeat("cidS", "gStat", ["StatT"]))
        r = await call(c, addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, hdr)
        assert r.code == ResponseCode.SUCCESS, r.remark
        table = ResetOffsetBody.from_json(r.body).offsetTable
        assert table[MessageQueue("StatT", "shared", 0)] == 5
        await async_wait_until(lambda: n.resets, 5, what="reset pushed to the client")
        assert ResetOffsetBody.from_json(n.resets[0]).offsetTable == table
        r = await call(c, addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        assert fastjson.loads(r.body)["offsetTable"]["StatT@gStat"]["0"] == 2
    finally:
        await n.client.close()


async def test_query_message_by_key_and_view_by_id(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        r = await send(c, addr, "QryT", b"findme", {"KEYS": "order-42", "UNIQ_KEY": "UQ42"})
        msg_id = r.ext_fields["msgId"]
        await wait_max_offset(c, addr, "QryT", 0, 1)
        from common.message import decode_offset_msg_id

        _, phys = decode_offset_msg_id(msg_id)

        async def by_key():
            r = await call(c, addr, RequestCode.QUERY_MESSAGE,
                           {"topic": "QryT", "key": "order-42", "maxNum": 32, "beginTimestamp": 0,
                            "endTimestamp": 2**62})
            return r if r.code == ResponseCode.SUCCESS else None

        r = await async_wait_until(by_key, 5, what="indexed")
        assert [m.body for m in messages(r)] == [b"findme"]
        assert int(r.ext_fields["indexLastUpdatePhyoffset"]) >= 0
        r = await call(c, addr, RequestCode.QUERY_MESSAGE,
                       {"topic": "QryT", "key": "none", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 2**62})
        assert r.code == ResponseCode.QUERY_NOT_FOUND
        r = await call(c, addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": phys})
        assert r.code == ResponseCode.SUCCESS and messages(r)[0].body == b"findme"
        r = await call(c, addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": 10**12})
        assert r.code == ResponseCode.SYSTEM_ERROR


async def test_broker_config_get_update_and_refusal(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        r = await call(c, addr, RequestCode.GET_BROKER_CONFIG)
        text = r.body.decode()
        assert f"listenPort={shared_broker.port}\n" in text and "brokerName=shared\n" in text
        assert "counter" in r.ext_fields["version"]
        r = await call(c, addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"shortPollingTimeMills=1500\n")
        assert r.code == ResponseCode.SUCCESS, r.remark
        r = await call(c, addr, RequestCode.GET_BROKER_CONFIG)
        assert "shortPollingTimeMills=1500\n" in r.body.decode()
        # paths, ports and program-running keys are refused as a whole (CVE-2023-33246)
        for bad in (b"storePathRootDir=/tmp/x\n", b"listenPort=1\n", b"rocketmqHome=/tmp\nshortPollingTimeMills=9\n",
                    b"filterServerNums=1\n", b"storePathCommitLog=/tmp/y\n"):
            r = await call(c, addr, RequestCode.UPDATE_BROKER_CONFIG, body=bad)
            assert r.code == ResponseCode.NO_PERMISSION, bad
            assert "black list" in r.remark
        r = await call(c, addr, RequestCode.GET_BROKER_CONFIG)
        text = r.body.decode()
        assert "shortPollingTimeMills=1500\n" in text and f"storePathRootDir={shared_broker.store}\n" in text
        r = await call(c, addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"shortPollingTimeMills=abc\n")
        assert r.code == ResponseCode.SYSTEM_ERROR and "shortPollingTimeMills" in r.remark
        r = await call(c, addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"noSuchKey=1\n")
        assert r.code == ResponseCode.SYSTEM_ERROR
        # an escaped line break would smuggle a forbidden key into the persisted -c file
        r = await call(c, addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"regionId=x\\nstorePathRootDir=/tmp/evil\n")
        assert r.code == ResponseCode.SYSTEM_ERROR and "line break" in r.remark
        # the change was written back to the -c file, the forbidden ones were not
        conf = shared_broker.conf.read_text()
        assert "shortPollingTimeMills=1500" in conf and "/tmp/x" not in conf and "/tmp/evil" not in conf


async def test_runtime_info(shared_broker):
    async with RemotingClient() as c:
        await send(c, shared_broker.addr, "RtT", b"x")
        r = await call(c, shared_broker.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        t = KVTable.from_json(r.body).table
        assert t["brokerVersionDesc"] == "V4_9_7" and t["brokerVersion"] == "407"
        assert int(t["msgPutTotalTodayNow"]) >= 1
        assert t["commitLogDirCapacity"].startswith("Total : ")
        for k in ("bootTimestamp", "putTps", "sendThreadPoolQueueCapacity", "dispatchBehindBytes"):
            assert k in t


async def test_oneway_update_offset_gets_no_response(shared_broker):
    async with RemotingClient() as c:
        cmd = RemotingCommand.request(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": "gOw", "topic": "OwT", "queueId": 0, "commitOffset": 7},
            oneway=True,
        )
        await c.invoke_oneway(shared_broker.addr, cmd)

        async def stored():
            r = await call(c, shared_broker.addr, RequestCode.QUERY_CONSUMER_OFFSET,
                           {"consumerGroup": "gOw", "topic": "OwT", "queueId": 0})
            return r.ext_fields and r.ext_fields.get("offset") == "7"

        await async_wait_until(stored, 5)


async def test_view_broker_stats_data(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        for _ in range(3):
            await send(c, addr, "StatsDataT", b"12345")
        await wait_max_offset(c, addr, "StatsDataT", 0, 3)
        p = await pull(c, addr, "gStatsData", "StatsDataT", 0, 0)
        assert p.code == ResponseCode.SUCCESS
        r = await call(c, addr, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "StatsDataT"})
        assert r.code == ResponseCode.SUCCESS
        d = fastjson.loads(r.body)
        assert d["statsMinute"]["sum"] == 3 and d["statsDay"]["sum"] == 3 and d["statsMinute"]["tps"] > 0
        r = await call(c, addr, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_SIZE", "statsKey": "StatsDataT"})
        assert fastjson.loads(r.body)["statsMinute"]["sum"] == 15
        r = await call(c, addr, RequestCode.VIEW_BROKER_STATS_DATA,
                       {"statsName": "GROUP_GET_NUMS", "statsKey": "StatsDataT@gStatsData"})
        assert fastjson.loads(r.body)["statsMinute"]["sum"] == 3
        r = await call(c, addr, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "nope"})
        assert r.code == ResponseCode.SYSTEM_ERROR and "not exist" in r.remark


async def test_broker_consume_stats(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        for _ in range(4):
            await send(c, addr, "BcsT", b"x", queue_id=0)
        await wait_max_offset(c, addr, "BcsT", 0, 4)
        # the listing walks the subscription groups: a pull auto-creates gBcs
        assert (await pull(c, addr, "gBcs", "BcsT", 0, 0)).code == ResponseCode.SUCCESS
        await call(c, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": "gBcs", "topic": "BcsT", "queueId": 0, "commitOffset": 1})
        r = await call(c, addr, RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false", "timeoutMillis": 3000})
        assert r.code == ResponseCode.SUCCESS
        d = fastjson.loads(r.body)
        assert d["brokerAddr"] == addr and d["totalDiff"] >= 3
        entry = next(e["gBcs"] for e in d["consumeStatsList"] if "gBcs" in e)
        assert len(entry) == 1
        cs = ConsumeStats.from_obj(entry[0])
        w = cs.offsetTable[MessageQueue("BcsT", "shared", 0)]
        assert (w.brokerOffset, w.consumerOffset) == (4, 1)

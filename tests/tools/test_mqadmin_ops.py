"""The mqadmin commands added for 4.9.7 parity, and --json, as processes against real NameServer and brokers.

Text output is checked against the Java tool's format (headers, widths, number formats);
--json against the admin layer's data.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import re

import pytest

from client import ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from tests.client.cluster import Cluster
from tests.support import async_wait_until, wait_until
from tests.tools.test_mqadmin import mqadmin, ok


@pytest.fixture(scope="module")
def cl(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("tools_ops"), brokers=2)
    ns = c.namesrv_addr
    ok(mqadmin("updateTopic", "-t", "OpsT", "-c", "TestCluster", "-r", "2", "-w", "2", ns=ns))
    wait_until(lambda: mqadmin("topicRoute", "-t", "OpsT", ns=ns).stdout.count('"brokerName"') >= 4, 15)
    yield c
    c.stop()


def js(*args, ns):
    return json.loads(ok(mqadmin(*args, "--json", ns=ns)))


def test_topic_cluster_perm_and_write_perm(cl):
    ns = cl.namesrv_addr
    assert ok(mqadmin("topicClusterList", "-t", "OpsT", ns=ns)).split() == ["TestCluster"]
    assert js("topicClusterList", "-t", "OpsT", ns=ns) == ["TestCluster"]
    out = ok(mqadmin("updateTopicPerm", "-t", "OpsT", "-c", "TestCluster", "-p", "4", ns=ns))
    assert out.count("update topic perm from 6 to 4 in ") == 2
    route = js("topicRoute", "-t", "OpsT", ns=ns)
    assert {q["perm"] for q in route["queueDatas"]} == {4}
    assert ok(mqadmin("updateTopicPerm", "-t", "OpsT", "-b", cl.brokers[0].addr, "-p", "4", ns=ns)).strip() == \
        "new perm equals to the old one!"
    ok(mqadmin("updateTopicPerm", "-t", "OpsT", "-c", "TestCluster", "-p", "6", ns=ns))
    bad = mqadmin("updateTopicPerm", "-t", "OpsT", "-c", "TestCluster", "-p", "5", ns=ns)
    assert bad.returncode == 2 and "bad perm 5" in bad.stderr

    wiped = ok(mqadmin("wipeWritePerm", "-b", "brokera", ns=ns))
    assert re.fullmatch(rf"wipe write perm of broker\[brokera\] in name server\[{ns}\] OK, \d+\n", wiped)
    route = js("topicRoute", "-t", "OpsT", ns=ns)
    assert {q["brokerName"]: q["perm"] for q in route["queueDatas"]}["brokera"] == 4
    added = js("addWritePerm", "-b", "brokera", ns=ns)
    assert added["namesrvs"][ns] >= 1
    route = js("topicRoute", "-t", "OpsT", ns=ns)
    assert {q["brokerName"]: q["perm"] for q in route["queueDatas"]}["brokera"] == 6


async def test_messages_print_and_unique_key(cl):
    ns = cl.namesrv_addr
    async with Producer("OpsPrintProducer", ns) as prod:
        mq = (await prod.fetch_publish_message_queues("OpsT"))[0]
        sent = [await prod.send(Message("OpsT", f"body-{i}".encode(), tags="TagA" if i % 2 else "TagB"), mq)
                for i in range(4)]
    topic_q = (mq.brokerName, mq.queueId)
    out = ok(await asyncio.to_thread(mqadmin, "printMsgByQueue", "-t", "OpsT", "-a", topic_q[0], "-i",
                                     str(topic_q[1]), "-p", "true", "-d", "true", "-f", "true", ns=ns))
    lines = out.splitlines()
    assert sum(1 for ln in lines if ln.startswith("MSGID: ")) == 4
    assert any(ln.endswith("BODY: body-3") for ln in lines)
    assert re.search(r"^Tag: TagA {27}Count: 2$", out, re.M) and re.search(r"^Tag: TagB +Count: 2$", out, re.M)
    data = json.loads(ok(await asyncio.to_thread(mqadmin, "printMsgByQueue", "-t", "OpsT", "-a", topic_q[0], "-i",
                                                 str(topic_q[1]), "-s", "TagA", "--json", ns=ns)))
    assert [m["tags"] for m in data["messages"]] == ["TagA", "TagA"] and data["tags"] == {"TagA": 2}
    whole = ok(await asyncio.to_thread(mqadmin, "printMsg", "-t", "OpsT", "-d", "false", ns=ns))
    assert whole.count("NOT PRINT BODY") >= 4 and "MessageQueue [topic=OpsT, brokerName=" in whole

    uniq = sent[1].msg_id
    by_uniq = ok(await asyncio.to_thread(mqadmin, "queryMsgByUniqueKey", "-i", uniq, "-t", "OpsT", ns=ns))
    assert re.search(rf"^MsgId:\s+{uniq}$", by_uniq, re.M) and "body-1" in by_uniq
    got = json.loads(ok(await asyncio.to_thread(mqadmin, "queryMsgByUniqueKey", "-i", uniq, "-t", "OpsT", "--json",
                                                ns=ns)))
    assert got["messages"][0]["msgId"] == uniq and got["messages"][0]["bodyText"] == "body-1"
    missing = await asyncio.to_thread(mqadmin, "queryMsgByUniqueKey", "-i", "0" * 32, "-t", "OpsT", ns=ns)
    assert missing.returncode == 1 and "not found" in missing.stderr


def test_namesrv_config_kv_and_order_conf(cl):
    ns = cl.namesrv_addr
    cfg = ok(mqadmin("getNamesrvConfig", ns=ns))
    assert cfg.startswith(f"============{ns}============\n")
    assert re.search(r"^orderMessageEnable {32}=  false$", cfg, re.M)
    out = ok(mqadmin("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true", ns=ns))
    assert out == f"update name server config success![{ns}]\norderMessageEnable : true\n"
    assert js("getNamesrvConfig", ns=ns)[ns]["orderMessageEnable"] == "true"
    refused = mqadmin("updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/elsewhere", ns=ns)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1

    assert ok(mqadmin("updateKvConfig", "-s", "OPS_NS", "-k", "k1", "-v", "v1", ns=ns)) == \
        "update kv config in namespace success.\n"
    assert ok(mqadmin("deleteKvConfig", "-s", "OPS_NS", "-k", "k1", ns=ns)) == "delete kv config from namespace success.\n"

    assert "update orderConf success. topic=[OpsT], orderConf=[brokera:2;brokerb:2]" in ok(
        mqadmin("updateOrderConf", "-t", "OpsT", "-m", "put", "-v", "brokera:2;brokerb:2", ns=ns))
    assert js("updateOrderConf", "-t", "OpsT", "-m", "get", ns=ns)["orderConf"] == "brokera:2;brokerb:2"
    ok(mqadmin("updateOrderConf", "-t", "OpsT", "-m", "delete", ns=ns))
    assert js("updateOrderConf", "-t", "OpsT", "-m", "get", ns=ns)["orderConf"] is None
    bad = mqadmin("updateOrderConf", "-t", "OpsT", "-m", "put", "-v", "brokera", ns=ns)
    assert bad.returncode == 2 and "bad orderConf" in bad.stderr


def test_maintenance_stats_and_round_trips(cl):
    ns = cl.namesrv_addr
    assert ok(mqadmin("cleanExpiredCQ", "-c", "TestCluster", ns=ns)) == "success\n"
    assert ok(mqadmin("deleteExpiredCommitLog", "-b", cl.brokers[1].addr, ns=ns)) == "success\n"
    status = ok(mqadmin("sendMsgStatus", "-b", "brokerb", "-c", "3", ns=ns)).splitlines()
    assert len(status) == 3 and all(re.match(r"rt:\d+ms, SendResult=SendResult \[sendStatus=SEND_OK, ", s)
                                    for s in status)
    rt = ok(mqadmin("checkMsgSendRT", "-t", "OpsT", "-a", "4", "-s", "16", ns=ns)).splitlines()
    assert rt[0] == f"{'#Broker Name':<32s}  {'#QID':<4s}  {'#Send Result':<20s}    #RT"
    assert len(rt) == 6 and all(re.match(r"broker[ab] +\d +true +\d+$", r) for r in rt[1:5])
    assert re.fullmatch(r"Avg RT: \d+\.\d\d", rt[5])
    crt = ok(mqadmin("clusterRT", "-a", "3", ns=ns)).splitlines()
    assert crt[0].startswith("#Cluster Name             #Broker Name              #RT   #successCount")
    assert [ln.split()[:2] for ln in crt[1:]] == [["TestCluster", "brokera"], ["TestCluster", "brokerb"]]
    assert all(ln.split()[3:] == ["3", "0"] for ln in crt[1:])
    stats = ok(mqadmin("statsAll", "-t", "OpsT", ns=ns)).splitlines()
    assert stats[0].split() == ["#Topic", "#Consumer", "Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour",
                                "#OutMsg24Hour"]
    assert stats[1].startswith("OpsT ") and stats[1].rstrip().endswith("NO_CONSUMER")
    alloc = json.loads(ok(mqadmin("allocateMQ", "-t", "OpsT", "-i", "10.0.0.1,10.0.0.2", ns=ns)))
    assert [len(v) for v in alloc["result"].values()] == [2, 2]
    assert {(q["brokerName"], q["queueId"]) for v in alloc["result"].values() for q in v} == \
        {("brokera", 0), ("brokera", 1), ("brokerb", 0), ("brokerb", 1)}


async def test_group_commands_with_a_live_consumer(cl):
    ns = cl.namesrv_addr
    topic, group = "OpsT", "OpsGroup"
    got = []

    async def listener(msgs, ctx):
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = PushConsumer(group, ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    c.subscribe(topic, "*")
    c.register_message_listener(listener)
    async with Producer("OpsGroupProducer", ns) as prod, c:
        for i in range(6):
            await prod.send(Message(topic, b"g%d" % i))

        async def caught_up():
            p = json.loads(ok(await asyncio.to_thread(mqadmin, "consumerProgress", "-g", group, "-t", topic, "--json",
                                                      ns=ns)))
            return p["diffTotal"] == 0 and len(p["topics"]) == 4 and p

        progress = await async_wait_until(caught_up, 30)
        assert sum(t["consumerOffset"] for t in progress["topics"]) >= 6

        stats = ok(await asyncio.to_thread(mqadmin, "brokerConsumeStats", "-b", cl.brokers[0].addr, ns=ns))
        head = stats.splitlines()[0]
        assert head.split() == ["#Topic", "#Group", "#Broker", "Name", "#QID", "#Broker", "Offset", "#Consumer",
                                "Offset", "#Diff", "#LastTime"]
        assert any(ln.startswith(topic + " ") and f" {group} " in ln for ln in stats.splitlines())
        assert re.search(r"^Diff Total: \d+$", stats, re.M)

        status = ok(await asyncio.to_thread(mqadmin, "consumerStatus", "-g", group, ns=ns))
        assert re.search(rf"^001  {re.escape(c.client_id)}", status, re.M)
        assert "Same subscription in the same group of consumer" in status and "Rebalance OK" in status
        one = json.loads(ok(await asyncio.to_thread(mqadmin, "consumerStatus", "-g", group, "--json", ns=ns)))
        assert list(one["clients"]) == [c.client_id]

        cfg = ok(await asyncio.to_thread(mqadmin, "getConsumerConfig", "-g", group, ns=ns))
        assert cfg.count("============Master: ") == 2 and re.search(r"^groupName +=  OpsGroup$", cfg, re.M)

        clone = ok(await asyncio.to_thread(mqadmin, "cloneGroupOffset", "-s", group, "-d", "OpsGroupCopy", "-t", topic,
                                           ns=ns))
        assert clone.strip() == f"clone group offset success. srcGroup[{group}], destGroup=OpsGroupCopy, topic[{topic}]"
        copy = json.loads(ok(await asyncio.to_thread(mqadmin, "consumerProgress", "-g", "OpsGroupCopy", "-t", topic,
                                                     "--json", ns=ns)))
        assert sorted(t["consumerOffset"] for t in copy["topics"]) == sorted(
            t["consumerOffset"] for t in progress["topics"])

        # reset by the Java tool's time format, --json: every queue back to the first message after it
        ago = (datetime.datetime.now() - datetime.timedelta(hours=1)).strftime("%Y-%m-%d#%H:%M:%S:000")
        reset = json.loads(ok(await asyncio.to_thread(mqadmin, "resetOffsetByTime", "-g", group, "-t", topic, "-s",
                                                      ago, "--json", ns=ns)))
        assert len(reset["offsets"]) == 4 and reset["timestamp"] > 0
        assert all(o["offset"] == 0 for o in reset["offsets"])
        bad = await asyncio.to_thread(mqadmin, "resetOffsetByTime", "-g", group, "-t", topic, "-s", "2024/01/01",
                                      ns=ns)
        assert bad.returncode == 2 and "yyyy-MM-dd#HH:mm:ss:SSS" in bad.stderr
        # skipping moves every queue of the topic to its end (max offset)
        maxes = {(s["brokerName"], s["queueId"]): s["maxOffset"] for s in js("topicStatus", "-t", topic, ns=ns)}
        skip = ok(await asyncio.to_thread(mqadmin, "skipAccumulatedMessage", "-g", group, "-t", topic, ns=ns))
        lines = skip.splitlines()
        assert lines[0] == f"{'#brokerName':<40s}  {'#queueId':<40s}  {'#offset':<40s}" and len(lines) == 5
        assert {(ln.split()[0], int(ln.split()[1])): int(ln.split()[2]) for ln in lines[1:]} == maxes


def test_json_flag_and_bad_options(cl):
    ns = cl.namesrv_addr
    status = js("topicStatus", "-t", "OpsT", ns=ns)
    assert sorted((s["brokerName"], s["queueId"]) for s in status) == [("brokera", 0), ("brokera", 1), ("brokerb", 0),
                                                                      ("brokerb", 1)]
    assert set(status[0]) == {"brokerName", "queueId", "minOffset", "maxOffset", "lastUpdateTimestamp"}
    cluster = js("clusterList", ns=ns)
    assert sorted(b["brokerName"] for b in cluster["brokers"]) == ["brokera", "brokerb"]
    assert all(b["role"] == "MASTER" and b["version"] for b in cluster["brokers"])
    topics = js("topicList", ns=ns)
    assert next(t for t in topics["topics"] if t["topic"] == "OpsT")["writeQueueNums"] == 4
    p = mqadmin("producer", "-b", cl.brokers[0].addr, "--json", ns=ns)
    assert p.returncode == 2 and "--json is not supported" in p.stderr
    p = mqadmin("printMsgByQueue", "-t", "OpsT", "-a", "brokera", ns=ns)
    assert p.returncode == 2 and "-i" in p.stderr
    p = mqadmin("printMsg", "-t", "OpsT", "-b", "yesterday", ns=ns)
    assert p.returncode == 1 and "bad beginTimestamp 'yesterday'" in p.stderr
    p = mqadmin("checkMsgSendRT", "-t", "OpsT", "-a", "0", ns=ns)
    assert p.returncode == 2 and "amount must be between" in p.stderr

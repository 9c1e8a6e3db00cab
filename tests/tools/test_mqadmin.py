"""bin/mqadmin and bin/mqbench as processes against a real NameServer and brokers."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess

import pytest

from client import ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from tests.client.cluster import Cluster
from tests.support import BIN, ROOT, async_wait_until


@pytest.fixture(scope="module")
def cl(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("tools"), brokers=2)
    yield c
    c.stop()


def mqadmin(*args: str, ns: str | None = None, env: dict | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    full_env.update(env or {})
    cmd = [str(BIN / "mqadmin"), *args] + (["-n", ns] if ns else [])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=str(ROOT))


def ok(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 0, f"rc={p.returncode}\nstdout:{p.stdout}\nstderr:{p.stderr}"
    return p.stdout


def test_topic_lifecycle(cl):
    ns = cl.namesrv_addr
    out = ok(mqadmin("updateTopic", "-t", "AdmTopic", "-c", "TestCluster", "-r", "3", "-w", "3", ns=ns))
    assert out.count("create topic to") == 2
    b = cl.brokers[0]
    assert "create topic to " + b.addr in ok(mqadmin("updateTopic", "-t", "AdmTopicB", "-b", b.addr, ns=ns))

    def routed():
        p = mqadmin("topicRoute", "-t", "AdmTopic", ns=ns)
        return p.returncode == 0 and p.stdout.count('"brokerName"') >= 4

    asyncio.run(async_wait_until(lambda: routed(), 15))
    assert "AdmTopic" in ok(mqadmin("topicList", ns=ns)).split()
    status = ok(mqadmin("topicStatus", "-t", "AdmTopic", ns=ns))
    lines = status.strip().splitlines()
    assert lines[0].startswith("#Broker Name") and len(lines) == 1 + 6
    assert re.match(r"brokera\s+0\s+0\s+0\s+", lines[1])
    listed = ok(mqadmin("topicRoute", "-t", "AdmTopic", "-l", ns=ns))
    assert "brokerb" in listed and "TestCluster" in listed

    ok(mqadmin("deleteTopic", "-t", "AdmTopic", "-c", "TestCluster", ns=ns))
    gone = mqadmin("topicRoute", "-t", "AdmTopic", ns=ns)
    assert gone.returncode == 1 and "command failed" in gone.stderr and len(gone.stderr.strip().splitlines()) == 1


def test_cluster_broker_and_config_commands(cl):
    ns = cl.namesrv_addr
    out = ok(mqadmin("clusterList", ns=ns))
    assert "#Cluster Name" in out and out.count("TestCluster") == 2
    st = ok(mqadmin("brokerStatus", "-b", cl.brokers[0].addr, ns=ns))
    assert re.search(r"^brokerVersionDesc\s*: ", st, re.M)
    cfg = ok(mqadmin("getBrokerConfig", "-b", cl.brokers[1].addr, ns=ns))
    assert f"============{cl.brokers[1].addr}============" in cfg and re.search(r"^brokerName\s+=  brokerb$", cfg, re.M)
    ok(mqadmin("updateBrokerConfig", "-b", cl.brokers[1].addr, "-k", "consumerManageThreadPoolNums", "-v", "12", ns=ns))
    cfg = ok(mqadmin("getBrokerConfig", "-b", cl.brokers[1].addr, ns=ns))
    assert re.search(r"^consumerManageThreadPoolNums\s+=  12$", cfg, re.M)
    out = ok(mqadmin("updateSubGroup", "-g", "AdmGroup", "-c", "TestCluster", "-r", "3", ns=ns))
    assert out.count("create subscription group to") == 2 and '"retryMaxTimes":3' in out
    ok(mqadmin("deleteSubGroup", "-g", "AdmGroup", "-b", cl.brokers[0].addr, ns=ns))


def test_send_query_and_consume_commands(cl):
    ns = cl.namesrv_addr
    ok(mqadmin("updateTopic", "-t", "AdmMsg", "-b", cl.brokers[0].addr, "-r", "1", "-w", "1", ns=ns))
    out = ok(mqadmin("sendMessage", "-t", "AdmMsg", "-p", "hello admin", "-k", "akey", "-c", "atag", ns=ns))
    row = out.strip().splitlines()[-1].split()
    assert row[0] == "brokera" and row[2] == "SEND_OK"
    uniq = row[3]
    by_key = ok(mqadmin("queryMsgByKey", "-t", "AdmMsg", "-k", "akey", ns=ns))
    assert uniq in by_key
    by_offset = ok(mqadmin("queryMsgByOffset", "-t", "AdmMsg", "-b", "brokera", "-i", "0", "-o", "0", ns=ns))
    assert "hello admin" in by_offset and "[atag]" in by_offset
    offset_id = re.search(r"^OffsetID:\s+(\S+)", by_offset, re.M).group(1)
    by_id = ok(mqadmin("queryMsgById", "-i", offset_id, ns=ns))
    assert "hello admin" in by_id and uniq in by_id
    by_uniq = ok(mqadmin("queryMsgById", "-i", uniq, "-t", "AdmMsg", ns=ns))
    assert "hello admin" in by_uniq
    consumed = ok(mqadmin("consumeMessage", "-t", "AdmMsg", "-c", "5", ns=ns))
    assert "BODY: hello admin" in consumed and "Consume ok" in consumed
    missing = mqadmin("queryMsgByOffset", "-t", "AdmMsg", "-b", "brokera", "-i", "0", "-o", "99", ns=ns)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1


async def test_consumer_commands_and_reset_offset(cl):
    ns = cl.namesrv_addr
    topic, group = "AdmConsume", "AdmConsumerGroup"
    p = await asyncio.to_thread(mqadmin, "updateTopic", "-t", topic, "-c", "TestCluster", "-r", "2", "-w", "2", ns=ns)
    ok(p)
    got = []

    async def listener(msgs, ctx):
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    async with Producer("AdmProducerGroup", ns) as prod:
        await async_wait_until(lambda: _send(prod, topic), 15)
        for i in range(9):
            await prod.send(Message(topic, b"c%d" % i))
        c = PushConsumer(group, ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        c.subscribe(topic, "*")
        c.register_message_listener(listener)
        async with c:
            await async_wait_until(lambda: len(got) >= 10, 20)
            conn = ok(await asyncio.to_thread(mqadmin, "consumerConnection", "-g", group, ns=ns))
            assert c.client_id in conn and "PYTHON" in conn and f"Topic: {topic}" in conn
            assert "MessageModel: CLUSTERING" in conn
            pc = ok(await asyncio.to_thread(mqadmin, "producerConnection", "-g", "AdmProducerGroup", "-t", topic, ns=ns))
            assert prod.client_id in pc

            async def progress_done():
                out = ok(await asyncio.to_thread(mqadmin, "consumerProgress", "-g", group, ns=ns))
                return "Diff Total: 0" in out and len(re.findall(rf"^{topic} ", out, re.M)) == 4 and out

            await async_wait_until(progress_done, 15)
            every = ok(await asyncio.to_thread(mqadmin, "consumerProgress", ns=ns))
            row = next(line for line in every.splitlines() if line.startswith(group + " "))
            assert row.split()[1:5] == ["1", "407", "PUSH", "CLUSTERING"]
            # rewind to the beginning: the online consumer gets RESET_CONSUMER_CLIENT_OFFSET and re-reads
            before = len(got)
            reset = ok(await asyncio.to_thread(mqadmin, "resetOffsetByTime", "-g", group, "-t", topic, "-s", "0",
                                               ns=ns))
            assert "#brokerName" in reset
            await async_wait_until(lambda: len(got) >= before + 10, 20, what="re-consumed after reset")


async def _send(prod, topic):
    try:
        await prod.send(Message(topic, b"first"))
        return True
    except Exception:
        return False


def test_failures_exit_nonzero_with_one_line(cl):
    p = mqadmin("topicList")
    assert p.returncode == 2 and "NAMESRV_ADDR" in p.stderr
    p = mqadmin("topicList", env={"NAMESRV_ADDR": cl.namesrv_addr})
    assert p.returncode == 0
    p = mqadmin("topicStatus", ns=cl.namesrv_addr)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    p = mqadmin("updateTopic", "-t", "bad topic!", "-c", "TestCluster", ns=cl.namesrv_addr)
    assert p.returncode == 2 and "The specified topic[bad topic!] contains illegal characters" in p.stderr  # Validators
    p = mqadmin("updateTopic", "-t", "T1", "-c", "NoSuchCluster", ns=cl.namesrv_addr)
    assert p.returncode == 1 and "NoSuchCluster" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = mqadmin("topicList", ns="127.0.0.1:1")
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    p = mqadmin("noSuchCommand", ns=cl.namesrv_addr)
    assert p.returncode == 2


def test_mqbench_short_runs(cl):
    ns = cl.namesrv_addr
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    prod = subprocess.run([str(BIN / "mqbench"), "producer", "-n", ns, "-t", "BenchTopic", "-w", "4", "-s", "256",
                           "-d", "2.5", "-P", "2", "-k", "-l", "3"],
                          capture_output=True, text=True, timeout=60, env=env, cwd=str(ROOT))
    assert prod.returncode == 0, prod.stdout + prod.stderr
    sent = re.search(r"Summary: Sent: (\d+) Send Failed: 0 Send TPS: \d+", prod.stdout)
    assert sent and int(sent.group(1)) > 0
    assert re.search(r"Send TPS: \d+ Max RT\(ms\): \d+ Average RT\(ms\): +[\d.]+ Send Failed: \d+", prod.stdout)
    cons = subprocess.run([str(BIN / "mqbench"), "consumer", "-n", ns, "-t", "BenchTopic", "-f", "-q", sent.group(1),
                           "-d", "20", "-P", "1", "-g", "bench_c_test"],
                          capture_output=True, text=True, timeout=60, env=env, cwd=str(ROOT))
    assert cons.returncode == 0, cons.stdout + cons.stderr
    m = re.search(r"Summary: Consumed: (\d+) TPS: \d+", cons.stdout)
    assert m and int(m.group(1)) >= int(sent.group(1))

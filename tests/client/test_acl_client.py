"""The Python client and mqadmin against an ACL broker (real NameServer + broker processes): signed
producers and consumers work where the account allows, fail where it does not; mqadmin signs with
tools.yml or --accessKey/--secretKey and its ACL commands change the broker's plain_acl.yml."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap

import pytest
import yaml

from client import (
    ClientConfig,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    Message,
    MQBrokerError,
    Producer,
    PushConsumer,
)
from client.acl import SessionCredentials
from client.admin import MQAdmin
from remoting.body.topic_config import TopicConfig
from tests.client.cluster import Cluster
from tests.client.conftest import unique, wait_for
from tests.support import ROOT

ACL = textwrap.dedent("""\
    accounts:
      - accessKey: producer1
        secretKey: prodsecret
        defaultTopicPerm: DENY
        defaultGroupPerm: DENY
        topicPerms: [aclTopic=PUB]
      - accessKey: consumer1
        secretKey: conssecret
        defaultTopicPerm: DENY
        defaultGroupPerm: SUB
        topicPerms: [aclTopic=SUB]
      - accessKey: adminuser
        secretKey: adminsecret
        admin: true
    """)

PRODUCER = SessionCredentials("producer1", "prodsecret")
CONSUMER = SessionCredentials("consumer1", "conssecret")
ADMIN = SessionCredentials("adminuser", "adminsecret")


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("aclc")
    home = root / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(ACL)
    old = os.environ.get("ROCKETMQ_HOME")
    os.environ["ROCKETMQ_HOME"] = str(home)  # the broker processes inherit it
    try:
        c = Cluster(root, brokers=1, aclEnable="true", rocketmqHome=str(home))
    finally:
        if old is None:
            os.environ.pop("ROCKETMQ_HOME", None)
        else:
            os.environ["ROCKETMQ_HOME"] = old
    c.home = home
    yield c
    c.stop()


async def test_signed_producer_and_consumer(acl_cluster):
    ns, broker = acl_cluster.namesrv_addr, acl_cluster.brokers[0]
    async with MQAdmin(ns, credentials=ADMIN) as admin:
        await admin.create_topic(broker.addr, TopicConfig(topicName="aclTopic", readQueueNums=2, writeQueueNums=2))
        await admin.create_topic(broker.addr, TopicConfig(topicName="otherTopic", readQueueNums=2, writeQueueNums=2))
        await wait_for(lambda: _routed(admin, "aclTopic"), 10)
        await wait_for(lambda: _routed(admin, "otherTopic"), 10)
    # unsigned admin: refused (the NameServer does not check; the broker does)
    async with MQAdmin(ns) as admin:
        with pytest.raises(MQBrokerError, match="No accessKey is configured"):
            await admin.create_topic(broker.addr, TopicConfig(topicName="x1"))

    async with Producer(unique("PG"), config=ClientConfig(namesrv_addr=ns, credentials=PRODUCER),
                        retry_times_when_send_failed=0) as p:
        sent = [(await p.send(Message("aclTopic", f"acl{i}".encode()))).msg_id for i in range(5)]
        with pytest.raises(MQBrokerError, match="No default permission for topic:otherTopic"):
            await p.send(Message("otherTopic", b"nope"))
    async with Producer(unique("PG"), config=ClientConfig(namesrv_addr=ns, credentials=SessionCredentials(
            "producer1", "wrongsecret")), retry_times_when_send_failed=0) as p:
        with pytest.raises(MQBrokerError, match="Check signature failed"):
            await p.send(Message("aclTopic", b"nope"))

    got = []

    async def listener(msgs, ctx):
        got.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = PushConsumer(unique("CG"), config=ClientConfig(namesrv_addr=ns, credentials=CONSUMER),
                     consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    c.subscribe("aclTopic")
    c.register_message_listener(listener)
    async with c:
        await wait_for(lambda: len(got) >= 5, 20, "signed consumer receives")
    assert sorted(got) == sorted(f"acl{i}".encode() for i in range(5)) and len(sent) == 5


async def _routed(admin, topic):
    try:
        return bool((await admin.topic_route(topic)).queueDatas)
    except Exception:
        return False


def _mqadmin(*args, home=None):
    env = dict(os.environ)
    env.pop("ROCKETMQ_HOME", None)
    if home is not None:
        env["ROCKETMQ_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "tools.mqadmin", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


async def test_mqadmin_acl_commands(acl_cluster, tmp_path):
    ns, b = acl_cluster.namesrv_addr, acl_cluster.brokers[0]
    acl_file = acl_cluster.home / "conf" / "plain_acl.yml"
    r = await asyncio.to_thread(_mqadmin, "getAclConfig", "-n", ns, "-b", b.addr)
    assert r.returncode == 1 and "No accessKey is configured" in r.stderr
    # credentials on the command line
    r = await asyncio.to_thread(_mqadmin, "updateAclConfig", "-n", ns, "-b", b.addr, "--accessKey", "adminuser",
                                "--secretKey", "adminsecret", "-a", "tooluser1", "-s", "toolsecret",
                                "-t", "t1=PUB,t2=SUB", "-i", "SUB")
    assert r.returncode == 0, r.stderr
    acct = next(a for a in yaml.safe_load(acl_file.read_text())["accounts"] if a["accessKey"] == "tooluser1")
    assert acct["topicPerms"] == ["t1=PUB", "t2=SUB"] and acct["defaultTopicPerm"] == "SUB"
    # credentials from $ROCKETMQ_HOME/conf/tools.yml
    tool_home = tmp_path / "toolhome"
    (tool_home / "conf").mkdir(parents=True)
    (tool_home / "conf" / "tools.yml").write_text("accessKey: tooluser1\nsecretKey: toolsecret\n")
    r = await asyncio.to_thread(_mqadmin, "getAclConfig", "-n", ns, "-c", "TestCluster", home=tool_home)
    assert r.returncode == 0, r.stderr
    assert "tooluser1" in r.stdout and "producer1" in r.stdout
    r = await asyncio.to_thread(_mqadmin, "clusterAclConfigVersion", "-n", ns, "-b", b.addr, home=tool_home)
    assert r.returncode == 0 and str(acl_file) in r.stdout, r.stdout + r.stderr
    r = await asyncio.to_thread(_mqadmin, "updateGlobalWhiteAddr", "-n", ns, "-b", b.addr, "-g", "10.1.1.*",
                                home=tool_home)
    assert r.returncode == 0, r.stderr
    assert yaml.safe_load(acl_file.read_text())["globalWhiteRemoteAddresses"] == ["10.1.1.*"]
    # an admin-only code from a non-admin account
    r = await asyncio.to_thread(_mqadmin, "updateTopic", "-n", ns, "-b", b.addr, "-t", "nonAdminTopic",
                                home=tool_home)
    assert r.returncode == 1 and "Need admin permission for request code=17" in r.stderr
    r = await asyncio.to_thread(_mqadmin, "deleteAclConfig", "-n", ns, "-b", b.addr, "-a", "tooluser1",
                                home=tool_home)
    assert r.returncode == 0, r.stderr
    assert "tooluser1" not in acl_file.read_text()

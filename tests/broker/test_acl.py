"""ACL 1.0 on a real broker process (aclEnable=true, plain_acl.yml written here): refusals with 4.9.7's
code and remark, white addresses, admin-only codes, per-resource permissions and defaults, hot reload,
the admin codes 50-54, and the stored messages intact after all of it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from client.acl import AclClientRPCHook, SessionCredentials
from common.acl_signer import (
    SKIP_BROKER,
    cal_signature,
    combine_request_content,
    request_signature,
    verify_signature,
)
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.codes import ResponseCode as RC
from remoting.command import RemotingCommand
from tests.broker.helpers import BrokerProc, messages, pull_header, send_header_v2
from tests.support import Proc, async_wait_until

EXC = "org.apache.rocketmq.acl.common.AclException: "

PLAIN_ACL = textwrap.dedent("""\
    globalWhiteRemoteAddresses:
      - 10.10.103.*
    accounts:
      - accessKey: RocketMQ
        secretKey: "12345678"
        admin: false
        defaultTopicPerm: DENY
        defaultGroupPerm: SUB
        topicPerms:
          - topicA=DENY
          - topicB=PUB|SUB
          - topicC=SUB
        groupPerms:
          - groupA=DENY
          - groupB=PUB|SUB
          - groupC=SUB
      - accessKey: rocketmq2
        secretKey: "12345678"
        admin: true
      - accessKey: whiteuser
        secretKey: "12345678"
        whiteRemoteAddress: 127.0.0.1
    """)

USER = SessionCredentials("RocketMQ", "12345678")
ADMIN = SessionCredentials("rocketmq2", "12345678")


def start_acl_broker(root: Path, acl_text: str = PLAIN_ACL) -> tuple[BrokerProc, Path]:
    home = root / "home"
    (home / "conf").mkdir(parents=True)
    acl_file = home / "conf" / "plain_acl.yml"
    acl_file.write_text(acl_text)

    def start(label, args):
        return Proc(label, args, root, env={"ROCKETMQ_HOME": str(home)})

    b = BrokerProc(root, "aclbroker", start_proc=start, aclEnable="true", rocketmqHome=str(home))
    return b.start(), acl_file


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory):
    b, acl_file = start_acl_broker(tmp_path_factory.mktemp("acl"))
    yield b, acl_file
    b.stop()


@pytest.fixture
async def client():
    c = RemotingClient()
    yield c
    await c.close()


async def invoke(client, addr, code, header=None, body=None, creds: SessionCredentials | None = None):
    cmd = RemotingCommand.request(code, header, body)
    if creds is not None:
        AclClientRPCHook(creds).do_before_request(addr, cmd)
    return await client.invoke(addr, cmd, 5.0)


async def send(client, addr, topic, body=b"x", creds=USER, group="pg"):
    return await invoke(client, addr, RequestCode.SEND_MESSAGE_V2, send_header_v2(topic, group=group), body, creds)


async def pull(client, addr, group, topic, creds=USER, offset=0):
    return await invoke(client, addr, RequestCode.PULL_MESSAGE, pull_header(group, topic, 0, offset), None, creds)


def refused(r, reason: str) -> None:
    assert (r.code, r.remark) == (RC.SYSTEM_ERROR, EXC + reason), (r.code, r.remark)


def test_signature_content_matches_the_spec_example():
    content = combine_request_content({"topic": "T", "queueId": "0", "AccessKey": "RocketMQ"}, b"B")
    assert content == b"RocketMQ0TB"
    # HmacSHA1 + Base64: a fixed vector, so a change of the algorithm shows up
    assert cal_signature(b"RocketMQ0TB", "12345678") == cal_signature(content, "12345678")
    assert len(cal_signature(content, "12345678")) == 28


def _reference_content(ext: dict, body: bytes, skip: frozenset) -> bytes:
    """AclUtils.combineRequestContent written plainly: keys in Java (UTF-16) order, null as "null"."""
    keys = sorted((k for k in ext if k not in skip), key=lambda k: k.encode("utf-16-be", "surrogatepass"))
    text = "".join("null" if ext[k] is None else ext[k] for k in keys)
    return text.encode("utf-8", "surrogatepass") + body


@pytest.mark.parametrize("ext", [
    {},
    {"AccessKey": "RocketMQ"},
    {"Signature": "x", "AccessKey": "RocketMQ"},
    {"b": "T", "a": "pg", "AccessKey": "RocketMQ", "Signature": "old", "_UNIQUE_KEY_QUERY": "true"},
    {"topic": None, "queueId": "0", "AccessKey": "RocketMQ"},
    {"\U0001F600k": "v1", "\uff5ek": "v2", "zk": "caf\u00e9", "ak": "\ud800"},  # order by UTF-16 units
])
@pytest.mark.parametrize("skip", [frozenset({"Signature"}), SKIP_BROKER])
def test_signed_content_for_every_header_shape(ext, skip):
    body = b"\x00body\xff"
    for _ in range(2):  # the second time through the remembered key order
        assert combine_request_content(ext, body, skip) == _reference_content(ext, body, skip)
        want = cal_signature(_reference_content(ext, body, skip), "12345678")
        assert request_signature(ext, body, "12345678", skip) == want
        assert request_signature(ext, memoryview(body), "12345678", skip) == want
        assert verify_signature(ext, body, "12345678", want, skip)
        assert not verify_signature(ext, body + b"!", "12345678", want, skip)
        assert not verify_signature(ext, body, "12345679", want, skip)
        assert not verify_signature(ext, body, "12345678", None, skip)
        assert not verify_signature(ext, body, "12345678", want[:-1] + "\u00e9", skip)


async def test_unsigned_wrong_secret_unknown_key(acl_broker, client):
    b, _ = acl_broker
    refused(await send(client, b.addr, "topicB", creds=None), "No accessKey is configured")
    refused(await send(client, b.addr, "topicB", creds=SessionCredentials("RocketMQ", "wrongsecret")),
            "Check signature failed for accessKey=RocketMQ")
    refused(await send(client, b.addr, "topicB", creds=SessionCredentials("nobody12", "12345678")),
            "No acl config for nobody12")
    # a signed request whose content changed on the way is refused too
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, send_header_v2("topicB"), b"original")
    AclClientRPCHook(USER).do_before_request(b.addr, cmd)
    cmd.body = b"tampered"
    refused(await client.invoke(b.addr, cmd, 5.0), "Check signature failed for accessKey=RocketMQ")


async def test_topic_and_group_permissions_and_defaults(acl_broker, client):
    b, _ = acl_broker
    assert (await send(client, b.addr, "topicB")).code == RC.SUCCESS  # PUB|SUB
    refused(await send(client, b.addr, "topicA"), "No default permission for topic:topicA")  # DENY
    refused(await send(client, b.addr, "topicC"), "No default permission for topic:topicC")  # SUB only
    refused(await send(client, b.addr, "topicZ"), "No default permission for topic:topicZ")  # default DENY
    # pull needs topic SUB and group SUB
    assert (await pull(client, b.addr, "groupB", "topicB")).code in (RC.SUCCESS, RC.PULL_NOT_FOUND,
                                                                      RC.PULL_OFFSET_MOVED)
    refused(await pull(client, b.addr, "groupA", "topicB"), "No default permission for group:groupA")
    assert (await pull(client, b.addr, "groupZ", "topicC")).code != RC.SYSTEM_ERROR  # group default SUB
    refused(await pull(client, b.addr, "groupB", "topicA"), "No default permission for topic:topicA")
    # heartbeat of a consumer: its group and subscribed topics need SUB
    hb = {"clientID": "c1", "producerDataSet": [], "consumerDataSet": [{
        "groupName": "groupB", "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
        "subscriptionDataSet": [{"topic": "topicA", "subString": "*", "tagsSet": [], "codeSet": [],
                                 "subVersion": 1, "expressionType": "TAG", "classFilterMode": False}]}]}
    body = json.dumps(hb).encode()
    refused(await invoke(client, b.addr, RequestCode.HEART_BEAT, None, body, USER),
            "No default permission for topic:topicA")
    # codes without resources only need a valid signature
    r = await invoke(client, b.addr, RequestCode.GET_MAX_OFFSET, {"topic": "topicA", "queueId": 0}, None, USER)
    assert r.code == RC.SUCCESS
    # message trace data may be written with any valid account
    assert (await send(client, b.addr, "RMQ_SYS_TRACE_TOPIC")).code != RC.SYSTEM_ERROR


async def test_admin_only_codes_and_white_address(acl_broker, client):
    b, _ = acl_broker
    topic_header = {"topic": "adminMade", "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4,
                    "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False}
    refused(await invoke(client, b.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header, None, USER),
            "Need admin permission for request code=17, but accessKey=RocketMQ is not")
    refused(await invoke(client, b.addr, RequestCode.UPDATE_BROKER_CONFIG, None, b"fileReservedTime=1\n", USER),
            "Need admin permission for request code=25, but accessKey=RocketMQ is not")
    assert (await invoke(client, b.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header, None, ADMIN)).code \
        == RC.SUCCESS
    # an account whose whiteRemoteAddress matches skips signature and permission checks
    white = SessionCredentials("whiteuser", "not-its-secret")
    assert (await send(client, b.addr, "topicA", creds=white)).code == RC.SUCCESS
    # a frame without extFields at all can only pass by a white address
    r = await client.invoke(b.addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 5.0)
    refused(r, "No accessKey is configured")


async def test_admin_codes_hot_reload_and_stored_messages(tmp_path, client):
    b, acl_file = start_acl_broker(tmp_path)
    try:
        sent = 0
        for i in range(3):
            assert (await send(client, b.addr, "topicB", f"m{i}".encode())).code == RC.SUCCESS
            sent += 1
        # 52: versions; 54: the accounts as configured
        r = await invoke(client, b.addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO, None, None, USER)
        assert r.code == RC.SUCCESS and r.ext_fields["brokerName"] == "aclbroker"
        v0 = json.loads(r.ext_fields["version"])["counter"]
        assert str(acl_file) in json.loads(r.ext_fields["allAclFileVersion"])
        r = await invoke(client, b.addr, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, None, None, USER)
        conf = json.loads(r.body)
        assert conf["globalWhiteAddrs"] == ["10.10.103.*"]
        assert [a["accessKey"] for a in conf["plainAccessConfigs"]] == ["RocketMQ", "rocketmq2", "whiteuser"]
        # 50: a new account, in force at once, written with dataVersion bumped
        new = {"accessKey": "newuser1", "secretKey": "87654321", "admin": "false", "defaultTopicPerm": "PUB",
               "defaultGroupPerm": "DENY", "topicPerms": "topicA=DENY,topicQ=PUB|SUB", "groupPerms": "g1=SUB"}
        r = await invoke(client, b.addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, new, None, USER)
        assert (r.code, r.remark) == (RC.SUCCESS, None)
        data = yaml.safe_load(acl_file.read_text())
        assert data["dataVersion"][0]["counter"] == v0 + 1
        acct = next(a for a in data["accounts"] if a["accessKey"] == "newuser1")
        assert acct["topicPerms"] == ["topicA=DENY", "topicQ=PUB|SUB"] and acct["groupPerms"] == ["g1=SUB"]
        nu = SessionCredentials("newuser1", "87654321")
        assert (await send(client, b.addr, "topicQ", creds=nu)).code == RC.SUCCESS
        refused(await send(client, b.addr, "topicA", creds=nu), "No default permission for topic:topicA")
        # a permission taken away is in force at once (sends to topicQ passed before: nothing stale is used)
        r = await invoke(client, b.addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
                         {**new, "topicPerms": "topicA=DENY,topicQ=SUB"}, None, USER)
        assert r.code == RC.SUCCESS
        refused(await send(client, b.addr, "topicQ", creds=nu), "No default permission for topic:topicQ")
        r = await invoke(client, b.addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, new, None, USER)
        assert r.code == RC.SUCCESS
        assert (await send(client, b.addr, "topicQ", creds=nu)).code == RC.SUCCESS
        # invalid updates answer 209 and change nothing
        before = acl_file.read_bytes()
        r = await invoke(client, b.addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
                         {"accessKey": "short", "secretKey": "87654321"}, None, USER)
        assert r.code == RC.UPDATE_AND_CREATE_ACL_CONFIG_FAILED and "length should longer than 6" in r.remark
        r = await invoke(client, b.addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
                         {**new, "whiteRemoteAddress": "not-an-address"}, None, USER)
        assert r.code == RC.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        assert acl_file.read_bytes() == before
        # 53: the file path comes from the wire: only a loaded ACL file is accepted
        outside = tmp_path / "elsewhere.yml"
        outside.write_text("x: 1\n")
        r = await invoke(client, b.addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                         {"globalWhiteAddrs": "127.0.0.1", "aclFileFullPath": str(outside)}, None, USER)
        assert r.code == RC.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED and outside.read_text() == "x: 1\n"
        r = await invoke(client, b.addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                         {"globalWhiteAddrs": "127.0.0.1", "aclFileFullPath": str(acl_file)}, None, USER)
        assert r.code == RC.SUCCESS
        assert (await send(client, b.addr, "topicA", creds=None)).code == RC.SUCCESS  # globally white now
        sent_a = 1
        r = await invoke(client, b.addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                         {"globalWhiteAddrs": "", "aclFileFullPath": ""}, None, ADMIN)
        assert r.code == RC.SUCCESS
        refused(await send(client, b.addr, "topicA", creds=None), "No accessKey is configured")
        # 51: delete
        r = await invoke(client, b.addr, RequestCode.DELETE_ACL_CONFIG, {"accessKey": "newuser1"}, None, USER)
        assert r.code == RC.SUCCESS
        refused(await send(client, b.addr, "topicQ", creds=nu), "No acl config for newuser1")
        r = await invoke(client, b.addr, RequestCode.DELETE_ACL_CONFIG, {"accessKey": "newuser1"}, None, USER)
        assert r.code == RC.DELETE_ACL_CONFIG_FAILED

        # hot reload: an edited file is in force within 5 s, no restart
        data = yaml.safe_load(acl_file.read_text())
        data["accounts"].append({"accessKey": "hotuser1", "secretKey": "hotsecret", "defaultTopicPerm": "PUB"})
        acl_file.write_text(yaml.safe_dump(data))
        hot = SessionCredentials("hotuser1", "hotsecret")

        async def hot_ok():
            return (await send(client, b.addr, "topicH", creds=hot)).code == RC.SUCCESS

        await async_wait_until(hot_ok, 5.0, what="hot-reloaded account accepted")
        sent_h = 1
        # a file that does not parse: the last good one stays in force, and the log says why
        acl_file.write_text("accounts: [this is: not: yaml\n")
        await async_wait_until(lambda: "keeping its last good content" in b.proc.output(), 5.0,
                               what="reload failure logged")
        assert (await send(client, b.addr, "topicH", creds=hot)).code == RC.SUCCESS
        sent_h += 1

        # everything accepted is stored, nothing refused reached the store
        admin_pulls = {}
        for topic in ("topicB", "topicA", "topicH", "topicQ"):
            r = await pull(client, b.addr, "adminGroup", topic, creds=ADMIN)
            admin_pulls[topic] = [m.body for m in messages(r)] if r.code == RC.SUCCESS else []
        assert admin_pulls["topicB"] == [f"m{i}".encode() for i in range(sent)]
        assert len(admin_pulls["topicA"]) == sent_a
        assert len(admin_pulls["topicH"]) == sent_h
        assert len(admin_pulls["topicQ"]) == 2
    finally:
        b.stop()


async def test_broken_acl_file_refuses_to_start(tmp_path):
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text("accounts:\n  - accessKey: short\n    secretKey: x\n")
    b = BrokerProc(tmp_path, "badacl", aclEnable="true", rocketmqHome=str(home),
                   start_proc=lambda label, args: Proc(label, args, tmp_path, env={"ROCKETMQ_HOME": str(home)}))
    with pytest.raises(AssertionError, match="length should longer than 6"):
        b.start()


async def test_security_switches_cannot_be_changed_over_the_wire(acl_broker, client):
    b, _ = acl_broker
    for body in (b"aclEnable=false\n", b"tls.server.mode=disabled\n", b"rocketmqHome=/tmp\n"):
        r = await invoke(client, b.addr, RequestCode.UPDATE_BROKER_CONFIG, None, body, ADMIN)
        assert r.code in (RC.NO_PERMISSION, RC.SYSTEM_ERROR), (body, r.code, r.remark)
    assert "aclEnable=true" in b.conf.read_text()
    refused(await send(client, b.addr, "topicB", creds=None), "No accessKey is configured")

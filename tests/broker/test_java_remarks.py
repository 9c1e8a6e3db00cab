"""Error remarks of the send, pull and send-back paths word for word as RocketMQ 4.9.7's.

Each assertion cites the Java class whose text it pins (rocketmq-all-4.9.7). Clients and
tools match on these texts (e.g. "[OVERLOAD]" / "[PC_SYNCHRONIZED]" prefixes, the FAQ suffix),
so they must not drift.
"""

from __future__ import annotations

import datetime
import re

from broker.processor.send_message_remarks import (
    disk_util,
    java_parse_int,
    java_topic_config_string,
    put_status_to_response,
)
from common.topic_validator import check_topic, validate_group, validate_topic
from common.util import time_millis_to_human_string2
from remoting.body.topic_config import TopicConfig, TopicFilterType
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from store.config import MessageStoreConfig
from tests.broker.helpers import call, pull, send
from tests.support import async_wait_until

# FAQUrl.suggestTodo(FAQUrl.*) in 4.9.7: every url is the FAQ page
FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
ILLEGAL_CHARS = "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"


# -- pure functions ------------------------------------------------------------------------------


def test_topic_validator_texts_and_order():
    # TopicValidator.validateTopic: blank, illegal characters, then length
    assert validate_topic("") == "The specified topic is blank."
    assert validate_topic("  ") == "The specified topic is blank."
    assert validate_topic("a b") == ILLEGAL_CHARS
    assert validate_topic("x" * 200 + "!") == ILLEGAL_CHARS  # characters are checked before the length
    assert validate_topic("x" * 128) == "The specified topic is longer than topic max length."
    assert validate_topic("x" * 127) is None and validate_topic("%RETRY%g|a-_9") is None
    # client side, Validators.checkTopic: blank, length, illegal characters (with the name)
    assert check_topic("") == "The specified topic is blank"
    assert check_topic("x" * 200 + "!") == "The specified topic is longer than topic max length 127."
    assert check_topic("a b") == "The specified topic[a b] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    assert check_topic("ok") is None
    # Validators.checkGroup
    assert validate_group(" ") == "the specified group is blank"
    assert validate_group("g" * 256) == "the specified group is longer than group max length 255."
    assert validate_group("g!") == "the specified group[g!] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    assert validate_group("g" * 255) is None


def test_put_status_remarks():
    # SendMessageProcessor.handlePutMessageResult
    illegal = ("the message is illegal, maybe msg body or properties length not matched. "
               "msg body length limit 4194304B, msg properties length limit 32KB.")
    assert put_status_to_response("MESSAGE_ILLEGAL", 4194304) == (ResponseCode.MESSAGE_ILLEGAL, illegal, False)
    assert put_status_to_response("PROPERTIES_SIZE_EXCEEDED", 4194304) == (ResponseCode.MESSAGE_ILLEGAL, illegal, False)
    assert put_status_to_response("CREATE_MAPEDFILE_FAILED", 1)[1] == "create mapped file failed, server is busy or broken."
    assert put_status_to_response("OS_PAGECACHE_BUSY", 1)[1] == "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
    assert put_status_to_response("UNKNOWN_ERROR", 1)[1] == "UNKNOWN_ERROR"
    assert put_status_to_response("SOMETHING_NEW", 1) == (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT", False)
    code, remark, stored = put_status_to_response("SERVICE_NOT_AVAILABLE", 1, "CL:  0.45 CQ:  0.45 INDEX:  0.45")
    assert (code, stored) == (ResponseCode.SERVICE_NOT_AVAILABLE, False)
    assert remark == ("service not available now. It may be caused by one of the following reasons: the broker's disk "
                      "is full [CL:  0.45 CQ:  0.45 INDEX:  0.45], messages are put to the slave, message store has "
                      "been shut down, etc.")
    assert put_status_to_response("FLUSH_DISK_TIMEOUT", 1) == (ResponseCode.FLUSH_DISK_TIMEOUT, None, True)


def test_disk_util_format(tmp_path):
    """diskUtil(): String.format("CL: %5.2f CQ: %5.2f INDEX: %5.2f") of used ratios (-1 where a dir is missing)."""

    cfg = MessageStoreConfig(storePathRootDir=str(tmp_path), storePathCommitLog="")
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "consumequeue").mkdir()
    text = disk_util(cfg)
    m = re.fullmatch(r"CL: ( \d\.\d\d) CQ: ( \d\.\d\d) INDEX: (-1\.00)", text)
    assert m, text
    assert 0 < float(m.group(1)) <= 1 and m.group(1) == m.group(2)  # same partition, same figure


def test_java_formats():
    # UtilAll.timeMillisToHumanString2 (local time)
    t = 1_700_000_123_045
    d = datetime.datetime.fromtimestamp(t / 1000)
    assert time_millis_to_human_string2(t) == d.strftime("%Y-%m-%d %H:%M:%S") + ",045"
    # TopicConfig.toString with PermName.perm2String
    tc = TopicConfig("T1", readQueueNums=4, writeQueueNums=2, perm=6, topicFilterType=TopicFilterType.SINGLE_TAG)
    assert java_topic_config_string(tc) == ("TopicConfig [topicName=T1, readQueueNums=4, writeQueueNums=2, perm=RW-, "
                                            "topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false]")
    # Integer.parseInt
    assert java_parse_int("+3") == 3 and java_parse_int("-1") == -1
    assert java_parse_int(" 3") is None and java_parse_int("1_0") is None and java_parse_int("2147483648") is None


# -- over the wire ---------------------------------------------------------------------------------------


async def test_send_path_remarks(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        # AbstractSendMessageProcessor.msgCheck: TOPIC_NOT_EXIST + FAQUrl.suggestTodo(APPLY_TOPIC_URL)
        r = await send(c, addr, "JrNoSuchT", b"x", default_topic="JrNoDefault")
        assert r.code == ResponseCode.TOPIC_NOT_EXIST
        assert r.remark == "topic[JrNoSuchT] not exist, apply first please!" + FAQ
        # defaultTopic is not validated: an illegal one is not found, TOPIC_NOT_EXIST
        r = await send(c, addr, "JrNoSuchT", b"x", default_topic="bad default")
        assert (r.code, r.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[JrNoSuchT] not exist, apply first please!" + FAQ)
        # TopicValidator.validateTopic through msgCheck
        r = await send(c, addr, "bad topic", b"x")
        assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, ILLEGAL_CHARS)
        r = await send(c, addr, "L" * 128, b"x")
        assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "The specified topic is longer than topic max length.")
        # TopicValidator.isNotAllowedSendTopic
        r = await send(c, addr, "SCHEDULE_TOPIC_XXXX", b"x")
        assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.")
        # msgCheck's bad queueId: "request queueId[%d] is illegal, %s Producer: %s" with TopicConfig.toString()
        # and RemotingHelper.parseChannelRemoteAddr (no leading slash)
        assert (await send(c, addr, "JrQueueT", b"x", queue_nums=4)).code == ResponseCode.SUCCESS
        r = await send(c, addr, "JrQueueT", b"x", queue_id=99)
        assert r.code == ResponseCode.SYSTEM_ERROR
        assert re.fullmatch(
            r"request queueId\[99\] is illegal, TopicConfig \[topicName=JrQueueT, readQueueNums=4, writeQueueNums=4, "
            r"perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false\] Producer: 127\.0\.0\.1:\d+",
            r.remark,
        ), r.remark


async def test_pull_path_remarks(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        assert (await send(c, addr, "JrPullT", b"x", queue_nums=4)).code == ResponseCode.SUCCESS
        # PullMessageProcessor: "topic[%s] not exist, apply first please! %s" with suggestTodo(APPLY_TOPIC_URL)
        r = await pull(c, addr, "jrG", "JrNoPullT", 0, 0)
        assert r.code == ResponseCode.TOPIC_NOT_EXIST
        assert r.remark == "topic[JrNoPullT] not exist, apply first please! " + FAQ
        # "queueId[%d] is illegal, ... consumer:[%s]" with channel.remoteAddress() (InetSocketAddress: "/ip:port")
        r = await pull(c, addr, "jrG", "JrPullT", 9, 0)
        assert r.code == ResponseCode.SYSTEM_ERROR
        assert re.fullmatch(r"queueId\[9\] is illegal, topic:\[JrPullT\] topicConfig\.readQueueNums:\[4\] "
                            r"consumer:\[/127\.0\.0\.1:\d+\]", r.remark), r.remark
        # no subscription in the request and no consumer registered: + suggestTodo(SAME_GROUP_DIFFERENT_TOPIC)
        r = await pull(c, addr, "jrG", "JrPullT", 0, 0, sys_flag=0)
        assert (r.code, r.remark) == (ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist" + FAQ)
        # a subscription that does not compile: the bare text, the cause only in the log
        r = await pull(c, addr, "jrG", "JrPullT", 0, 0, subscription="a >", expression_type="SQL92")
        assert (r.code, r.remark) == (ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")


async def test_remarks_of_a_strict_broker(broker_factory):
    """No auto-created groups, a 1 KiB message limit, then a start-accept time in the future."""
    b = broker_factory("jrstrict", autoCreateSubscriptionGroup="false", maxMessageSize=1024)
    async with RemotingClient() as c:
        assert (await send(c, b.addr, "JrT", b"x")).code == ResponseCode.SUCCESS
        # PullMessageProcessor: "subscription group [%s] does not exist, %s"
        r = await pull(c, b.addr, "jrNoG", "JrT", 0, 0)
        assert r.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        assert r.remark == "subscription group [jrNoG] does not exist, " + FAQ
        # SendMessageProcessor.handleRetryAndDLQ: "subscription group not exist, " + group + " " + suggestTodo
        r = await send(c, b.addr, "%RETRY%jrNoG", b"x")
        assert r.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        assert r.remark == "subscription group not exist, jrNoG " + FAQ
        # consumerSendMsgBack: the same text
        h = {"offset": 0, "group": "jrNoG", "delayLevel": 0, "originMsgId": "x", "originTopic": "JrT"}
        r = await call(c, b.addr, RequestCode.CONSUMER_SEND_MSG_BACK, h)
        assert (r.code, r.remark) == (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group not exist, jrNoG " + FAQ)
        # a body over maxMessageSize: the store's MESSAGE_ILLEGAL text (handlePutMessageResult)
        r = await send(c, b.addr, "JrT", b"y" * 2048)
        assert r.code == ResponseCode.MESSAGE_ILLEGAL
        assert r.remark == ("the message is illegal, maybe msg body or properties length not matched. "
                            "msg body length limit 1024B, msg properties length limit 32KB.")
        # SendMessageProcessor: "broker unable to service, until %s" (UtilAll.timeMillisToHumanString2)
        until = 4_102_444_800_123  # 2100-01-01
        r = await call(c, b.addr, RequestCode.UPDATE_BROKER_CONFIG, body=f"startAcceptSendRequestTimeStamp={until}\n".encode())
        assert r.code == ResponseCode.SUCCESS, r.remark

        async def refused():
            r = await send(c, b.addr, "JrT", b"x")
            return r if r.code == ResponseCode.SYSTEM_ERROR else None

        r = await async_wait_until(refused, 5, what="sends refused")
        assert r.remark == "broker unable to service, until " + time_millis_to_human_string2(until)
        assert re.fullmatch(r"broker unable to service, until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d,123", r.remark)

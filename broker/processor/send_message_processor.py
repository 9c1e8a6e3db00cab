"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320).

Single sends of one socket read are appended together: each is checked and
built at once, then queued, and at the end of the read (``Connection.defer``)
one store call appends them all (``put_message_list``) and the responses go out
with the read's other responses. When the put must wait (SYNC_FLUSH,
SYNC_MASTER, DLedger) the whole read's sends wait in one task
(``put_message_list_async``): one durability wait instead of a task, a future
and a timer per message. A store without those calls gets one call per message
(a coroutine per message when it must wait). The number of waiting puts is
bounded (SYSTEM_BUSY ``[OVERLOAD]`` beyond ``sendThreadPoolQueueCapacity``) so
a slow disk cannot queue work without limit.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time
from collections.abc import Awaitable
from typing import Any

from broker.broker_stats_manager import BrokerStatsManager
from broker.config import BrokerConfig
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from broker.transaction.transactional_message_util import java_properties_string
from common import mixall, topic_validator
from common.message import (
    MessageConst,
    MessageExtBatch,
    MessageExtBrokerInner,
    MessageSysFlag,
    string_to_properties,
)
from common.perm import PERM_READ, PERM_WRITE, is_writeable, perm2string
from common.rate_limited_log import RateLimitedLog
from common.util import now_ms, tags_code
from remoting.codes import (
    CURRENT_VERSION,
    RPC_ONEWAY,
    RPC_TYPE_RESPONSE,
    LanguageCode,
    RequestCode,
    ResponseCode,
)
from remoting.command import RemotingCommand
from remoting.header import HeaderError
from store.config import MessageStoreConfig
from store.message_store import PutMessageStatus

__all__ = [
    "SendMessageProcessor",
    "SendHeader",
    "parse_send_header",
    "put_status_to_response",
    "disk_util",
    "time_millis_to_human_string2",
    "java_topic_config_string",
    "java_parse_int",
    "FAQ_SUGGEST",
]

log = logging.getLogger(__name__)

_V3_4_9 = 121
_NAME_VALUE = "\x01"
_PROP_SEP = "\x02"
_WAIT_KEY = MessageConst.WAIT + _NAME_VALUE
_new_command = RemotingCommand.__new__
_JAVA = LanguageCode.JAVA




_V1_KEYS = (
    "producerGroup",
    "topic",
    "defaultTopic",
    "defaultTopicQueueNums",
    "queueId",
    "sysFlag",
    "bornTimestamp",
    "flag",
    "properties",
    "reconsumeTimes",
    "unitMode",
    "maxReconsumeTimes",
    "batch",
)


class SendHeader:
    """The send request header in V1 terms (parsed straight from extFields for speed)."""

    __slots__ = _V1_KEYS


_V2_KEYS = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m")


_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _int(name: str, v: Any, long: bool = False) -> int:
    if type(v) is not int:
        try:
            v = int(v)
        except (TypeError, ValueError):
            raise HeaderError(f"header field {name} is not a number: {v!r}") from None
    # Integer.parseInt / Long.parseLong refuse what does not fit (and the store could not write it)
    if not ((_LONG_MIN <= v <= _LONG_MAX) if long else (_INT_MIN <= v <= _INT_MAX)):
        raise HeaderError(f"header field {name} is out of range: {v!r}")
    return v


def _parse_v2_fast(ext: dict) -> SendHeader | None:
    """SEND_MESSAGE_V2 header when every required field is there and numeric (the usual case), else None.

    One key lookup and at most one ``int`` per field; anything unusual falls back to
    :func:`parse_send_header`, which produces the exact error.
    """
    try:
        h = _new_header(SendHeader)
        h.producerGroup = ext["a"]
        h.topic = ext["b"]
        h.defaultTopic = ext["c"]
        h.defaultTopicQueueNums = int(ext["d"])
        h.queueId = int(ext["e"])
        h.sysFlag = int(ext["f"])
        h.bornTimestamp = int(ext["g"])
        h.flag = int(ext["h"])
    except (KeyError, ValueError, TypeError):
        return None
    if not (_INT_MIN <= h.queueId <= _INT_MAX and _LONG_MIN <= h.bornTimestamp <= _LONG_MAX
            and _INT_MIN <= h.flag <= _INT_MAX and _INT_MIN <= h.sysFlag <= _INT_MAX
            and _INT_MIN <= h.defaultTopicQueueNums <= _INT_MAX):
        return None  # the general parse names the field
    g = ext.get
    h.properties = g("i")
    v = g("j")
    h.reconsumeTimes = None if v is None else _int("j", v)
    v = g("k")
    h.unitMode = v is not None and (v == "true" or str(v).lower() == "true")
    v = g("l")
    h.maxReconsumeTimes = None if v is None else _int("l", v)
    v = g("m")
    h.batch = v is not None and (v == "true" or str(v).lower() == "true")
    if type(h.topic) is not str or type(h.producerGroup) is not str or type(h.defaultTopic) is not str:
        return None
    return h


_new_header = SendHeader.__new__


def parse_send_header(ext: dict | None, v2: bool) -> SendHeader:
    """Decode a V1 or V2 send header; HeaderError names a missing/bad required field."""
    if v2 and ext:
        h = _parse_v2_fast(ext)
        if h is not None:
            return h
    if not ext:
        raise HeaderError(f"the custom field <{'a' if v2 else 'producerGroup'}> is null")
    keys = _V2_KEYS if v2 else _V1_KEYS
    g = ext.get
    h = SendHeader()
    vals = [g(k) for k in keys]
    for i in range(8):
        if vals[i] is None:
            raise HeaderError(f"the custom field <{keys[i]}> is null")
    h.producerGroup = str(vals[0])
    h.topic = str(vals[1])
    h.defaultTopic = str(vals[2])
    h.defaultTopicQueueNums = _int(keys[3], vals[3])
    h.queueId = _int(keys[4], vals[4])
    h.sysFlag = _int(keys[5], vals[5])
    h.bornTimestamp = _int(keys[6], vals[6], long=True)
    h.flag = _int(keys[7], vals[7])
    h.properties = vals[8]
    h.reconsumeTimes = None if vals[9] is None else _int(keys[9], vals[9])
    h.unitMode = vals[10] is not None and str(vals[10]).lower() == "true"
    h.maxReconsumeTimes = None if vals[11] is None else _int(keys[11], vals[11])
    h.batch = vals[12] is not None and str(vals[12]).lower() == "true"
    return h


# Remarks word for word as RocketMQ 4.9.7's SendMessageProcessor.handlePutMessageResult;
# {max} is MessageStoreConfig.maxMessageSize, {disk} the diskUtil() bracket.
_ILLEGAL_REMARK = (
    "the message is illegal, maybe msg body or properties length not matched. msg body length limit {max}B, "
    "msg properties length limit 32KB."
)
_STATUS_REMARKS = {
    "CREATE_MAPEDFILE_FAILED": (ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."),
    "MESSAGE_ILLEGAL": (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL_REMARK),
    "PROPERTIES_SIZE_EXCEEDED": (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL_REMARK),
    "SERVICE_NOT_AVAILABLE": (
        ResponseCode.SERVICE_NOT_AVAILABLE,
        "service not available now. It may be caused by one of the following reasons: the broker's disk is full "
        "[{disk}], messages are put to the slave, message store has been shut down, etc.",
    ),
    "OS_PAGECACHE_BUSY": (ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"),
    "LMQ_CONSUME_QUEUE_NUM_EXCEEDED": (
        ResponseCode.SYSTEM_ERROR,
        "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]broker config enableLmq and enableMultiDispatch, lmq consumeQueue num "
        "exceed maxLmqConsumeQueueNum config num, default limit 2w.",
    ),
    "UNKNOWN_ERROR": (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}
# Java's switch default (a status it has no case for)
_DEFAULT_STATUS_REMARK = (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT")
_STORED_CODES = {
    "PUT_OK": ResponseCode.SUCCESS,
    "FLUSH_DISK_TIMEOUT": ResponseCode.FLUSH_DISK_TIMEOUT,
    "FLUSH_SLAVE_TIMEOUT": ResponseCode.FLUSH_SLAVE_TIMEOUT,
    "SLAVE_NOT_AVAILABLE": ResponseCode.SLAVE_NOT_AVAILABLE,
}


# a full disk refuses every send: one line per topic and status every 10 s, not one per send
_REFUSALS = RateLimitedLog(log, logging.INFO)
_SUCCESS = int(ResponseCode.SUCCESS)
_SYSTEM_ERROR = int(ResponseCode.SYSTEM_ERROR)
_PUT_OK = PutMessageStatus.PUT_OK
_SEND_V2 = int(RequestCode.SEND_MESSAGE_V2)


def put_status_to_response(status_name: str, max_message_size: int, disk: str = "") -> tuple[int, str | None, bool]:
    """(response code, remark, stored?) for a PutMessageStatus name (spec broker-behaviour §5).

    ``disk`` fills SERVICE_NOT_AVAILABLE's bracket (see :func:`disk_util`)."""
    code = _STORED_CODES.get(status_name)
    if code is not None:
        return int(code), None, True
    code, remark = _STATUS_REMARKS.get(status_name, _DEFAULT_STATUS_REMARK)
    return int(code), remark.format(max=max_message_size, disk=disk), False


def _disk_used_ratio(path: str) -> float:
    """UtilAll.getDiskPartitionSpaceUsedPercent: used / (used + usable), rounded up to 1/100; -1 unreadable."""
    if not path or not os.path.exists(path):
        return -1.0
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    if st.f_blocks <= 0:
        return -1.0
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    if entire <= 0:
        return -1.0
    pct = used * 100 // entire + (1 if used * 100 % entire else 0)
    return pct / 100.0


def disk_util(store_config: MessageStoreConfig) -> str:
    """``CL: %5.2f CQ: %5.2f INDEX: %5.2f`` as 4.9.7's SendMessageProcessor.diskUtil() (used ratios 0..1)."""
    root = store_config.storePathRootDir
    cl_paths = store_config.storePathCommitLog or os.path.join(root, "commitlog")
    cl = 100.0
    for path in cl_paths.strip().split(";"):  # MessageStoreConfig.MULTI_PATH_SPLITTER
        cl = min(cl, _disk_used_ratio(path))
    cq = _disk_used_ratio(os.path.join(root, "consumequeue"))
    index = _disk_used_ratio(os.path.join(root, "index"))
    return f"CL: {cl:5.2f} CQ: {cq:5.2f} INDEX: {index:5.2f}"


def time_millis_to_human_string2(t: int) -> str:
    """UtilAll.timeMillisToHumanString2: ``yyyy-MM-dd HH:mm:ss,SSS`` in local time."""
    tm = time.localtime(t // 1000)
    return (
        f"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d} "
        f"{tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d},{t % 1000:03d}"
    )


def java_topic_config_string(tc: Any) -> str:
    """TopicConfig.toString() of RocketMQ 4.9.7 (what the bad-queueId remark prints)."""
    tft = getattr(tc.topicFilterType, "value", tc.topicFilterType)
    return (
        f"TopicConfig [topicName={tc.topicName}, readQueueNums={tc.readQueueNums}, "
        f"writeQueueNums={tc.writeQueueNums}, perm={perm2string(tc.perm)}, topicFilterType={tft}, "
        f"topicSysFlag={tc.topicSysFlag}, order={'true' if tc.order else 'false'}]"
    )


# FAQUrl.suggestTodo(any 4.9.7 FAQ url): they all point at the same page
FAQ_SUGGEST = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."

_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def java_parse_int(raw: str) -> int | None:
    """Integer.parseInt for ASCII input: None where Java throws NumberFormatException."""
    if _JAVA_INT.fullmatch(raw) is None:
        return None
    v = int(raw)
    return v if -(1 << 31) <= v < (1 << 31) else None


class SendMessageProcessor:
    """Validates, builds the inner message, appends it and maps the store's answer."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: Any,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        stats: BrokerStatsManager,
        store_host: tuple[str, int],
        *,
        max_message_size: int = 4 * 1024 * 1024,
        must_wait: bool = False,
        is_slave: bool = False,
        transactional_bridge: Any = None,
        max_delay_level: int = 18,
        batch_puts: bool = True,
    ):
        self.broker_config = broker_config
        self.store = store
        self.topics = topic_config_manager
        self.groups = subscription_group_manager
        self.stats = stats
        self.store_host = store_host
        self.max_message_size = max_message_size
        self.must_wait = must_wait  # SYNC_FLUSH / SYNC_MASTER: the put has to await durability
        self.is_slave = is_slave
        self.transactional_bridge = transactional_bridge
        self.max_delay_level = max_delay_level
        self.waiting_puts = 0
        self._cluster_prop = MessageConst.CLUSTER + _NAME_VALUE + broker_config.brokerClusterName
        self._resp_base = {
            "MSG_REGION": broker_config.regionId,
            "TRACE_ON": "true" if broker_config.traceOn else "false",
        }
        self._rand = random.Random()
        self._page_cache_busy = getattr(store, "is_os_page_cache_busy", None)
        # PutMessageStatus member -> (code, remark, stored); filled on first sight of each status
        self._status_answers: dict[Any, tuple[int, str | None, bool]] = {}
        # one append for the single sends of a read, when the store can (see the module docstring)
        # (batch_puts off: DLedger, where each message of a list waits for its own quorum round)
        self._put_list = getattr(store, "put_message_list", None) if batch_puts else None
        self._put_list_async = getattr(store, "put_message_list_async", None) if batch_puts else None
        self._pending: list[tuple[Any, RemotingCommand, MessageExtBrokerInner, str, int, int]] = []
        self.put_metrics: Any = None  # broker.metrics PutMetrics when the Prometheus endpoint is on
        self.rpc_latency: Any = None  # remoting.rpc_latency RpcLatencyHook, idem (answers sent late)

    # -- entry point -----------------------------------------------------------

    def process_request(self, req: RemotingCommand, conn: Any) -> RemotingCommand | Awaitable[RemotingCommand]:
        code = req.code
        ext = req.ext_fields
        h = _parse_v2_fast(ext) if code == _SEND_V2 and ext else None
        if h is None:
            h = parse_send_header(ext, code != RequestCode.SEND_MESSAGE)
        if h.batch:
            return self._send_batch(req, conn, h)
        return self._send_one(req, conn, h)

    __call__ = process_request

    # -- checks --------------------------------------------------------------------

    def _error(self, req: RemotingCommand, code: int, remark: str) -> RemotingCommand:
        return req.response_to(code, remark)

    def _busy(self, req: RemotingCommand) -> RemotingCommand | None:
        bc = self.broker_config
        if bc.startAcceptSendRequestTimeStamp and now_ms() < bc.startAcceptSendRequestTimeStamp:
            return self._error(
                req,
                ResponseCode.SYSTEM_ERROR,
                "broker unable to service, until " + time_millis_to_human_string2(bc.startAcceptSendRequestTimeStamp),
            )
        busy = self._page_cache_busy
        if busy is not None and busy():
            return self._error(
                req,
                ResponseCode.SYSTEM_BUSY,
                "[REJECTREQUEST]system busy, start flow control for a while",
            )
        if self.must_wait and self.waiting_puts >= bc.sendThreadPoolQueueCapacity:
            # Java's text (NettyRemotingAbstract, pool rejected); the cause goes to the log only
            log.warning("send rejected: %d sends waiting (sendThreadPoolQueueCapacity %d)",
                        self.waiting_puts, bc.sendThreadPoolQueueCapacity)
            return self._error(
                req,
                ResponseCode.SYSTEM_BUSY,
                "[OVERLOAD]system busy, start flow control for a while",
            )
        return None

    def _msg_check(self, req: RemotingCommand, conn: Any, h: SendHeader) -> tuple[Any, RemotingCommand | None]:
        """Topic legality, existence (auto-create) and queue id; returns (topic config, error)."""
        topic = h.topic
        bc = self.broker_config
        tc = self.topics.table.get(topic)
        if not is_writeable(bc.brokerPermission) and tc is not None and tc.order:
            return None, self._error(
                req, ResponseCode.NO_PERMISSION, f"the broker[{bc.broker_ip1()}] sending message is forbidden"
            )
        if tc is None:
            err = topic_validator.validate_topic(topic)
            if err is not None:
                return None, self._error(req, ResponseCode.SYSTEM_ERROR, err)
        if topic in topic_validator.NOT_ALLOWED_SEND_TOPICS:
            return None, self._error(req, ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
        if tc is None:
            # defaultTopic is only looked up (never a path): an illegal one is simply not found and the
            # send gets TOPIC_NOT_EXIST, as in 4.9.7, which does not validate it
            sys_flag = 0
            tc = self.topics.create_topic_in_send_message_method(
                topic, h.defaultTopic, conn.remote_addr, h.defaultTopicQueueNums, sys_flag
            )
            if tc is None and mixall.is_retry_topic(topic):
                tc = self.topics.create_topic_in_send_message_back_method(topic, 1, PERM_WRITE | PERM_READ, sys_flag)
            if tc is None:
                return None, self._error(
                    req, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!{FAQ_SUGGEST}"
                )
        qid = h.queueId
        limit = max(tc.writeQueueNums, tc.readQueueNums)
        if qid >= limit:
            return None, self._error(
                req,
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{qid}] is illegal, {java_topic_config_string(tc)} Producer: {conn.remote_addr}",
            )
        return tc, None

    def _disk_util(self) -> str:
        cfg = getattr(self.store, "config", None) or getattr(self.store, "message_store_config", None)
        return disk_util(cfg)

    def _born_host(self, conn: Any) -> tuple[str, int]:
        bh = conn.attrs.get("born_host")
        if bh is None:
            host, _, port = conn.remote_addr.rpartition(":")
            bh = (host.strip("[]") or "127.0.0.1", int(port or 0))
            conn.attrs["born_host"] = bh
        return bh

    # -- single message --------------------------------------------------------------

    def _send_one(self, req: RemotingCommand, conn: Any, h: SendHeader):
        err = self._busy(req)
        if err is not None:
            return err
        tc, err = self._msg_check(req, conn, h)
        if err is not None:
            return err
        body = req.body if req.body is not None else b""
        if len(body) > self.max_message_size:
            return self._error(
                req,
                ResponseCode.MESSAGE_ILLEGAL,
                _ILLEGAL_REMARK.format(max=self.max_message_size),  # what 4.9.7's store answers
            )
        topic = h.topic
        qid = h.queueId
        if qid < 0:
            qid = self._rand.randrange(1 << 30) % max(tc.writeQueueNums, 1)
        answer_qid = qid  # 4.9.7 answers the queue asked for, wherever the message is parked (DLQ, delay, half)
        props_str = h.properties or ""
        props = string_to_properties(props_str)
        if topic.startswith(mixall.RETRY_GROUP_TOPIC_PREFIX):
            redirected = self._handle_retry_and_dlq(req, h, props)
            if isinstance(redirected, RemotingCommand):
                return redirected
            if redirected is not None:
                topic, qid, tc = redirected
                props_str = ""  # re-serialized below (DELAY changed)
        sys_flag = h.sysFlag
        if tc.topicFilterType == "MULTI_TAG":
            sys_flag |= MessageSysFlag.MULTI_TAGS
        # Stored properties: the client's string without WAIT, plus CLUSTER.
        if props_str and _WAIT_KEY not in props_str:
            stored = props_str + _PROP_SEP + self._cluster_prop
        else:
            stored_props = {k: v for k, v in props.items() if k != MessageConst.WAIT}
            stored_props[MessageConst.CLUSTER] = self.broker_config.brokerClusterName
            stored = _PROP_SEP.join(k + _NAME_VALUE + v for k, v in stored_props.items())
        props[MessageConst.CLUSTER] = self.broker_config.brokerClusterName
        msg = MessageExtBrokerInner(
            topic=topic,
            queue_id=qid,
            flag=h.flag,
            body=body,
            properties=props,
            properties_string=stored,
            tags_code=tags_code(props.get(MessageConst.TAGS)),
            sys_flag=sys_flag,
            born_timestamp=h.bornTimestamp,
            born_host=self._born_host(conn),
            store_host=self.store_host,
            reconsume_times=h.reconsumeTimes or 0,
        )
        if props.get(MessageConst.TRANSACTION_PREPARED) == "true":
            if self.broker_config.rejectTransactionMessage:
                return self._error(
                    req,
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{self.broker_config.broker_ip1()}] sending transaction message is forbidden",
                )
            msg = self._to_half_message(msg)
        elif MessageConst.DELAY in props:
            err = self._rewrite_delayed(req, msg)
            if err is not None:
                return err
        if self.must_wait:
            if self._put_list_async is not None and hasattr(conn, "defer"):
                self.waiting_puts += 1
                self._queue(conn, req, msg, topic, len(body), answer_qid, self._append_pending_async)
                return None
            return self._put_async(req, msg, topic, len(body), answer_qid, batch=False)
        if self._put_list is not None and hasattr(conn, "defer"):
            self._queue(conn, req, msg, topic, len(body), answer_qid, self._append_pending)
            return None
        result = self.store.put_message(msg)
        return self._response(req, result, topic, answer_qid, len(body), msg)

    # -- one append per read -------------------------------------------------------------

    def _queue(self, conn: Any, req: RemotingCommand, msg: MessageExtBrokerInner, topic: str, size: int,
               qid: int, flush: Any) -> None:
        pending = self._pending
        if not pending:
            conn.defer(flush)  # one flush for whatever is queued until it runs
        pending.append((conn, req, msg, topic, size, qid))

    def _answer(self, pending: list, results: Any, error: BaseException | None, received_at: float) -> None:
        """Answer the sends of one read; ``received_at``: that read's ``Connection.received_at``."""
        if error is None and (results is None or len(results) != len(pending)):
            error = RuntimeError(f"store returned {0 if results is None else len(results)} results "
                                 f"for {len(pending)} messages")
        lat = self.rpc_latency
        if error is not None:
            log.warning("put of %d messages failed: %r", len(pending), error)
            text = str(error) or type(error).__name__
            for conn, req, _msg, _topic, _size, _qid in pending:
                if not req.flag & RPC_ONEWAY:
                    conn.send_response(self._error(req, ResponseCode.SYSTEM_ERROR, text))
                    if lat is not None:
                        lat.observe(req.code, _SYSTEM_ERROR, received_at)
            return
        response = self._response
        ok = 0  # SEND_MESSAGE_V2 answered SUCCESS: timed together below (one histogram update a read)
        for (conn, req, msg, topic, size, qid), result in zip(pending, results, strict=True):
            resp = response(req, result, topic, qid, size, msg)
            if not req.flag & RPC_ONEWAY:
                conn.send_response(resp)
                if resp.code or req.code != _SEND_V2:
                    if lat is not None:
                        lat.observe(req.code, resp.code, received_at)
                else:
                    ok += 1
        if ok and lat is not None:
            lat.observe(_SEND_V2, _SUCCESS, received_at, ok)

    def _append_pending(self) -> None:
        """Append the queued sends with one store call and answer each (end of a read)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        received_at = pending[0][0].received_at  # the read they came in (all of them: one read's work)
        try:
            results = self._put_list([p[2] for p in pending])
        except Exception as e:  # noqa: BLE001 - every queued sender gets SYSTEM_ERROR
            self._answer(pending, None, e, received_at)
        else:
            self._answer(pending, results, None, received_at)

    def _append_pending_async(self) -> None:
        """Append the queued sends and wait for their durability in one task (end of a read)."""
        pending, self._pending = self._pending, []
        if pending:
            conn = pending[0][0]
            conn.spawn(self._put_pending(pending, conn.received_at))

    async def _put_pending(self, pending: list, received_at: float) -> None:
        try:
            results = await self._put_list_async([p[2] for p in pending])
        except Exception as e:  # noqa: BLE001 - every queued sender gets SYSTEM_ERROR
            self._answer(pending, None, e, received_at)
        else:
            self._answer(pending, results, None, received_at)
        finally:
            self.waiting_puts -= len(pending)
        # the answers leave now, not one loop iteration later (one connection per read, as a rule)
        first = pending[0][0]
        first.flush()
        if pending[-1][0] is not first:
            for conn in {p[0] for p in pending} - {first}:
                conn.flush()

    def _rewrite_delayed(self, req: RemotingCommand, msg: MessageExtBrokerInner) -> RemotingCommand | None:
        """DELAY > 0: park the message in SCHEDULE_TOPIC_XXXX queue ``level - 1`` (what RocketMQ's CommitLog
        does before appending); REAL_TOPIC/REAL_QID keep the destination and the properties string is
        re-serialized from the map (so it keeps WAIT, as RocketMQ's does)."""
        tx = MessageSysFlag.get_transaction_value(msg.sys_flag)
        if tx not in (MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE):
            return None
        props = msg.properties
        raw = props[MessageConst.DELAY]
        level = java_parse_int(raw)
        if level is None:
            # 4.9.7: CommitLog's getDelayTimeLevel() throws, NettyRemotingAbstract answers SYSTEM_ERROR with
            # RemotingHelper.exceptionSimpleDesc(e) (exception, then its top frame on JDK 8)
            return self._error(
                req,
                ResponseCode.SYSTEM_ERROR,
                f'java.lang.NumberFormatException: For input string: "{raw}", '
                "java.lang.NumberFormatException.forInputString(NumberFormatException.java:65)",
            )
        if level <= 0 or self.max_delay_level <= 0:
            return None
        if level > self.max_delay_level:
            level = self.max_delay_level
            props[MessageConst.DELAY] = str(level)
        props[MessageConst.REAL_TOPIC] = msg.topic
        props[MessageConst.REAL_QID] = str(msg.queue_id)
        # Java re-serializes its HashMap here: same bytes as RocketMQ's record.
        msg.properties_string = java_properties_string(props)
        msg.topic = mixall.SCHEDULE_TOPIC
        msg.queue_id = level - 1
        return None

    def _to_half_message(self, msg: MessageExtBrokerInner) -> MessageExtBrokerInner:
        """Park a prepared transactional message in RMQ_SYS_TRANS_HALF_TOPIC queue 0 (REAL_TOPIC/REAL_QID kept)."""
        if self.transactional_bridge is not None:
            return self.transactional_bridge.parse_half_message_inner(msg)
        self.topics.create_topic_in_send_message_back_method(mixall.RMQ_SYS_TRANS_HALF_TOPIC, 1, PERM_READ | PERM_WRITE)
        props = dict(msg.properties)
        props[MessageConst.REAL_TOPIC] = msg.topic
        props[MessageConst.REAL_QID] = str(msg.queue_id)
        msg.properties = props
        msg.properties_string = _PROP_SEP.join(k + _NAME_VALUE + v for k, v in props.items())
        msg.sys_flag = MessageSysFlag.reset_transaction_value(msg.sys_flag, MessageSysFlag.TRANSACTION_NOT_TYPE)
        msg.topic = mixall.RMQ_SYS_TRANS_HALF_TOPIC
        msg.queue_id = 0
        return msg

    def _handle_retry_and_dlq(self, req: RemotingCommand, h: SendHeader, props: dict):
        """For ``%RETRY%<group>``: the group must exist; too many reconsumes go to ``%DLQ%<group>``."""
        group = h.topic[len(mixall.RETRY_GROUP_TOPIC_PREFIX):]
        sgc = self.groups.find_subscription_group_config(group)
        if sgc is None:
            return self._error(
                req, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group} {FAQ_SUGGEST}"
            )
        max_times = sgc.retryMaxTimes
        if req.version >= _V3_4_9 and h.maxReconsumeTimes is not None:
            max_times = h.maxReconsumeTimes
        reconsume = h.reconsumeTimes or 0
        if reconsume < max_times:
            return None
        dlq = mixall.get_dlq_topic(group)
        tc = self.topics.create_topic_in_send_message_back_method(dlq, 1, PERM_WRITE | PERM_READ, 0)
        if tc is None:
            return self._error(req, ResponseCode.SYSTEM_ERROR, f"topic[{dlq}] not exist")
        props.pop(MessageConst.DELAY, None)
        return dlq, 0, tc

    # -- batch -----------------------------------------------------------------

    def _send_batch(self, req: RemotingCommand, conn: Any, h: SendHeader):
        err = self._busy(req)
        if err is not None:
            return err
        tc, err = self._msg_check(req, conn, h)
        if err is not None:
            return err
        topic = h.topic
        if mixall.is_retry_topic(topic):
            return self._error(req, ResponseCode.MESSAGE_ILLEGAL, f"batch request does not support retry group {topic}")
        if MessageSysFlag.get_transaction_value(h.sysFlag) != MessageSysFlag.TRANSACTION_NOT_TYPE:
            return self._error(req, ResponseCode.MESSAGE_ILLEGAL, "batch request does not support transaction message")
        props = string_to_properties(h.properties)
        delay = props.get(MessageConst.DELAY)
        if delay and delay != "0":
            return self._error(req, ResponseCode.MESSAGE_ILLEGAL, "batch request does not support delay message")
        body = req.body if req.body is not None else b""
        if not body:
            return self._error(req, ResponseCode.MESSAGE_ILLEGAL, "batch request has an empty body")
        qid = h.queueId
        if qid < 0:
            qid = self._rand.randrange(1 << 30) % max(tc.writeQueueNums, 1)
        sys_flag = h.sysFlag
        if tc.topicFilterType == "MULTI_TAG":
            sys_flag |= MessageSysFlag.MULTI_TAGS
        props.pop(MessageConst.WAIT, None)
        props[MessageConst.CLUSTER] = self.broker_config.brokerClusterName
        batch = MessageExtBatch(
            topic=topic,
            queue_id=qid,
            flag=h.flag,
            body=body,
            properties=props,
            properties_string=_PROP_SEP.join(k + _NAME_VALUE + v for k, v in props.items()),
            sys_flag=sys_flag,
            born_timestamp=h.bornTimestamp,
            born_host=self._born_host(conn),
            store_host=self.store_host,
        )
        if self._pending:  # single sends queued earlier in this read go first: requests keep their order
            if self.must_wait:
                self._append_pending_async()
            else:
                self._append_pending()
        if self.must_wait:
            return self._put_async(req, batch, topic, len(body), qid, batch=True)
        try:
            result = self.store.put_messages(batch)
        except ValueError as e:  # malformed batch body
            return self._error(req, ResponseCode.MESSAGE_ILLEGAL, f"the batch body is malformed: {e}")
        return self._response(req, result, topic, qid, len(body))

    # -- put and respond ---------------------------------------------------------------

    async def _put_async(self, req: RemotingCommand, msg: Any, topic: str, size: int, qid: int, *,
                         batch: bool) -> RemotingCommand:
        self.waiting_puts += 1
        try:
            if batch:
                try:
                    result = await self.store.put_messages_async(msg)
                except ValueError as e:
                    return self._error(req, ResponseCode.MESSAGE_ILLEGAL, f"the batch body is malformed: {e}")
            else:
                result = await self.store.put_message_async(msg)
        finally:
            self.waiting_puts -= 1
        return self._response(req, result, topic, qid, size, msg)

    def _response(self, req: RemotingCommand, result: Any, topic: str, qid: int, size: int,
                  msg: Any = None) -> RemotingCommand:
        if result is None:
            return self._error(req, ResponseCode.SYSTEM_ERROR, "store putMessage return null")
        status = result.status
        if status is _PUT_OK:  # identity first: hashing an Enum member runs Python code
            code = _SUCCESS
        else:
            answer = self._status_answers.get(status)
            if answer is None:
                if status.name == "SERVICE_NOT_AVAILABLE":  # the disk figures are of now: not cached
                    answer = put_status_to_response(status.name, self.max_message_size, self._disk_util())
                else:
                    answer = self._status_answers[status] = put_status_to_response(status.name, self.max_message_size)
            code, remark, stored = answer
            if not stored:
                if result.remark:  # Java's remark has no place for the store's reason: log it (throttled)
                    _REFUSALS.log((topic, status), "put to %s refused: %s (%s)", topic, status.name, result.remark)
                return self._error(req, code, remark)
        ar = result.append_result
        self.stats.inc_put(topic, ar.msg_num, size)
        if self.put_metrics is not None:
            self.put_metrics.on_put(topic, msg, ar.msg_num, size)
        ext = self._resp_base.copy()
        ext["msgId"] = ar.msg_id
        ext["queueId"] = str(qid)
        ext["queueOffset"] = str(ar.logics_offset)
        # slots filled directly: one response per message on the hot path
        resp = _new_command(RemotingCommand)
        resp.code = code
        resp.language = _JAVA
        resp.version = CURRENT_VERSION
        resp.opaque = req.opaque
        resp.flag = RPC_TYPE_RESPONSE
        resp.remark = None
        resp.ext_fields = ext
        resp.body = None
        resp.serialize_type = req.serialize_type
        return resp

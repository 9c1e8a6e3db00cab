"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320).

Single sends of one socket read are checked and built at once, then appended
together at the end of the read (broker/processor/send_put_batcher.py: one
``put_message_list`` call, or one task awaiting ``put_message_list_async`` when
the put must wait for SYNC_FLUSH / SYNC_MASTER). A store without those calls
gets one call per message (a coroutine per message when it must wait). The
number of waiting puts is bounded (SYSTEM_BUSY ``[OVERLOAD]`` beyond
``sendThreadPoolQueueCapacity``) so a slow disk cannot queue work without limit.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from broker.config import BrokerConfig
from broker.managers import Managers
from broker.processor.send_message_header import SendHeader, parse_send_header, parse_v2_fast
from broker.processor.send_message_remarks import (
    FAQ_SUGGEST,
    ILLEGAL_REMARK,
    disk_util,
    java_parse_int,
    java_topic_config_string,
    put_status_to_response,
)
from broker.processor.send_put_batcher import SendPutBatcher
from broker.transaction.transactional_message_util import java_properties_string
from common import mixall, topic_validator
from common.message import (
    MessageConst,
    MessageExtBatch,
    MessageExtBrokerInner,
    MessageSysFlag,
    string_to_properties,
)
from common.perm import PERM_READ, PERM_WRITE, is_writeable
from common.rate_limited_log import RateLimitedLog
from common.speedups import new_slotted as _new_slotted
from common.util import now_ms, tags_code, time_millis_to_human_string2
from remoting.codec import response_frame as _response_frame
from remoting.codes import (
    CURRENT_VERSION,
    RPC_ONEWAY,
    RPC_TYPE_RESPONSE,
    LanguageCode,
    RequestCode,
    ResponseCode,
    SerializeType,
)
from remoting.command import RemotingCommand
from remoting.connection import Connection
from store.message_store import MessageStore, PutMessageStatus

if TYPE_CHECKING:  # the recorders' types only
    from broker.metrics.request_path_metrics import LateAnswerTimer

__all__ = ["SendMessageProcessor"]

log = logging.getLogger(__name__)

_V3_4_9 = 121
_NAME_VALUE = "\x01"
_PROP_SEP = "\x02"
_WAIT_KEY = MessageConst.WAIT + _NAME_VALUE
_new_command = RemotingCommand.__new__
_JAVA = LanguageCode.JAVA
_JSON_TYPE = int(SerializeType.JSON)


# a full disk refuses every send: one line per topic and status every 10 s, not one per send
_REFUSALS = RateLimitedLog(log, logging.INFO)
_SUCCESS = int(ResponseCode.SUCCESS)
_PUT_OK = PutMessageStatus.PUT_OK
_SEND_V2 = int(RequestCode.SEND_MESSAGE_V2)


class SendMessageProcessor:
    """Validates, builds the inner message, appends it and maps the store's answer."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        managers: Managers,
        store_host: tuple[str, int],
        *,
        max_message_size: int = 4 * 1024 * 1024,
        must_wait: bool = False,
        transactional_bridge: Any = None,
        max_delay_level: int = 18,
        batch_puts: bool = True,
        rpc_latency: LateAnswerTimer | None = None,
    ):
        self.broker_config = broker_config
        self.store = store
        self.topics = managers.topics
        self.groups = managers.groups
        self.stats = managers.stats
        self.store_host = store_host
        self.max_message_size = max_message_size
        self.must_wait = must_wait  # SYNC_FLUSH / SYNC_MASTER: the put has to await durability
        self.transactional_bridge = transactional_bridge
        self.max_delay_level = max_delay_level
        self.waiting_puts = 0
        self._cluster_prop = MessageConst.CLUSTER + _NAME_VALUE + broker_config.brokerClusterName
        self._resp_base = {
            "MSG_REGION": broker_config.regionId,
            "TRACE_ON": "true" if broker_config.traceOn else "false",
        }
        self._rand = random.Random()
        self._page_cache_busy = store.is_os_page_cache_busy
        # PutMessageStatus member -> (code, remark, stored); filled on first sight of each status
        self._status_answers: dict[Any, tuple[int, str | None, bool]] = {}
        # one append for the single sends of a read, when the store can (see the module docstring)
        # (batch_puts off: DLedger, where each message of a list waits for its own quorum round)
        self._put_list = store.put_message_list if batch_puts else None
        self._put_list_async = store.put_message_list_async if batch_puts else None
        # rpc_latency: the batched answers are sent late, so the batcher times them (once per read)
        self._batcher = batcher = SendPutBatcher(
            self._put_list, self._put_list_async, self._response, self._puts_settled, rpc_latency,
            store.put_message_list_then if batch_puts else None, answer_ok=self._answer_ok,
        )
        # bound once: the per-message path makes no lookup through the batcher
        self._queue = batcher.queue
        self._append_pending = batcher.append_pending
        self._append_pending_async = batcher.append_pending_async
        # a stored put is counted by one call, the statistics' inc_put, which keeps the Prometheus
        # put counters as well (metrics on or off)
        self._count_put = self.stats.inc_put

    def _puts_settled(self, n: int) -> None:
        self.waiting_puts -= n

    # -- entry point -----------------------------------------------------------

    def process_request(self, req: RemotingCommand, conn: Connection) -> RemotingCommand | Awaitable[RemotingCommand]:
        code = req.code
        ext = req.ext_fields
        h = parse_v2_fast(ext) if code == _SEND_V2 and ext else None
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

    def check_send(self, req: RemotingCommand, conn: Connection, h: SendHeader) -> tuple[Any, RemotingCommand | None]:
        """Every check a send (or a reply) passes before it is built: flow control, then the topic."""
        err = self._busy(req)
        if err is not None:
            return None, err
        return self._msg_check(req, conn, h)

    def _msg_check(self, req: RemotingCommand, conn: Connection, h: SendHeader) -> tuple[Any, RemotingCommand | None]:
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
        return disk_util(self.store.config)

    def _born_host(self, conn: Connection) -> tuple[str, int]:
        bh = conn.attrs.get("born_host")
        if bh is None:
            host, _, port = conn.remote_addr.rpartition(":")
            bh = (host.strip("[]") or "127.0.0.1", int(port or 0))
            conn.attrs["born_host"] = bh
        return bh

    # -- single message --------------------------------------------------------------

    def _send_one(self, req: RemotingCommand, conn: Connection, h: SendHeader):
        tc, err = self.check_send(req, conn, h)
        if err is not None:
            return err
        body = req.body if req.body is not None else b""
        if len(body) > self.max_message_size:
            return self._error(
                req,
                ResponseCode.MESSAGE_ILLEGAL,
                ILLEGAL_REMARK.format(max=self.max_message_size),  # what 4.9.7's store answers
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
        # every field, in the dataclass's order, set without its __init__ (half a microsecond a send)
        msg = _new_slotted(MessageExtBrokerInner, (
            topic,  # topic
            qid,  # queue_id
            h.flag,  # flag
            body,  # body
            props,  # properties
            stored,  # properties_string
            tags_code(props.get(MessageConst.TAGS)),  # tags_code
            sys_flag,  # sys_flag
            h.bornTimestamp,  # born_timestamp
            self._born_host(conn),  # born_host
            self.store_host,  # store_host
            h.reconsumeTimes or 0,  # reconsume_times
            0,  # prepared_transaction_offset
            0,  # store_timestamp
            0,  # queue_offset
            0,  # commit_log_offset
            -1,  # body_crc
        ))
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
            if self._put_list_async is not None:
                self.waiting_puts += 1
                self._queue(conn, req, msg, topic, len(body), answer_qid, self._append_pending_async)
                return None
            return self._put_async(req, msg, topic, len(body), answer_qid, batch=False)
        if self._put_list is not None:
            self._queue(conn, req, msg, topic, len(body), answer_qid, self._append_pending)
            return None
        result = self.store.put_message(msg)
        return self._response(req, result, topic, answer_qid, len(body), msg)

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

    def _send_batch(self, req: RemotingCommand, conn: Connection, h: SendHeader):
        tc, err = self.check_send(req, conn, h)
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
        # positional, in the dataclass's field order (see _send_one)
        batch = MessageExtBatch(
            topic,  # topic
            qid,  # queue_id
            h.flag,  # flag
            body,  # body
            props,  # properties
            _PROP_SEP.join([k + _NAME_VALUE + v for k, v in props.items()]),  # properties_string
            0,  # tags_code
            sys_flag,  # sys_flag
            h.bornTimestamp,  # born_timestamp
            self._born_host(conn),  # born_host
            self.store_host,  # store_host
        )
        if self._batcher.pending:  # single sends queued earlier in this read go first: requests keep their order
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

    def _answer_ok(self, conn: Connection, req: RemotingCommand, result: Any, topic: str, qid: int, size: int,
                   msg: Any) -> bool:
        """SUCCESS to a JSON request written as its frame, without a command object (the usual answer,
        one per send; the same bytes as :meth:`_response` and ``encode``). False, with nothing done,
        for anything else: :meth:`_response` builds that answer."""
        if result is None or result.status is not _PUT_OK or req.serialize_type != _JSON_TYPE or \
                req.flag & RPC_ONEWAY:
            return False
        ar = result.append_result
        ext = self._resp_base.copy()
        ext["msgId"] = ar.msg_id
        ext["queueId"] = str(qid)
        ext["queueOffset"] = str(ar.logics_offset)
        frame = _response_frame(_SUCCESS, req.opaque, ext)
        if frame is None or not conn.send_response_frame(frame):
            return False
        self._count_put(topic, ar.msg_num, size, msg)
        return True

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
        self._count_put(topic, ar.msg_num, size, msg)
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

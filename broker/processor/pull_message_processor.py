"""PULL_MESSAGE (11): checks, filtered store read, status mapping, long polling, offset piggyback."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.config import BrokerConfig
from broker.managers import Managers

if TYPE_CHECKING:  # the metrics recorders' types only
    from broker.metrics.request_path_metrics import LateAnswerTimer, PullOffsetRecorder
from broker.pull_request_hold_service import PullRequest, PullRequestHoldService
from broker.role_state import RoleState
from common import mixall
from common.filter import ExpressionType
from common.message import MessageConst, MessageExtBrokerInner
from common.perm import is_readable
from common.util import java_string_hash, now_ms
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header import HeaderError
from store.message_store import MessageStore

__all__ = ["PullMessageProcessor", "FLAG_COMMIT_OFFSET", "FLAG_SUSPEND", "FLAG_SUBSCRIPTION", "FLAG_CLASS_FILTER"]

log = logging.getLogger(__name__)

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
FLAG_CLASS_FILTER = 0x8
FLAG_LITE_PULL = 0x10

# FAQUrl.suggestTodo(...) of 4.9.7 (every FAQ url is the same page); remarks below are 4.9.7's
# PullMessageProcessor texts word for word
_FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."

_STATUS_CODE = {
    "FOUND": ResponseCode.SUCCESS,
    "MESSAGE_WAS_REMOVING": ResponseCode.PULL_RETRY_IMMEDIATELY,
    "NO_MATCHED_MESSAGE": ResponseCode.PULL_RETRY_IMMEDIATELY,
    "OFFSET_FOUND_NULL": ResponseCode.PULL_NOT_FOUND,
    "OFFSET_OVERFLOW_ONE": ResponseCode.PULL_NOT_FOUND,
    "OFFSET_OVERFLOW_BADLY": ResponseCode.PULL_OFFSET_MOVED,
    "OFFSET_TOO_SMALL": ResponseCode.PULL_OFFSET_MOVED,
}

_REQUIRED = (
    "consumerGroup",
    "topic",
    "queueId",
    "queueOffset",
    "maxMsgNums",
    "sysFlag",
    "commitOffset",
    "suspendTimeoutMillis",
    "subVersion",
)


class _PullHeader:
    __slots__ = _REQUIRED + ("subscription", "expressionType")


def _parse(ext: dict | None) -> _PullHeader:
    ext = ext or {}
    h = _PullHeader()
    for name in _REQUIRED:
        v = ext.get(name)
        if v is None:
            raise HeaderError(f"the custom field <{name}> is null")
        if name not in ("consumerGroup", "topic"):
            try:
                v = int(v)
            except (TypeError, ValueError):
                raise HeaderError(f"header field {name} is not a number: {v!r}") from None
        setattr(h, name, v)
    h.subscription = ext.get("subscription")
    h.expressionType = ext.get("expressionType")
    return h


class PullMessageProcessor:
    """Serves pulls; parks empty long-poll pulls in the hold service."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        managers: Managers,
        *,
        role: RoleState | None = None,
        offset_check_in_slave: bool = False,
        store_host: tuple[str, int] = ("127.0.0.1", 10911),
        pull_offsets: PullOffsetRecorder | None = None,
        rpc_latency: LateAnswerTimer | None = None,
    ):
        self.broker_config = broker_config
        self.store = store
        self.topics = managers.topics
        self.groups = managers.groups
        self.consumers = managers.consumers
        self.offsets = managers.offsets
        self.stats = managers.stats
        self.pull_offsets = pull_offsets  # metrics: the offsets handed out, when the endpoint is on
        self.role = role if role is not None else RoleState()
        self.offset_check_in_slave = offset_check_in_slave
        self.store_host = store_host
        self.filters = managers.filters
        self.hold_service = PullRequestHoldService(
            store,
            self.execute_wakeup,
            long_polling_enable=broker_config.longPollingEnable,
            short_polling_ms=broker_config.shortPollingTimeMills,
            rpc_latency=rpc_latency,
        )

    def __call__(self, req: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        return self.process(req, conn, True)

    def execute_wakeup(self, req: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        """Re-run a parked pull (never parks again)."""
        return self.process(req, conn, False)

    def process(self, req: RemotingCommand, conn: Connection, allow_suspend: bool) -> RemotingCommand | None:
        # submodules, not the package: a per-pull import of a plain module is a dict lookup
        from broker.filter.expression_message_filter import (
            FilterNotSupportedError,
            build_message_filter,
            parse_pull_subscription,
        )
        from broker.filter.selector_parser import FilterParseError

        h = _parse(req.ext_fields)
        bc = self.broker_config
        if not is_readable(bc.brokerPermission):
            return req.response_to(
                ResponseCode.NO_PERMISSION, f"the broker[{bc.broker_ip1()}] pulling message is forbidden"
            )
        group = h.consumerGroup
        topic = h.topic
        sgc = self.groups.find_subscription_group_config(group)
        if sgc is None:
            return req.response_to(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group [{group}] does not exist, {_FAQ}"
            )
        if not sgc.consumeEnable:
            return req.response_to(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
        sys_flag = h.sysFlag
        has_suspend = bool(sys_flag & FLAG_SUSPEND)
        has_commit = bool(sys_flag & FLAG_COMMIT_OFFSET)
        has_subscription = bool(sys_flag & FLAG_SUBSCRIPTION)
        tc = self.topics.table.get(topic)
        if tc is None:
            return req.response_to(
                ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please! {_FAQ}"
            )
        if not is_readable(tc.perm):
            return req.response_to(ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
        qid = h.queueId
        if qid < 0 or qid >= tc.readQueueNums:
            return req.response_to(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{qid}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{tc.readQueueNums}] "
                f"consumer:[/{conn.remote_addr}]",  # Java prints channel.remoteAddress(): "/ip:port"
            )
        filter_data = None
        if has_subscription:
            try:
                sub, filter_data = parse_pull_subscription(topic, group, h.subscription, h.expressionType, h.subVersion)
            except FilterParseError as e:
                # as 4.9.7: the expression is compiled whatever enablePropertyFilter says
                log.warning("parse the consumer's subscription[%s] failed, group: %s: %s", h.subscription, group, e)
                return req.response_to(ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")
        else:
            cgi = self.consumers.get_consumer_group_info(group)
            if cgi is None:
                return req.response_to(ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist" + _FAQ)
            if not sgc.consumeBroadcastEnable and cgi.message_model == "BROADCASTING":
                return req.response_to(
                    ResponseCode.NO_PERMISSION, f"the consumer group[{group}] can not consume by broadcast way"
                )
            sub = cgi.subscription_table.get(topic)
            if sub is None:
                return req.response_to(ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's subscription not exist" + _FAQ)
            if sub.subVersion < h.subVersion:
                return req.response_to(ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
            if not ExpressionType.is_tag_type(sub.expressionType):
                # the heartbeat registered (and compiled) it in ConsumerFilterManager; a bad expression
                # was not kept, so the consumer learns its expression is wrong
                filter_data = self.filters.get(topic, group) if self.filters is not None else None
                if filter_data is None:
                    return req.response_to(
                        ResponseCode.FILTER_DATA_NOT_EXIST,
                        "The broker's consumer filter data is not exist!Your expression may be wrong!",
                    )
                if filter_data.clientVersion < h.subVersion:
                    return req.response_to(
                        ResponseCode.FILTER_DATA_NOT_LATEST, "the consumer's consumer filter data not latest"
                    )
        if not ExpressionType.is_tag_type(sub.expressionType) and not bc.enablePropertyFilter:
            return req.response_to(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {sub.expressionType}",
            )
        try:
            message_filter = build_message_filter(
                sub,
                filter_data,
                enable_property_filter=bc.enablePropertyFilter,
                filter_support_retry=bc.filterSupportRetry,
                consumer_filter_manager=self.filters,
            )
        except FilterNotSupportedError as e:
            return req.response_to(ResponseCode.SYSTEM_ERROR, str(e))
        except (FilterParseError, ValueError) as e:
            log.warning("parse the consumer's subscription[%s] failed, group: %s: %s", sub, group, e)
            return req.response_to(ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")

        result = self.store.get_message(group, topic, qid, h.queueOffset, h.maxMsgNums, message_filter)
        if result is None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "store getMessage return null")
        status = result.status.name
        code = _STATUS_CODE.get(status)
        if code is None:  # NO_MATCHED_LOGIC_QUEUE, NO_MESSAGE_IN_QUEUE
            code = ResponseCode.PULL_OFFSET_MOVED if h.queueOffset != 0 else ResponseCode.PULL_NOT_FOUND
        suggest = mixall.MASTER_ID
        if bc.slaveReadEnable:
            suggest = sgc.whichBrokerWhenConsumeSlowly if result.suggest_pulling_from_slave else sgc.brokerId
        ext = {
            "suggestWhichBrokerId": str(suggest),
            "nextBeginOffset": str(result.next_begin_offset),
            "minOffset": str(result.min_offset),
            "maxOffset": str(result.max_offset),
        }
        body = None
        if code == ResponseCode.SUCCESS:
            body = result.body()
            self.stats.inc_get(group, topic, result.message_count, len(body))
            if self.pull_offsets is not None:  # metrics: what is in flight to consumers
                self.pull_offsets.record(group, topic, qid, result.next_begin_offset)
        elif code == ResponseCode.PULL_NOT_FOUND:
            if allow_suspend and has_suspend:
                timeout = h.suspendTimeoutMillis if bc.longPollingEnable else bc.shortPollingTimeMills
                self.hold_service.suspend_pull_request(
                    topic, qid, PullRequest(req, conn, h.queueOffset, message_filter, timeout)
                )
                self._commit(allow_suspend, has_commit, conn, group, topic, qid, h.commitOffset)
                return None
        elif code == ResponseCode.PULL_OFFSET_MOVED:
            if not self.role.is_slave or self.offset_check_in_slave:
                self._generate_offset_moved_event(group, topic, qid, h.queueOffset, result.next_begin_offset)
            else:
                code = ResponseCode.PULL_RETRY_IMMEDIATELY
                ext["suggestWhichBrokerId"] = str(sgc.brokerId)
        resp = RemotingCommand(
            int(code), opaque=req.opaque, flag=1, remark=status, ext_fields=ext, body=body,
            serialize_type=req.serialize_type,
        )
        self._commit(allow_suspend, has_commit, conn, group, topic, qid, h.commitOffset)
        return resp

    def _commit(self, allow_suspend, has_commit, conn, group, topic, qid, offset) -> None:
        # Only the first attempt of a pull carries a fresh commit offset; slaves take offsets from the master.
        if allow_suspend and has_commit and not self.role.is_slave:
            self.offsets.commit_offset(conn.remote_addr, group, topic, qid, offset)

    def _generate_offset_moved_event(self, group: str, topic: str, qid: int, requested: int, new: int) -> None:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.consumer import MessageQueue, OffsetMovedEvent

        try:
            event = OffsetMovedEvent(
                consumerGroup=group,
                messageQueue=MessageQueue(topic=topic, brokerName=self.broker_config.brokerName, queueId=qid),
                offsetRequest=requested,
                offsetNew=new,
            )
            props = {MessageConst.TAGS: group, MessageConst.KEYS: group}
            msg = MessageExtBrokerInner(
                topic=mixall.OFFSET_MOVED_EVENT,
                queue_id=0,
                body=event.to_json(),
                properties=props,
                properties_string="\x02".join(k + "\x01" + v for k, v in props.items()),
                tags_code=java_string_hash(group),
                born_timestamp=now_ms(),
                born_host=self.store_host,
                store_host=self.store_host,
            )
            self.store.put_message(msg)
        except Exception:  # noqa: BLE001 - the event is informational only
            log.exception("writing OFFSET_MOVED_EVENT failed")

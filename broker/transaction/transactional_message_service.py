"""TransactionalMessageService: ending transactions (idempotently) and one check round over the half queues.

The check round follows RocketMQ 4.9.7's ``TransactionalMessageServiceImpl.check``
(spec broker-behaviour.md §10): op markers fill a ``halfOffset -> opOffset``
remove map; half messages not yet resolved and old enough are re-appended to
the half queue (the copy carries the incremented TRANSACTION_CHECK_TIMES) and
the producer group is asked for the state of the copy; messages checked
``transactionCheckMax`` times or older than the file reserved time go to
TRANS_CHECK_MAX_TIME_TOPIC. Progress is the CID_RMQ_SYS_TRANS consumer offset
of the half queue and of its op queue, so a restart resumes where it stopped.

Ending a transaction twice (a late END_TRANSACTION plus the answer to a check,
or a retried oneway) writes the final message and the op marker only once:
resolved transactions are remembered by UNIQ_KEY and by half queue offset, and
after a restart the recent op markers (and the index, for copies) tell.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from broker.producer_manager import ProducerManager
from broker.topic_config_manager import TopicConfigManager
from broker.transaction.transactional_message_bridge import PullResult, TransactionalMessageBridge
from broker.transaction.transactional_message_util import (
    CHECK_MAX_TIME_TOPIC,
    HALF_TOPIC,
    OP_TOPIC,
    REMOVE_TAG,
    encode_message_ext,
    java_properties_string,
    parse_op_body,
)
from common.message import (
    MessageConst,
    MessageExt,
    MessageExtBrokerInner,
    MessageSysFlag,
    decode_messages,
    properties_to_string,
)
from common.perm import PERM_READ, PERM_WRITE
from common.pull_status import PullStatus
from common.util import now_ms
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.header.semantics import CheckTransactionStateRequestHeader

__all__ = ["TransactionalMessageService", "TransactionCheckListener", "EndResult", "COMMIT", "ROLLBACK"]

log = logging.getLogger(__name__)

COMMIT = MessageSysFlag.TRANSACTION_COMMIT_TYPE
ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE

MAX_PROCESS_TIME_LIMIT_MS = 60_000
MAX_RETRY_COUNT_WHEN_HALF_NULL = 1
OP_PULL_NUMS = 32
RESOLVED_CACHE_MAX = 100_000
OP_REBUILD_WINDOW = 50_000  # op markers read back at start to stay idempotent across restarts
TCMT_QUEUE_NUMS = 1
YIELD_EVERY = 64  # half messages examined between two yields of a check pass


def _long(s: str | None, default: int = -1) -> int:
    try:
        return int(s) if s is not None else default
    except ValueError:
        return -1


@dataclass(slots=True)
class EndResult:
    """Outcome of ending one transaction: ``code``/``remark`` for the response, ``written`` when a final message went out."""

    code: int
    remark: str | None = None
    written: bool = False
    duplicate: bool = False


class TransactionCheckListener:
    """Acts on the check decisions: ask the producer group, or discard the half message."""

    def __init__(self, bridge: TransactionalMessageBridge, producer_manager: ProducerManager,
                 topic_config_manager: TopicConfigManager):
        self.bridge = bridge
        self.producers = producer_manager
        self.topics = topic_config_manager
        self.checks_sent = 0
        self.discarded = 0
        self._rand = random.Random()

    def resolve_half_msg(self, ext: MessageExt) -> bool:
        """Send CHECK_TRANSACTION_STATE (oneway) about ``ext`` (the re-appended copy) to one live producer channel."""
        uniq = ext.properties.get(MessageConst.UNIQ_KEY)
        hdr = CheckTransactionStateRequestHeader(
            tranStateTableOffset=ext.queue_offset,
            commitLogOffset=ext.commit_log_offset,
            msgId=uniq,
            transactionId=uniq,
            offsetMsgId=ext.msg_id,
        )
        group = ext.properties.get(MessageConst.PRODUCER_GROUP)
        real = dataclasses.replace(ext)  # a shallow copy: the caller replaces what it changes
        real.topic = ext.properties.get(MessageConst.REAL_TOPIC, ext.topic)
        real.queue_id = _long(ext.properties.get(MessageConst.REAL_QID), 0)
        ch = self.producers.get_available_channel(group) if group else None
        if ch is None:
            log.warning("check transaction failed, no live channel of producer group %s", group)
            return False
        cmd = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, hdr, encode_message_ext(real), oneway=True)
        try:
            ch.invoke_oneway(cmd)
        except Exception as e:  # noqa: BLE001 - a dead channel only delays the next check
            log.warning("check transaction state to %s failed: %s", ch.remote_addr, e)
            return False
        self.checks_sent += 1
        return True

    async def resolve_discard_msg(self, ext: MessageExt) -> None:
        """Copy a half message checked too often (or too old) to TRANS_CHECK_MAX_TIME_TOPIC."""
        log.error("half message %s checked too many times or too old; moving it to %s", ext.msg_id, CHECK_MAX_TIME_TOPIC)
        tc = self.topics.create_topic_in_send_message_back_method(CHECK_MAX_TIME_TOPIC, TCMT_QUEUE_NUMS,
                                                                  PERM_READ | PERM_WRITE, 0)
        props = dict(ext.properties)
        inner = MessageExtBrokerInner.from_ext(
            ext,
            topic=tc.topicName if tc is not None else CHECK_MAX_TIME_TOPIC,
            queue_id=self._rand.randrange(99999999) % TCMT_QUEUE_NUMS,
            properties=props,
            properties_string=java_properties_string(props),
        )
        r = await self.bridge.put_message(inner)
        if r is not None and r.is_ok():
            self.discarded += 1
        else:
            log.error("putting the discarded half message to %s failed: %s", CHECK_MAX_TIME_TOPIC,
                      None if r is None else r.status)


class TransactionalMessageService:
    """Commit/rollback of half messages and the check algorithm."""

    def __init__(self, bridge: TransactionalMessageBridge, *, file_reserved_hours: int = 72,
                 clock: Callable[[], int] = now_ms):
        self.bridge = bridge
        self.file_reserved_ms = file_reserved_hours * 3600 * 1000
        self.clock = clock
        self._resolved: OrderedDict[str, int] = OrderedDict()  # UNIQ_KEY (or @offset) -> COMMIT/ROLLBACK
        self._resolved_offsets: set[int] = set()  # half queue offsets with an op marker
        # UNIQ_KEY (or @offset) -> commit-log offset of a final message whose put failed after it was
        # appended (DLedger: the quorum did not answer in time); settled by bridge.append_outcome
        self._unconfirmed_final: dict[str, int] = {}
        self._rebuilt = False

    # -- idempotency ------------------------------------------------------------------

    @staticmethod
    def _key(half: MessageExt) -> str:
        return half.properties.get(MessageConst.UNIQ_KEY) or f"@{half.commit_log_offset}"

    def _remember(self, half: MessageExt, kind: int) -> None:
        self._resolved[self._key(half)] = kind
        self._resolved.move_to_end(self._key(half))
        while len(self._resolved) > RESOLVED_CACHE_MAX:
            self._resolved.popitem(last=False)
        self._resolved_offsets.add(half.queue_offset)

    def rebuild_resolved(self) -> None:
        """Read back the recent op markers (after a restart the memory of resolved transactions is empty)."""
        self._rebuilt = True
        store = self.bridge.store
        for qid in self.bridge.fetch_half_queue_ids():
            hi = store.get_max_offset_in_queue(OP_TOPIC, qid)
            off = max(store.get_min_offset_in_queue(OP_TOPIC, qid), hi - OP_REBUILD_WINDOW)
            while off < hi:
                pr = self.bridge.get_op_messages(qid, off, OP_PULL_NUMS)
                if pr.status is not PullStatus.FOUND or pr.next_begin_offset <= off:
                    break
                for m in pr.msgs:
                    if m.properties.get(MessageConst.TAGS) == REMOVE_TAG:
                        v = parse_op_body(m.body)
                        if v >= 0:
                            self._resolved_offsets.add(v)
                off = pr.next_begin_offset

    def _already_resolved(self, half: MessageExt) -> int | None:
        """COMMIT/ROLLBACK if this transaction was ended before, 0 if ended but the kind is unknown, else None."""
        if not self._rebuilt:
            self.rebuild_resolved()
        kind = self._resolved.get(self._key(half))
        if kind is not None:
            return kind
        if half.queue_offset in self._resolved_offsets:
            return 0
        uniq = half.properties.get(MessageConst.UNIQ_KEY)
        store = self.bridge.store
        # copies exist only for half messages a check round has already visited
        maybe_copied = (MessageConst.TRANSACTION_CHECK_TIMES in half.properties
                        or half.queue_offset < self.bridge.fetch_consume_offset(HALF_TOPIC, half.queue_id))
        if uniq and maybe_copied and store.index_service is not None:
            # another copy of the same transaction (re-appended by a check) may have been ended
            qr = store.query_message(HALF_TOPIC, uniq, 64, 0, self.clock() + 1000)
            try:
                for copy in decode_messages(qr.body()):
                    if copy.properties.get(MessageConst.UNIQ_KEY) == uniq and copy.queue_offset in self._resolved_offsets:
                        return 0
            except ValueError:
                pass
        return None

    # -- end transaction -------------------------------------------------------------

    def find_half(self, commit_log_offset: int) -> MessageExt | None:
        return self.bridge.look_message_by_offset(commit_log_offset)

    async def end_transaction(self, half: MessageExt, kind: int, commit_log_offset: int,
                              put_final: Callable[[MessageExtBrokerInner], Awaitable[tuple]]) -> EndResult:
        """Commit (``await put_final(inner)`` -> (code, remark, stored[, unconfirmed offset])) or roll
        back a verified half message.

        The final message and the op marker are awaited until stored (DLedger: replicated to a
        quorum). A commit whose final message could not be stored answers the store's error: the
        half message stays unresolved and the check asks the producer again, as in RocketMQ.
        """
        prior = self._already_resolved(half)
        if prior is not None:
            if prior and prior != kind:
                what = "committed" if prior == COMMIT else "rolled back"
                return EndResult(ResponseCode.SYSTEM_ERROR, f"the transaction was already {what}", duplicate=True)
            return EndResult(ResponseCode.SUCCESS, duplicate=True)
        key = self._key(half)
        pending = self._unconfirmed_final.get(key)
        if pending is not None:
            # an earlier commit's final message was appended but not confirmed (DLedger: no quorum
            # in time); it may still commit, so it is never written twice
            outcome = self.bridge.append_outcome(pending)
            if outcome is None:
                return EndResult(ResponseCode.SYSTEM_ERROR, "an earlier commit of this transaction is not settled yet")
            del self._unconfirmed_final[key]
            if outcome:
                if kind != COMMIT:
                    self._remember(half, COMMIT)
                    return EndResult(ResponseCode.SYSTEM_ERROR, "the transaction was already committed",
                                     duplicate=True)
                await self.bridge.put_op_message(half)
                self._remember(half, kind)
                return EndResult(ResponseCode.SUCCESS, written=True)
        if kind == COMMIT:
            inner = end_message_transaction(half, commit_log_offset)
            code, remark, stored, *unconfirmed = await put_final(inner)
            if not stored:
                if unconfirmed and unconfirmed[0] >= 0:
                    self._unconfirmed_final[key] = unconfirmed[0]
                    while len(self._unconfirmed_final) > RESOLVED_CACHE_MAX:
                        self._unconfirmed_final.pop(next(iter(self._unconfirmed_final)))
                return EndResult(code, remark)
            # the final message is stored: the commit succeeded; a missing op marker only means a
            # later check finds the copy resolved through the remembered key (or asks again)
            await self.bridge.put_op_message(half)
            self._remember(half, kind)
            return EndResult(code, remark, written=True)
        if await self.bridge.put_op_message(half):
            self._remember(half, kind)
        # else (as RocketMQ) still SUCCESS: without its op marker the half message is checked again
        # and the producer's repeated rollback writes the marker then
        return EndResult(ResponseCode.SUCCESS)

    # -- the check round ----------------------------------------------------------------

    async def check(self, transaction_timeout_ms: int, transaction_check_max: int,
                    listener: TransactionCheckListener) -> None:
        """One pass over every half queue (RocketMQ 4.9.7 semantics); other work runs every few messages
        and while the re-appended copies are being stored."""
        for qid in self.bridge.fetch_half_queue_ids():
            try:
                await self._check_queue(qid, transaction_timeout_ms, transaction_check_max, listener)
            except Exception:  # noqa: BLE001 - one bad queue must not stop the service
                log.exception("transaction check of half queue %d failed", qid)

    async def _check_queue(self, qid: int, timeout_ms: int, check_max: int,
                           listener: TransactionCheckListener) -> None:
        b = self.bridge
        start = self.clock()
        half_offset = b.fetch_consume_offset(HALF_TOPIC, qid)
        op_offset = b.fetch_consume_offset(OP_TOPIC, qid)
        if half_offset < 0 or op_offset < 0:
            log.error("half queue %d has an illegal offset (half %d, op %d); skipped", qid, half_offset, op_offset)
            return
        done_op: list[int] = []
        remove: dict[int, int] = {}
        pr = self._fill_op_remove_map(remove, qid, op_offset, half_offset, done_op)
        null_count = 1
        new_offset = half_offset
        i = half_offset
        steps = 0
        while True:
            steps += 1
            if steps % YIELD_EVERY == 0:
                await asyncio.sleep(0)
            if self.clock() - start > MAX_PROCESS_TIME_LIMIT_MS:
                log.info("half queue %d: check time limit reached", qid)
                break
            if i in remove:
                done_op.append(remove.pop(i))
            else:
                got = b.get_half_messages(qid, i, 1)
                ext = got.msgs[0] if got.msgs else None
                if ext is None:
                    null_count += 1
                    if null_count - 1 > MAX_RETRY_COUNT_WHEN_HALF_NULL:
                        break
                    if got.status is PullStatus.NO_NEW_MSG:
                        break
                    i = new_offset = got.next_begin_offset
                    continue
                if self._need_discard(ext, check_max) or self._need_skip(ext):
                    await listener.resolve_discard_msg(ext)
                    i += 1
                    new_offset = i
                    continue
                if ext.store_timestamp >= start:
                    break  # stored after this round began: next round
                age = self.clock() - ext.born_timestamp
                immunity = timeout_ms
                immunity_s = ext.properties.get(MessageConst.CHECK_IMMUNITY_TIME_IN_SECONDS)
                if immunity_s is not None:
                    v = _long(immunity_s)
                    immunity = timeout_ms if v == -1 else v * 1000
                    if age < immunity and await self._check_prepare_queue_offset(remove, done_op, ext):
                        i += 1
                        new_offset = i
                        continue
                elif 0 <= age < immunity:
                    break  # too young to check; the rest is younger still
                ops = pr.msgs if pr is not None else []
                need_check = ((not ops and age > immunity)
                              or (ops and ops[-1].born_timestamp - start > timeout_ms)
                              or age <= -1)
                if need_check:
                    copy = await self._put_back_half_msg(ext)
                    if copy is None:
                        break  # the store refused: try again next round
                    listener.resolve_half_msg(copy)
                else:
                    # not decidable yet: read more op markers and look at the same offset again
                    had_ops = bool(ops)
                    pr = self._fill_op_remove_map(remove, qid, pr.next_begin_offset if pr else op_offset,
                                                  half_offset, done_op)
                    if not had_ops and (pr is None or not pr.msgs):
                        break  # nothing more to learn this round
                    continue
            i += 1
            new_offset = i
        if new_offset != half_offset:
            b.update_consume_offset(HALF_TOPIC, qid, new_offset)
        new_op = _calculate_op_offset(done_op, op_offset)
        if new_op != op_offset:
            b.update_consume_offset(OP_TOPIC, qid, new_op)

    def _fill_op_remove_map(self, remove: dict[int, int], qid: int, op_offset: int, mini_offset: int,
                            done_op: list[int]) -> PullResult | None:
        pr = self.bridge.get_op_messages(qid, op_offset, OP_PULL_NUMS)
        if pr.status in (PullStatus.OFFSET_ILLEGAL, PullStatus.NO_MATCHED_MSG):
            self.bridge.update_consume_offset(OP_TOPIC, qid, pr.next_begin_offset)
            return pr
        if pr.status is PullStatus.NO_NEW_MSG:
            return pr
        for m in pr.msgs:
            if m.properties.get(MessageConst.TAGS) != REMOVE_TAG:
                log.error("illegal tag in op message at %d", m.queue_offset)
                continue
            v = parse_op_body(m.body)
            self._resolved_offsets.add(v)
            if v < mini_offset:
                done_op.append(m.queue_offset)
            else:
                remove[v] = m.queue_offset
        return pr

    def _need_discard(self, ext: MessageExt, check_max: int) -> bool:
        times_s = ext.properties.get(MessageConst.TRANSACTION_CHECK_TIMES)
        times = 1
        if times_s is not None:
            times = _long(times_s)
            if times >= check_max:
                return True
            times += 1
        ext.properties[MessageConst.TRANSACTION_CHECK_TIMES] = str(times)
        return False

    def _need_skip(self, ext: MessageExt) -> bool:
        return self.clock() - ext.born_timestamp > self.file_reserved_ms

    async def _check_prepare_queue_offset(self, remove: dict[int, int], done_op: list[int], ext: MessageExt) -> bool:
        prepared = ext.properties.get(MessageConst.TRAN_PREPARED_QUEUE_OFFSET)
        if prepared is None:
            return await self._put_immunity_back(ext)
        v = _long(prepared)
        if v == -1:
            return False
        if v in remove:
            done_op.append(remove.pop(v))
            return True
        return await self._put_immunity_back(ext)

    async def _put_immunity_back(self, ext: MessageExt) -> bool:
        r = await self.bridge.put_message(self.bridge.renew_immunity_half_message_inner(ext))
        return r is not None and r.is_ok()

    async def _put_back_half_msg(self, ext: MessageExt) -> MessageExt | None:
        """Re-append ``ext`` to the half queue (awaited until stored); the returned copy has the new offsets."""
        inner = self.bridge.renew_half_message_inner(ext)
        r = await self.bridge.put_message(inner)
        if r is None or not r.is_ok():
            log.error("re-appending half message %s failed: %s", ext.msg_id, None if r is None else r.status)
            return None
        copy = dataclasses.replace(ext)  # a shallow copy: the caller replaces what it changes
        copy.properties = dict(inner.properties)
        copy.properties_string = inner.properties_string
        copy.queue_offset = r.append_result.logics_offset
        copy.commit_log_offset = r.append_result.wrote_offset
        copy.store_timestamp = inner.store_timestamp
        return copy


def _calculate_op_offset(done: list[int], old: int) -> int:
    new = old
    for v in sorted(done):
        if v == new:
            new += 1
        elif v > new:
            break
    return new


def end_message_transaction(half: MessageExt, commit_log_offset: int) -> MessageExtBrokerInner:
    """The committed message: real topic/queue, COMMIT type, the half's properties string unchanged."""
    props = dict(half.properties)
    real_topic = props.pop(MessageConst.REAL_TOPIC, half.topic)
    real_qid = _long(props.pop(MessageConst.REAL_QID, None), 0)
    stored = half.properties_string or properties_to_string(half.properties)
    props.pop(MessageConst.TRANSACTION_PREPARED, None)
    props[MessageConst.WAIT] = "false"
    return MessageExtBrokerInner.from_ext(
        half, topic=real_topic, queue_id=max(real_qid, 0), properties=props, properties_string=stored,
        sys_flag=MessageSysFlag.reset_transaction_value(half.sys_flag, MessageSysFlag.TRANSACTION_COMMIT_TYPE),
        prepared_transaction_offset=commit_log_offset,
    )

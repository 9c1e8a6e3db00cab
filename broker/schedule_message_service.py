"""ScheduleMessageService: delivers delayed messages (delay levels) when they are due.

A put with ``DELAY`` > 0 (non-transactional or COMMIT) is parked in
``SCHEDULE_TOPIC_XXXX`` queue ``level - 1`` with ``REAL_TOPIC``/``REAL_QID``
(:func:`rewrite_delayed_message`); its consume-queue tag code is the delivery
time. One asyncio task per level walks that queue from the level's offset in
``delayOffset.json``: a unit not yet due makes the task sleep until exactly
its due time (never early); a due unit is rebuilt for its real topic/queue and
put; the level's offset advances only after a successful put (spec
broker-behaviour.md §9). New units in an idle level wake its task through a
CommitLog dispatcher, so nothing polls at 100 ms unless a put failed.

Master only: :meth:`start` / :meth:`stop` are the hooks a role change calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from broker.config_manager import ConfigManager, pretty_json
from broker.transaction.transactional_message_util import java_properties_string
from common import mixall
from common.message import (
    MessageConst,
    MessageExt,
    MessageExtBrokerInner,
    MessageSysFlag,
    properties_to_string,
)
from common.util import cancel_all, now_ms
from store.dispatch import DispatcherBase, DispatchRequest
from store.message_store import MessageStore, PutMessageResult

__all__ = [
    "ScheduleMessageService",
    "DelayOffsetManager",
    "rewrite_delayed_message",
    "delay_level_to_queue_id",
    "queue_id_to_delay_level",
]

log = logging.getLogger(__name__)

FIRST_DELAY_MS = 1000  # first run of a level task after start, as RocketMQ
DELAY_FOR_A_WHILE_MS = 100  # retry after a failed put / missing queue
DELAY_FOR_A_PERIOD_MS = 10_000  # retry after an unexpected error
IDLE_RECHECK_MS = 1000  # a drained level re-reads its queue this often even without a wake-up
PUT_WINDOW = 32  # due units of one level whose puts are awaited together (each waits for a quorum)
_SCHEDULE_TOPIC = mixall.SCHEDULE_TOPIC


def delay_level_to_queue_id(level: int) -> int:
    return level - 1


def queue_id_to_delay_level(queue_id: int) -> int:
    return queue_id + 1


def rewrite_delayed_message(msg: MessageExtBrokerInner, max_level: int) -> MessageExtBrokerInner:
    """Park a delayed message in SCHEDULE_TOPIC_XXXX (what RocketMQ's CommitLog does before appending).

    Only NOT_TYPE / COMMIT messages whose ``DELAY`` property (in the map) is > 0
    are rewritten; the level is clamped to ``max_level``; the properties string
    is re-serialized from the map in Java HashMap order (so it keeps ``WAIT``,
    byte for byte as RocketMQ's).
    Returns ``msg`` (changed in place) either way.
    """
    if max_level <= 0:
        return msg
    level_s = msg.properties.get(MessageConst.DELAY)
    if not level_s or msg.topic == mixall.SCHEDULE_TOPIC:
        return msg
    tx = MessageSysFlag.get_transaction_value(msg.sys_flag)
    if tx not in (MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE):
        return msg
    try:
        level = int(level_s)
    except ValueError:
        return msg
    if level <= 0:
        return msg
    props = dict(msg.properties)
    if level > max_level:
        level = max_level
        props[MessageConst.DELAY] = str(level)
    props[MessageConst.REAL_TOPIC] = msg.topic
    props[MessageConst.REAL_QID] = str(msg.queue_id)
    msg.properties = props
    msg.properties_string = java_properties_string(props)
    msg.topic = mixall.SCHEDULE_TOPIC
    msg.queue_id = delay_level_to_queue_id(level)
    return msg


class DelayOffsetManager(ConfigManager):
    """``config/delayOffset.json``: ``{"offsetTable":{level:offset}}`` (fastjson pretty format)."""

    def __init__(self, path: str):
        super().__init__(path)
        self.table: dict[int, int] = {}

    def encode(self) -> str:
        return pretty_json({"offsetTable": dict(sorted(self.table.items()))})

    def decode(self, tree: Any) -> None:
        table = tree.get("offsetTable") if isinstance(tree, dict) else None
        if not isinstance(table, dict):
            raise ValueError("delayOffset.json has no offsetTable")
        for k, v in table.items():
            self.table[int(k)] = int(v)


class _ScheduleDispatchWaker(DispatcherBase):
    """CommitLog dispatcher: wakes the level task when a unit lands in its SCHEDULE_TOPIC_XXXX queue."""

    __slots__ = ("_wake",)

    def __init__(self, wake: Callable[[int], None]):
        self._wake = wake

    def dispatch(self, request: DispatchRequest) -> None:
        if request.topic == mixall.SCHEDULE_TOPIC and request.msg_size > 0:
            self._wake(queue_id_to_delay_level(request.queue_id))

    def dispatch_many(self, requests: list[DispatchRequest]) -> None:
        # no call per record: most runs hold no SCHEDULE_TOPIC_XXXX record at all
        for request in requests:
            if request.topic == _SCHEDULE_TOPIC and request.msg_size > 0:
                self._wake(queue_id_to_delay_level(request.queue_id))


class ScheduleMessageService:
    """Delivers SCHEDULE_TOPIC_XXXX units to their real topic when due (one task per level)."""

    def __init__(
        self,
        store: MessageStore,
        delay_levels_ms: list[int],
        offset_path: str,
        *,
        flush_interval_ms: int = 10_000,
        clock: Callable[[], int] = now_ms,
    ):
        self.store = store
        self.delay_levels_ms = list(delay_levels_ms)
        self.max_delay_level = len(self.delay_levels_ms)
        self.offsets = DelayOffsetManager(offset_path)
        self.flush_interval_ms = flush_interval_ms
        self.clock = clock
        self.started = False
        self.delivered = 0
        self._tasks: list[asyncio.Task] = []
        self._events: dict[int, asyncio.Event] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waker_installed = False
        # level -> {queue offset: commit-log offset} of units at or past the level's offset whose put
        # failed after its DLedger entry was appended (-1: the message is stored), settled by _outcome
        # before the unit is put again
        self._unconfirmed: dict[int, dict[int, int]] = {}

    # -- offsets -----------------------------------------------------------------

    @property
    def offset_table(self) -> dict[int, int]:
        return self.offsets.table

    def load(self) -> bool:
        """Read delayOffset.json (or .bak) and clamp each level into its queue's [min, max]."""
        if not self.offsets.load():
            return False
        self.correct_delay_offsets()
        return True

    def correct_delay_offsets(self) -> None:
        for level in range(1, self.max_delay_level + 1):
            cur = self.offsets.table.get(level)
            cq = self._find_cq(level)
            if cur is None or cq is None:
                continue
            lo, hi = cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()
            fixed = min(max(cur, lo), hi)
            if fixed != cur:
                log.error("correct delay offset [level %d] from %d to %d (queue [%d, %d])", level, cur, fixed, lo, hi)
                self.offsets.table[level] = fixed

    def persist(self) -> None:
        self.offsets.persist()

    def running_stats(self) -> dict[str, str]:
        """``scheduleMessageOffset_<level>`` -> ``"<delay offset>,<queue max offset>"`` (GET_BROKER_RUNTIME_INFO)."""
        out = {}
        for level, off in sorted(self.offsets.table.items()):
            hi = self.store.get_max_offset_in_queue(mixall.SCHEDULE_TOPIC, delay_level_to_queue_id(level))
            out[f"scheduleMessageOffset_{level}"] = f"{off},{hi}"
        return out

    def _find_cq(self, level: int):
        return self.store.consume_queues.find(mixall.SCHEDULE_TOPIC, delay_level_to_queue_id(level))

    # -- put hook ------------------------------------------------------------------

    def rewrite(self, msg: MessageExtBrokerInner) -> MessageExtBrokerInner:
        return rewrite_delayed_message(msg, self.max_delay_level)

    # -- life cycle -----------------------------------------------------------------

    def start(self) -> None:
        """Start one delivery task per level and the periodic offset flush (idempotent)."""
        if self.started:
            return
        if not self.load():  # again: a slave that becomes master resumes from the synced file
            log.error("cannot reload %s; delivering from the offsets in memory", self.offsets.path)
        self.started = True
        self._loop = asyncio.get_running_loop()
        if not self._waker_installed:
            self.store.dispatchers.append(_ScheduleDispatchWaker(self._wake))
            self._waker_installed = True
        for level in range(1, self.max_delay_level + 1):
            ev = self._events[level] = asyncio.Event()
            self._tasks.append(self._loop.create_task(self._deliver_loop(level, ev), name=f"schedule-level-{level}"))
        self._tasks.append(self._loop.create_task(self._flush_loop(), name="schedule-flush"))
        log.info("schedule message service started with %d levels", self.max_delay_level)

    async def stop(self) -> None:
        """Stop delivering and persist the offsets (idempotent)."""
        if not self.started:
            return
        self.started = False
        await cancel_all(self._tasks)
        self._tasks.clear()
        self._events.clear()
        try:
            self.persist()
        except OSError:
            log.exception("persisting %s failed", self.offsets.path)

    def _wake(self, level: int) -> None:
        ev = self._events.get(level)
        if ev is None or self._loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            ev.set()
        else:  # dispatched from an executor thread (shutdown path)
            self._loop.call_soon_threadsafe(ev.set)

    async def _flush_loop(self) -> None:
        period = max(self.flush_interval_ms, 100) / 1000.0
        while True:
            await asyncio.sleep(period)
            try:
                self.persist()
            except OSError:
                log.exception("persisting %s failed", self.offsets.path)

    async def _deliver_loop(self, level: int, ev: asyncio.Event) -> None:
        await asyncio.sleep(FIRST_DELAY_MS / 1000.0)
        while True:
            # cleared before reading the queue: a unit dispatched after this point sets it again
            ev.clear()
            try:
                wait_ms = await self._deliver_due(level)
            except Exception:  # noqa: BLE001 - keep the level alive, as RocketMQ does
                log.exception("schedule level %d failed; retrying in %d ms", level, DELAY_FOR_A_PERIOD_MS)
                wait_ms = DELAY_FOR_A_PERIOD_MS
            if wait_ms == 0:
                await asyncio.sleep(0)  # yield between batches
            elif wait_ms is not None:
                # sleep until the head unit is due; later units of the level are due later still
                await asyncio.sleep(wait_ms / 1000.0)
            else:
                # drained: wait for the dispatcher to report a new unit (re-check each second anyway)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ev.wait(), IDLE_RECHECK_MS / 1000.0)

    async def _deliver_due(self, level: int, batch: int = 256) -> float | None:
        """Deliver due units of ``level``; return ms to wait (None: queue drained, 0: more to do now).

        Puts are awaited (``put_message_async``: in DLedger mode until a quorum has the
        message), up to ``PUT_WINDOW`` of consecutive due units at a time, and the level's
        offset only moves over units whose message is stored. A unit whose put failed after
        its DLedger entry was appended is not put again until the commit log tells that
        entry's fate (``append_outcome``): committed, the unit is done; lost, it is put
        again. So a delayed message is delivered once even when the quorum was missing at
        its due time.
        """
        cq = self._find_cq(level)
        table = self.offsets.table
        offset = table.get(level, 0)
        if cq is None:
            return None
        lo, hi = cq.get_min_offset_in_queue(), cq.get_max_offset_in_queue()
        if offset < lo:
            log.error("schedule CQ offset %d of level %d below min %d; moving up", offset, level, lo)
            offset = table[level] = lo
        if offset >= hi:
            if offset > hi:
                table[level] = hi
            return None
        known = self._unconfirmed.setdefault(level, {})
        for o in [o for o in known if o < offset]:
            del known[o]  # the level's offset moved past them (synced from another master)
        delay = self.delay_levels_ms[level - 1]
        done = 0
        while offset < hi and done < batch and self.started:
            # the window: consecutive due units from ``offset``, each settled (stored), to put, or skipped
            wait_ms: float | None = None
            window: list[tuple[int, MessageExtBrokerInner | None]] = []  # (unit offset, message to put)
            o = offset
            while o < hi and len(window) < PUT_WINDOW and done + len(window) < batch:
                unit = cq.get_unit(o)
                if unit is None:
                    wait_ms = DELAY_FOR_A_WHILE_MS
                    break
                phys, size, tags_code = unit
                now = self.clock()
                deliver_at = tags_code if tags_code <= now + delay else now  # clock went back: deliver now
                if deliver_at > now:
                    wait_ms = deliver_at - now
                    break
                if o in known:
                    outcome = self._outcome(known[o])
                    if outcome is None:
                        wait_ms = DELAY_FOR_A_WHILE_MS  # an earlier attempt may still commit: not twice
                        break
                    if outcome:
                        if known[o] >= 0:
                            self.delivered += 1
                        known[o] = -1  # stored: nothing to put, dropped once the offset passes it
                        window.append((o, None))
                        o += 1
                        continue
                    del known[o]
                window.append((o, self._timeup_message(phys, size)))
                o += 1
            if not window:
                return wait_ms
            puts = [(o, inner) for o, inner in window if inner is not None]
            results = dict(zip((o for o, _ in puts), await self._put_all(level, puts), strict=True)) if puts else {}
            if not self.started:
                return None  # stopped while waiting (role change): _put_all kept what is known
            advancing = True
            for o, inner in window:
                if inner is not None:
                    r = results[o]
                    if r is not None and r.is_ok():
                        self.delivered += 1
                        known[o] = -1
                    else:
                        log.warning("delivering delayed message of level %d failed: %s", level,
                                    None if r is None else r.status)
                        self._keep_unconfirmed(level, o, r)
                        advancing = False
                if advancing:
                    known.pop(o, None)
                    offset = o + 1
                    table[level] = offset
                    done += 1
            if not advancing:
                return DELAY_FOR_A_WHILE_MS
            if wait_ms is not None:
                return wait_ms
        return 0 if offset < hi and self.started else None

    def _timeup_message(self, phys: int, size: int) -> MessageExtBrokerInner | None:
        """The message to deliver for the unit at ``phys`` (None: nothing to deliver, discarded)."""
        ext = self.store.look_message_by_offset(phys, size)
        if ext is None:
            return None
        inner = message_timeup(ext)
        if inner is None or inner.topic == mixall.RMQ_SYS_TRANS_HALF_TOPIC:
            log.error("discarding schedule message at %d (real topic %r)", phys, None if inner is None else inner.topic)
            return None
        return inner

    def _keep_unconfirmed(self, level: int, offset: int, result: PutMessageResult | None) -> None:
        """Remember the unit at ``offset`` whose message may be stored although the level's offset did not
        move past it: stored (-1), or its DLedger entry was appended and may still commit."""
        known = self._unconfirmed.setdefault(level, {})
        if result is not None and result.is_ok():
            known[offset] = -1
            return
        ar = result.append_result if result is not None else None
        if ar is not None and ar.wrote_offset > 0:
            known[offset] = ar.wrote_offset  # the store tells later (a local log at once: not stored)

    def _outcome(self, wrote_offset: int) -> bool | None:
        """Whether the message of an earlier put at ``wrote_offset`` is stored (None: not known yet)."""
        if wrote_offset < 0:
            return True
        return self.store.append_outcome(wrote_offset)

    async def _put_all(self, level: int, puts: list[tuple[int, MessageExtBrokerInner]]) -> list[Any]:
        """Put the messages in order (they are appended in this order) and await all of them; if the
        service stops meanwhile, each outcome is remembered for the next start."""
        tasks = [asyncio.ensure_future(self.store.put_message_async(inner)) for _o, inner in puts]
        try:
            results = await asyncio.shield(asyncio.gather(*tasks, return_exceptions=True))
        except asyncio.CancelledError:
            for (o, _inner), t in zip(puts, tasks, strict=True):
                def keep(f: asyncio.Future, o: int = o) -> None:
                    ok = not f.cancelled() and f.exception() is None
                    self._keep_unconfirmed(level, o, f.result() if ok else None)

                t.add_done_callback(keep)
            raise
        out = []
        for r in results:
            if isinstance(r, BaseException):
                log.error("delayed message put raised: %r", r)
                r = None
            out.append(r)
        return out


def message_timeup(ext: MessageExt) -> MessageExtBrokerInner | None:
    """The message to put when a delayed one is due: real topic/queue, same stored properties string.

    RocketMQ serializes the properties before clearing ``DELAY`` and setting
    ``WAIT=false``, so the stored string still holds ``DELAY``/``REAL_TOPIC``/
    ``REAL_QID``; only the map (which decides a new delay) loses ``DELAY``.
    """
    props = dict(ext.properties)
    real_topic = props.get(MessageConst.REAL_TOPIC)
    try:
        real_qid = int(props.get(MessageConst.REAL_QID, ""))
    except ValueError:
        return None
    if not real_topic:
        return None
    stored = ext.properties_string or properties_to_string(props)
    props.pop(MessageConst.DELAY, None)
    props[MessageConst.WAIT] = "false"
    return MessageExtBrokerInner.from_ext(
        ext, topic=real_topic, queue_id=real_qid, properties=props, properties_string=stored
    )

"""DefaultMessageStore: wires CommitLog, ConsumeQueues, Index, checkpoint, reput and flush.

Each part is its own small class with explicit collaborators; this module composes
them (the CommitLog and its reput chosen from the config in :func:`log_parts_for`),
checks puts before they reach the log, answers the queue-offset lookups and runs the
load/recover/start/shutdown life cycle (spec message-and-store-format.md §8, §11).
Pull reads: store.get_message_service; reads by offset or key:
store.query_message_service; the waits after an append: store.disk_flush_and_ha.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable

from common.mapped_file import DiskFullError
from common.message import (
    MessageConst,
    MessageExt,
    MessageExtBatch,
    MessageExtBrokerInner,
)
from common.util import cancel_all, now_ms
from store.clean_commit_log_service import (
    CleanCommitLogService,
    clean_files_periodically,
    disk_partition_used_ratio,
)
from store.clean_consume_queue_service import CleanConsumeQueueService
from store.commit_log import SCHEDULE_TOPIC, CommitLog, TagsCodeCalculator
from store.config import BrokerRoleView, ConfiguredRole, FlushDiskType, MessageStoreConfig
from store.consume_queue import ConsumeQueueStore, is_valid_topic_name
from store.disk_flush_and_ha import DiskFlushAndHA
from store.disk_space_guard import DiskSpaceGuard, disk_runtime_info
from store.dispatch import (
    CommitLogDispatcher,
    CommitLogDispatcherBuildConsumeQueue,
    CommitLogDispatcherBuildIndex,
    DispatchRequest,
)
from store.flush_service import (
    FlushConsumeQueueService,
    FlushRealTimeService,
    GroupCommitService,
)
from store.get_message_service import GetMessageService
from store.index_service import IndexService
from store.message_store import (
    CommitLogBackend,
    GetMessageResult,
    MessageFilter,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
)
from store.query_message_service import QueryMessageService
from store.reput_message_service import ArrivalsListener, ArrivingListener, ReputMessageService
from store.running_flags import RunningFlags
from store.store_checkpoint import StoreCheckpoint
from store.store_lock import StoreLock
from store.store_recovery import recover_store
from store.store_stats_service import PUT_TIME_BUCKETS, StoreStatsService

__all__ = ["DefaultMessageStore", "TRANS_OP_HALF_TOPIC", "PUT_TIME_BUCKETS"]  # PUT_TIME_BUCKETS: store_stats_service

log = logging.getLogger(__name__)

TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
# putMessageDistributeTime (RocketMQ StoreStatsService): puts counted by how long they took


#: ``(config, tags_code, *, guard) -> log``
CommitLogFactory = Callable[..., CommitLogBackend]
#: ``(commit_log, dispatchers, **options) -> reput``, options as ReputMessageService takes them
ReputFactory = Callable[..., ReputMessageService]


def log_parts_for(config: MessageStoreConfig) -> tuple[CommitLogFactory, ReputFactory]:
    """The one place the store's CommitLog and reput are chosen from its config."""
    if config.enableDLegerCommitLog:
        # DLedger mode only (start-up time of the others)
        from store.dledger_commit_log import DLedgerCommitLog, dledger_reput_service

        return DLedgerCommitLog, dledger_reput_service
    return CommitLog, ReputMessageService


class DefaultMessageStore:
    """The message store of one broker (see the store contract in the module docs).

    Implements :class:`store.message_store.MessageStore`. ``commit_log_factory`` and
    ``reput_factory`` default to :func:`log_parts_for` the config.
    """

    def __init__(
        self,
        config: MessageStoreConfig,
        *,
        store_host: tuple[str, int] = ("127.0.0.1", 10911),
        arriving_listener: ArrivingListener | None = None,
        arrivals_listener: ArrivalsListener | None = None,
        commit_log_factory: CommitLogFactory | None = None,
        reput_factory: ReputFactory | None = None,
        disk_usage: Callable[[str], float] = disk_partition_used_ratio,
        clock: Callable[[], int] = now_ms,
        clean_first_delay_ms: int = 60_000,
        role: BrokerRoleView | None = None,
    ) -> None:
        self.config = config
        #: the live role (the broker's RoleState): puts are refused while it says SLAVE
        self.role = role if role is not None else ConfiguredRole(config.brokerRole)
        self.store_host = store_host
        self.tags_code = TagsCodeCalculator(config.delay_levels_ms())
        default_log, default_reput = log_parts_for(config)
        # a full disk: every file reserves its blocks, the guard refuses what cannot fit (DISK_FULL)
        self.running_flags = RunningFlags()
        self.writeable = True
        self.disk_guard = DiskSpaceGuard(
            self.running_flags, self._writeable_changed, disk_usage=disk_usage,
            commit_log_paths=[config.storePathDLedgerCommitLog or config.storePathRootDir]
            if config.enableDLegerCommitLog else [config.commit_log_dir],
            consume_queue_path=config.consume_queue_dir)
        self.commit_log: CommitLogBackend = (commit_log_factory or default_log)(config, self.tags_code,
                                                                                 guard=self.disk_guard)
        self.consume_queues = ConsumeQueueStore(config.consume_queue_dir, config.mapped_file_size_consume_queue,
                                                guard=self.disk_guard.queue_gate)
        self.checkpoint: StoreCheckpoint | None = None
        self.index_service: IndexService | None = None
        self.dispatchers: list[CommitLogDispatcher] = [CommitLogDispatcherBuildConsumeQueue(self.consume_queues.put_message_position_info,
                                                                       self.consume_queues.find_or_create)]
        self.reput: ReputMessageService = (reput_factory or default_reput)(
            self.commit_log,
            self.dispatchers,
            arriving_listener=arriving_listener,
            arrivals_listener=arrivals_listener,
            notify_arriving=lambda: not self.role.is_slave,
            skip_corrupt=lambda: not self.role.is_slave,
            on_dispatched=self._on_dispatched,
        )
        # appends leave their DispatchRequest for the reput: records are not parsed back (a DLedger
        # log's reput parses the committed entries)
        self.commit_log.enable_prepared_dispatch()
        self.flush_cq_service: FlushConsumeQueueService | None = None
        # extra background services started by start(): factories of coroutines
        self.extra_services: list[Callable[[], Awaitable[None]]] = []
        # file cleanup (RocketMQ cleanFilesPeriodically): run by start() every cleanResourceInterval
        self._clock = clock
        self._clean_first_delay_ms = clean_first_delay_ms
        self.clean_commit_log_service = CleanCommitLogService(
            config, self.commit_log.mapped_file_queue, disk_usage=disk_usage, disk_full=self.disk_guard)
        self.clean_consume_queue_service = CleanConsumeQueueService(
            config, self.commit_log.get_min_offset, lambda: list(self.consume_queues), None)
        # index files that fill up are flushed (msync of up to 420 MB) off the dispatch path
        self._index_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._valid_topics: set[str] = set()
        self.shutdown_flag = True
        self.last_exit_ok = True
        self._tasks: list[asyncio.Task] = []
        self.lock = StoreLock(config.storePathRootDir, config.lock_path)
        self._logics_ts = 0
        self.put_message_times_total = 0
        self.put_message_size_total = 0
        # putMessageDistributeTime: only puts that waited (SYNC_FLUSH, replicas) can take a millisecond
        # or more, so only those are timed; every other put falls in the first bucket, derived from
        # put_calls (no clock read on the append path)
        self.put_calls = 0
        self.stats = StoreStatsService(lambda: self.put_calls)
        self.record_put_time = self.stats.record_put_time
        # the flush / HA waits after an append (the flush services are set by start())
        self.waits = DiskFlushAndHA(config, self.commit_log, self.record_put_time, self.role)
        self._wait_one = self.waits.wait_one
        self.reader = GetMessageService(config, self.commit_log, self.consume_queues,
                                        lambda: self.shutdown_flag and self.checkpoint is None, self.role)
        self.queries = QueryMessageService(self.commit_log, lambda: self.index_service)
        self.start_time_ms = now_ms()

    @property
    def group_commit(self) -> GroupCommitService | None:
        """The SYNC_FLUSH group commit once started."""
        return self.waits.group_commit

    @property
    def flush_service(self) -> FlushRealTimeService | None:
        """The ASYNC_FLUSH flush service once started."""
        return self.waits.flush_service

    @property
    def replica_waiter(self) -> Callable[[int], Awaitable[PutMessageStatus]] | None:
        """SYNC_MASTER replication hook (HA): ``await replica_waiter(end_offset) -> PutMessageStatus``."""
        return self.waits.replica_waiter

    @replica_waiter.setter
    def replica_waiter(self, waiter: Callable[[int], Awaitable[PutMessageStatus]] | None) -> None:
        self.waits.replica_waiter = waiter

    # -- life cycle -------------------------------------------------------------

    def load(self) -> bool:
        """Open the files, recover (normal or abnormal) and create the abort file."""
        if not self.lock.acquire():
            return False
        try:
            ok = self._load_locked()
        except BaseException:
            self.lock.release()
            raise
        if not ok:
            self.lock.release()
        return ok

    def _load_locked(self) -> bool:
        abort = self.config.abort_path
        self.last_exit_ok = not os.path.exists(abort)
        log.info("last shutdown %s", "normal" if self.last_exit_ok else "abnormal")
        ok = self.commit_log.load() and self.consume_queues.load()
        if not ok:
            log.error("store load failed: a mapped file has the wrong size or cannot be mapped")
            return False
        try:
            self.checkpoint = StoreCheckpoint(self.config.checkpoint_path)
        except OSError as e:  # e.g. DiskFullError: no room for its 4 KiB
            log.error("store load failed: cannot open the checkpoint: %s", e)
            return False
        self._index_executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="index-flush")
        self.index_service = IndexService(self.config, self.config.index_dir, self.checkpoint,
                                          run_in_background=self._index_executor.submit,
                                          guard=self.disk_guard.queue_gate)
        self.clean_consume_queue_service.index_service = self.index_service
        if not self.index_service.load(self.last_exit_ok):
            log.error("index load failed")
            return False
        # the reput ends each pass with end_batch: the index header is written once per pass
        self.dispatchers.append(
            CommitLogDispatcherBuildIndex(self.index_service, lambda: self.config.messageIndexEnable)
        )
        self.reput.reput_from_offset = recover_store(self.config, self.commit_log, self.consume_queues,
                                                     self.checkpoint, self.index_service, self.dispatchers,
                                                     self._dispatch, self.last_exit_ok)
        with open(abort, "wb"):
            pass
        self.shutdown_flag = False
        return True

    def _dispatch(self, req: DispatchRequest) -> None:
        for d in self.dispatchers:
            d.dispatch(req)
        self._on_dispatched(req)

    def _on_dispatched(self, req: DispatchRequest) -> None:
        self._logics_ts = req.store_timestamp
        if self.checkpoint is not None:
            self.checkpoint.logics_msg_timestamp = req.store_timestamp
            if self.role.is_slave:
                self.checkpoint.physic_msg_timestamp = req.store_timestamp

    def start(self) -> None:
        """Catch up dispatch, then start reput/flush services as tasks on the running loop."""
        self.dispatch_pending()
        assert self.checkpoint is not None
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self.reput.run(), name="reput"))
        self.disk_guard.probe()  # a full disk refuses the first put, not the one after the first probe
        self._tasks.append(loop.create_task(self.disk_guard.run(), name="disk-space-guard"))
        if self.config.enableDLegerCommitLog:
            self.commit_log.start()  # DLedger persists and replicates its own log: no CommitLog flush services
        elif self.config.flushDiskType is FlushDiskType.SYNC_FLUSH:
            self.waits.group_commit = gc = GroupCommitService(self.commit_log, self.checkpoint)
            self._tasks.append(loop.create_task(gc.run(), name="group-commit"))
        else:
            self.waits.flush_service = fs = FlushRealTimeService(self.commit_log, self.config, self.checkpoint)
            self._tasks.append(loop.create_task(fs.run(), name="flush-commitlog"))
        self.flush_cq_service = FlushConsumeQueueService(self.consume_queues, self.config, self.checkpoint,
                                                         lambda: self._logics_ts)
        self._tasks.append(loop.create_task(self.flush_cq_service.run(), name="flush-cq"))
        if self.commit_log.deletes_expired_files:
            self._tasks.append(loop.create_task(clean_files_periodically(
                self.clean_commit_log_service, self.clean_consume_queue_service, self.config.cleanResourceInterval,
                first_delay_ms=self._clean_first_delay_ms, clock=self._clock), name="clean-files"))
        for factory in self.extra_services:
            self._tasks.append(loop.create_task(factory()))

    async def shutdown(self) -> None:
        """Stop services, dispatch what is left, flush everything, write the checkpoint, delete abort."""
        if self.shutdown_flag:
            return
        self.shutdown_flag = True
        self.reput.stop()
        for svc in (self.group_commit, self.flush_service, self.flush_cq_service):
            if svc is not None:
                svc.stop()
        if self.group_commit is not None:
            # let pending writers get their answer
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.group_commit._round(), 10)
        await cancel_all(self._tasks)
        self._tasks.clear()
        if self.config.enableDLegerCommitLog:
            await self.commit_log.stop()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self._shutdown_blocking)

    def shutdown_sync(self) -> None:
        """Shutdown without a running loop (tools/tests that never called start())."""
        if self.shutdown_flag:
            return
        self.shutdown_flag = True
        self._shutdown_blocking()

    def _shutdown_blocking(self) -> None:
        self.dispatch_pending()
        self.commit_log.flush_until(self.commit_log.get_max_offset())
        ckpt = self.checkpoint
        if ckpt is not None:
            ts = self.commit_log.store_timestamp
            if ts:
                ckpt.physic_msg_timestamp = ts
        self.consume_queues.flush(0)
        if ckpt is not None and self._logics_ts:
            ckpt.logics_msg_timestamp = self._logics_ts
        if self._index_executor is not None:
            self._index_executor.shutdown(wait=True)  # a full file's background flush finishes first
        if self.index_service is not None:
            self.index_service.shutdown()
        if ckpt is not None:
            ckpt.shutdown()
        caught_up = self.reput.behind() <= 0
        self.commit_log.shutdown()
        self.consume_queues.shutdown()
        if caught_up:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.config.abort_path)
        self.lock.release()

    def destroy(self) -> None:
        """Delete every file of the store (tests, tools)."""
        self.commit_log.destroy()
        self.consume_queues.destroy_all()
        if self.index_service is not None:
            self.index_service.destroy()
        for p in (self.config.abort_path, self.config.checkpoint_path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(p)

    # -- dispatch -------------------------------------------------------------------

    def dispatch_pending(self) -> int:
        """Dispatch every record not yet dispatched (synchronously); return how many."""
        total = 0
        while True:
            try:
                n = self.reput.do_reput()
            except DiskFullError as e:  # the reput task retries once space returns
                log.error("dispatch stopped at %d: %s", self.reput.reput_from_offset, e)
                return total
            total += n
            if n == 0:
                return total

    def now_dispatched(self) -> bool:
        return self.reput.behind() <= 0

    def dispatch_behind_bytes(self) -> int:
        return self.reput.behind()

    # -- put ---------------------------------------------------------------------------

    def _check_put(self, msg: MessageExtBrokerInner) -> PutMessageResult | None:
        if self.shutdown_flag:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="message store is shut down")
        if self.role.is_slave:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="broker is a slave")
        if not self.writeable:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE,
                                    remark="message store is not writeable (disk full?)")
        if msg.topic not in self._valid_topics:
            if not is_valid_topic_name(msg.topic):
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=f"illegal topic name {msg.topic!r}")
            if len(self._valid_topics) > 100_000:
                self._valid_topics.clear()
            self._valid_topics.add(msg.topic)
        if msg.queue_id < 0:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark=f"illegal queue id {msg.queue_id}")
        if msg.store_host is None:
            msg.store_host = self.store_host
        return None

    def _after_put(self, result: PutMessageResult) -> None:
        if result.append_result is not None:
            self.put_message_times_total += result.append_result.msg_num
            self.put_message_size_total += result.append_result.wrote_bytes
        self.reput.wakeup()

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Append one message (no waiting for disk); see :meth:`put_message_async`."""
        # the checks of _check_put, inlined for the common case (hot path)
        if (self.shutdown_flag or not self.writeable or self.role.is_slave
                or msg.topic not in self._valid_topics or msg.queue_id < 0 or msg.store_host is None):
            bad = self._check_put(msg)
            if bad is not None:
                return bad
        result = self.commit_log.put_message(msg)
        self.put_calls += 1
        ar = result.append_result
        if ar is not None and result.status is PutMessageStatus.PUT_OK:
            self.put_message_times_total += ar.msg_num
            self.put_message_size_total += ar.wrote_bytes
            self.reput.wakeup()
        return result

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """Append a client batch as consecutive records."""
        bad = self._check_put(batch)
        if bad is not None:
            return bad
        if batch.properties.get(MessageConst.DELAY, "0") not in ("", "0"):
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, remark="batch messages cannot be delayed")
        result = self.commit_log.put_messages(batch)
        self.put_calls += 1
        if result.is_ok():
            self._after_put(result)
        return result

    def put_message_list(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]:
        """Append many single messages in one call: ``[put_message(m) for m in msgs]``, cheaper.

        Same per-message results and statuses (an illegal message fails alone, the
        others go in, in list order with consecutive queue offsets); one store
        timestamp for the list and one wake of the reput. No waiting for disk: see
        :meth:`put_message_list_async`.
        """
        cl = self.commit_log
        check = self._check_put
        valid = self._valid_topics
        if self.shutdown_flag or not self.writeable or self.role.is_slave:
            valid = ()  # every message gets its refusal from _check_put
        # the checks of _check_put, inlined for the common case: every message passes
        passed = True
        for m in msgs:
            if m.topic not in valid or m.queue_id < 0 or m.store_host is None:
                passed = False
                break
        if passed:
            results = cl.put_message_list(msgs)
            calls = len(msgs)
        else:
            checked: list[PutMessageResult | None] = [check(m) for m in msgs]
            good = [m for m, r in zip(msgs, checked, strict=True) if r is None]
            it = iter(cl.put_message_list(good) if good else ())
            results = [r if r is not None else next(it) for r in checked]
            calls = len(good)
        times = size = 0
        ok = PutMessageStatus.PUT_OK
        for r in results:
            ar = r.append_result
            if ar is not None and r.status is ok:
                times += ar.msg_num
                size += ar.wrote_bytes
        self.put_calls += calls
        self.put_message_times_total += times
        self.put_message_size_total += size
        self.reput.wakeup()
        return results  # type: ignore[return-value]

    async def put_message_list_async(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]:
        """:meth:`put_message_list`, then wait once for the whole list: the SYNC_FLUSH group
        commit up to the last record whose message waits (WAIT not "false") and, on a
        SYNC_MASTER, the replicas. A message whose wait failed gets FLUSH_DISK_TIMEOUT (or
        the replication status) like :meth:`put_message_async` would give it."""
        if self.config.enableDLegerCommitLog:
            return await self._put_list_replicated(msgs)
        results = self.put_message_list(msgs)
        await self.waits.wait_list(msgs, results)
        return results

    def put_message_list_then(self, msgs: list[MessageExtBrokerInner],
                              done: Callable[[list[PutMessageResult]], None]) -> bool:
        """:meth:`put_message_list_async` by callback: ``done(results)`` once durable (maybe at once);
        False, nothing appended, when the waits need the coroutine (DLedger, replicas, not started)."""
        if self.config.enableDLegerCommitLog or not self.waits.can_wait_then():
            return False
        results = self.put_message_list(msgs)
        self.waits.wait_list_then(msgs, results, lambda: done(results))
        return True

    async def put_message_async(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Append, then (SYNC_FLUSH, WAIT not "false") wait for the group-commit fsync."""
        if self.config.enableDLegerCommitLog:
            return await self._put_replicated(msg, self.commit_log.put_message_async)
        return await self._wait_one(msg, self.put_message(msg))

    async def put_messages_async(self, batch: MessageExtBatch) -> PutMessageResult:
        if self.config.enableDLegerCommitLog:
            return await self._put_replicated(batch, self.commit_log.put_messages_async)
        return await self._wait_one(batch, self.put_messages(batch))

    async def _put_replicated(self, msg, put) -> PutMessageResult:
        """DLedger mode: the append itself completes once a quorum has the entry."""
        result = self._check_put(msg)
        if result is None:
            begin = now_ms()
            result = await put(msg)
            self.put_calls += 1
            self.record_put_time(now_ms() - begin)
        if result.is_ok():
            self._after_put(result)
        return result

    async def _put_list_replicated(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]:
        """DLedger mode: the legal messages appended in order, one wait for the quorum of the last entry."""
        results: list[PutMessageResult | None] = [None] * len(msgs)
        idx: list[int] = []
        good: list[MessageExtBrokerInner] = []
        for i, m in enumerate(msgs):
            r = self._check_put(m)
            if r is None:
                idx.append(i)
                good.append(m)
            else:
                results[i] = r
        if good:
            begin = now_ms()
            stored = await self.commit_log.put_message_list_async(good)
            self.put_calls += len(good)
            self.record_put_time(now_ms() - begin, len(good))
            for i, r in zip(idx, stored, strict=True):
                results[i] = r
                if r.is_ok():
                    self._after_put(r)
        return results  # type: ignore[return-value]

    def append_outcome(self, commit_log_offset: int) -> bool | None:
        """Whether a message whose put failed after it was appended is stored after all: True, False
        (put it again) or None (not decided yet); only a DLedger log can answer other than False."""
        return self.commit_log.append_outcome(commit_log_offset)

    def is_os_page_cache_busy(self) -> bool:
        """RocketMQ refuses sends while its put lock is held too long; appends here never block."""
        return False

    # -- get ------------------------------------------------------------------------------

    def get_message(self, group: str, topic: str, queue_id: int, offset: int, max_msg_nums: int,
                    message_filter: MessageFilter | None = None) -> GetMessageResult:
        """Read up to ``max_msg_nums`` records of a queue from ``offset`` (store.get_message_service)."""
        return self.reader.get_message(group, topic, queue_id, offset, max_msg_nums, message_filter)

    # -- queue offsets / lookups --------------------------------------------------------------

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, consume_offset: int) -> bool:
        """RocketMQ: whether the message is out of the page cache. Not tracked here: False."""
        return False

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.consume_queues.find(topic, queue_id)
        return 0 if cq is None else cq.get_max_offset_in_queue()

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.consume_queues.find(topic, queue_id)
        if cq is None:
            return 0 if is_valid_topic_name(topic) else -1
        return cq.get_min_offset_in_queue()

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        cq = self.consume_queues.find(topic, queue_id)
        if cq is None:
            return 0
        return cq.get_offset_in_queue_by_time(timestamp, self.commit_log.get_min_offset(),
                                              self.commit_log.pickup_store_timestamp)

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self.consume_queues.find(topic, queue_id)
        unit = None if cq is None else cq.get_unit(consume_queue_offset)
        return 0 if unit is None else unit[0]

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self.consume_queues.find(topic, queue_id)
        unit = None if cq is None else cq.get_unit(consume_queue_offset)
        if unit is None:
            return -1
        return self.commit_log.pickup_store_timestamp(unit[0], unit[1])

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        cq = self.consume_queues.find(topic, queue_id)
        if cq is None:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, cq.get_min_offset_in_queue())

    def get_earliest_message_time_all(self) -> int:
        """Store time of the first record of the CommitLog (-1 when empty)."""
        return self.queries.earliest_message_time()

    def get_max_phy_offset(self) -> int:
        return self.commit_log.get_max_offset()

    def get_min_phy_offset(self) -> int:
        return self.commit_log.get_min_offset()

    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> memoryview | None:
        """The whole record at ``commit_log_offset`` (store.query_message_service)."""
        return self.queries.select_one_message_by_offset(commit_log_offset, size)

    def look_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> MessageExt | None:
        """The decoded record at ``commit_log_offset``; None when there is none."""
        return self.queries.look_message_by_offset(commit_log_offset, size)

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        """Records indexed under ``topic#key`` with store time in [begin, end]."""
        return self.queries.query_message(topic, key, max_num, begin, end)

    # -- replication -----------------------------------------------------------------------------

    def get_commit_log_data(self, offset: int) -> memoryview | None:
        if self.shutdown_flag:
            return None
        return self.commit_log.get_data(offset, offset == 0)

    def append_to_commit_log(self, start_offset: int, data: bytes) -> bool:
        if self.shutdown_flag:
            return False
        ok = self.commit_log.append_data(start_offset, data)
        if ok:
            self.reput.wakeup()
        return ok

    # -- topics / cleanup ---------------------------------------------------------------------------

    def _drop_queue_table(self, topic: str) -> None:
        prefix = topic + "-"
        table = self.commit_log.topic_queue_table
        for k in [k for k in table if k.startswith(prefix) and k[len(prefix):].isdigit()]:
            del table[k]

    def delete_topics(self, topics: set[str]) -> int:
        """Delete the consume queues of ``topics``; return how many topics had queues."""
        n = 0
        for t in topics:
            if self.consume_queues.delete_topic(t):
                n += 1
            self._drop_queue_table(t)
        return n

    def clean_unused_topic(self, topics: set[str]) -> int:
        """Delete the consume queues of every topic not in ``topics`` (system queues kept)."""
        victims = {t for t in list(self.consume_queues.table)
                   if t not in topics and t not in (SCHEDULE_TOPIC, TRANS_OP_HALF_TOPIC)
                   and not t.startswith("%LMQ%")}
        return self.delete_topics(victims)

    def delete_expired_consume_queue_files(self) -> int:
        """Delete CQ files (and index files) entirely below the CommitLog min offset."""
        min_offset = self.commit_log.get_min_offset()
        n = 0
        for cq in self.consume_queues:
            n += cq.delete_expired_file(min_offset)
        if self.index_service is not None:
            self.index_service.delete_expired_file(min_offset)
        return n

    def execute_delete_files_manually(self) -> None:
        """Admin DELETE_EXPIRED_COMMITLOG: delete expired CommitLog files in the next runs."""
        self.clean_commit_log_service.execute_delete_files_manually()

    def set_writeable(self, writeable: bool) -> None:
        """The NOT_WRITEABLE switch: while off new puts get SERVICE_NOT_AVAILABLE (so does DISK_FULL)."""
        if writeable:
            self.running_flags.get_and_make_writeable()
        else:
            self.running_flags.get_and_make_not_writeable()
        self.disk_guard.refresh()

    def _writeable_changed(self, writeable: bool) -> None:
        self.writeable = writeable  # the put path reads this one attribute

    # -- info ----------------------------------------------------------------------------------------

    def runtime_info(self) -> dict[str, str]:
        cl = self.commit_log
        info = {
            "commitLogMinOffset": str(cl.get_min_offset()),
            "commitLogMaxOffset": str(cl.get_max_offset()),
            "commitLogFlushedOffset": str(cl.flushed_where),
            "dispatchBehindBytes": str(self.reput.behind()),
            "putMessageTimesTotal": str(self.put_message_times_total),
            "putMessageSizeTotal": str(self.put_message_size_total),
            "earliestMessageTimeStamp": str(self.get_earliest_message_time_all()),
            "startAcceptSendRequestTimeStamp": str(self.start_time_ms),
            "runtime": f"[ {int((now_ms() - self.start_time_ms) / 1000)} seconds ]",
            "storeWriteable": str(self.writeable).lower(),
            "flushDiskType": self.config.flushDiskType.name,
        }
        info["remainHowManyDataToFlush"] = str(max(0, cl.get_max_offset() - cl.flushed_where))
        info.update(self.stats.runtime_info())
        info["remainTransientStoreBufferNumbs"] = str(2**31 - 1)  # no transient store pool
        info["pageCacheLockTimeMills"] = "0"  # appends never block (single writer on the loop)
        info.update(disk_runtime_info(self.config))
        if self.group_commit is not None:
            info["groupCommitFsyncCount"] = str(self.group_commit.fsync_count)
        info.update(cl.runtime_extra())
        info["timestamp"] = str(int(time.time() * 1000))
        return info

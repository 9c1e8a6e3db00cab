"""The waits of a put after its append (RocketMQ ``CommitLog.handleDiskFlush`` / ``handleHA``).

SYNC_FLUSH: a put whose WAIT property is not "false" waits for the group commit's fsync
past its record (FLUSH_DISK_TIMEOUT after ``syncFlushTimeout``); ASYNC_FLUSH wakes the
flush service unless it flushes on a timer. SYNC_MASTER: the put then waits for the
replicas (``replica_waiter``, the broker's HA service). Puts that waited are timed into
the store statistics; the others are counted without a clock read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from common.message import MessageConst, MessageExtBrokerInner
from common.util import now_ms
from store.config import BrokerRole, BrokerRoleView, FlushDiskType, MessageStoreConfig
from store.flush_service import FlushRealTimeService, GroupCommitService
from store.message_store import CommitLogBackend, PutMessageResult, PutMessageStatus

_PUT_OK = PutMessageStatus.PUT_OK

__all__ = ["DiskFlushAndHA"]


class DiskFlushAndHA:
    """``group_commit`` / ``flush_service`` are the store's flush services once it started (None
    before: tools and tests flush inline); ``replica_waiter(end_offset)`` the HA wait of a
    SYNC_MASTER (as the live ``role`` says); ``record_put_time(ms, count)`` the statistics of
    puts that waited."""

    def __init__(self, config: MessageStoreConfig, commit_log: CommitLogBackend,
                 record_put_time: Callable[..., None], role: BrokerRoleView) -> None:
        self.config = config
        self.role = role
        self.commit_log = commit_log
        self.record_put_time = record_put_time
        self.group_commit: GroupCommitService | None = None
        self.flush_service: FlushRealTimeService | None = None
        self.replica_waiter: Callable[[int], Awaitable[PutMessageStatus]] | None = None

    async def wait_one(self, msg: MessageExtBrokerInner, result: PutMessageResult) -> PutMessageResult:
        """The waits of one put (or one batch): flush, then replicas."""
        if not result.is_ok():
            return result
        ar = result.append_result
        assert ar is not None
        end = ar.wrote_offset + ar.wrote_bytes
        wait = msg.properties.get(MessageConst.WAIT) != "false"
        waited = False
        if self.config.flushDiskType is FlushDiskType.SYNC_FLUSH and not self.config.enableDLegerCommitLog:
            if wait:
                waited = True
                gc = self.group_commit
                if gc is not None:  # the group commit's future awaited here: one coroutine less per put
                    ok = gc.flush_waiter(end, self.config.syncFlushTimeout)
                    if ok.__class__ is not bool:
                        ok = await ok
                else:
                    ok = await self.wait_flush(end)
                if not ok:
                    result.status = PutMessageStatus.FLUSH_DISK_TIMEOUT
            elif self.group_commit is not None:
                self.group_commit.wakeup()
        elif self.flush_service is not None and not self.config.flushCommitLogTimed:
            self.flush_service.wakeup()
        if (wait and self.replica_waiter is not None and self.role.broker_role is BrokerRole.SYNC_MASTER
                and result.status is PutMessageStatus.PUT_OK):
            waited = True
            result.status = await self.replica_waiter(end)
        if waited:
            self.record_put_time(now_ms() - ar.store_timestamp)
        return result

    async def wait_list(self, msgs: list[MessageExtBrokerInner], results: list[PutMessageResult]) -> None:
        """The waits of a list put, once for the whole list: the group commit up to the last record
        whose message waits and, on a SYNC_MASTER, the replicas. A message whose wait failed gets
        FLUSH_DISK_TIMEOUT (or the replication status) as :meth:`wait_one` would give it."""
        waiting, end, no_wait = _waiting_puts(msgs, results)
        if self.config.flushDiskType is FlushDiskType.SYNC_FLUSH:
            if waiting and not await self.wait_flush(end):
                for r in waiting:
                    r.status = PutMessageStatus.FLUSH_DISK_TIMEOUT
            if no_wait and self.group_commit is not None:
                self.group_commit.wakeup()
        elif self.flush_service is not None and not self.config.flushCommitLogTimed and (waiting or no_wait):
            self.flush_service.wakeup()
        waited = waiting and self.config.flushDiskType is FlushDiskType.SYNC_FLUSH
        if waiting and self.replica_waiter is not None and self.role.broker_role is BrokerRole.SYNC_MASTER:
            ok = [r for r in waiting if r.status is PutMessageStatus.PUT_OK]
            if ok:
                waited = True
                status = await self.replica_waiter(max(r.append_result.wrote_offset + r.append_result.wrote_bytes
                                                       for r in ok))
                for r in ok:
                    r.status = status
        if waited:
            self.record_put_time(now_ms() - waiting[0].append_result.store_timestamp, len(waiting))

    def can_wait_then(self) -> bool:
        """Whether :meth:`wait_list_then` may stand in for :meth:`wait_list` now: only the group
        commit to wait for (a started SYNC_FLUSH store, not a SYNC_MASTER with replicas)."""
        return (self.group_commit is not None and self.config.flushDiskType is FlushDiskType.SYNC_FLUSH
                and not (self.replica_waiter is not None and self.role.broker_role is BrokerRole.SYNC_MASTER))

    def wait_list_then(self, msgs: list[MessageExtBrokerInner], results: list[PutMessageResult],
                       done: Callable[[], None]) -> None:
        """:meth:`wait_list` without a coroutine, where :meth:`can_wait_then`: ``done()`` once the
        statuses in ``results`` are final (perhaps at once), called from the group commit's round."""
        gc = self.group_commit
        assert gc is not None
        waiting, end, no_wait = _waiting_puts(msgs, results)
        if no_wait:
            gc.wakeup()
        if not waiting:
            done()
            return

        def flushed(ok: bool) -> None:
            if not ok:
                for r in waiting:
                    r.status = PutMessageStatus.FLUSH_DISK_TIMEOUT
            self.record_put_time(now_ms() - waiting[0].append_result.store_timestamp, len(waiting))
            done()

        gc.flush_callback(end, self.config.syncFlushTimeout, flushed)

    async def wait_flush(self, end: int) -> bool:
        """Whether the log is flushed past ``end`` within ``syncFlushTimeout``."""
        if self.group_commit is not None:
            return await self.group_commit.wait_for_flush(end, self.config.syncFlushTimeout)
        # not started (tools/tests): flush inline in the executor
        loop = asyncio.get_running_loop()
        try:
            flushed = await asyncio.wait_for(
                loop.run_in_executor(None, self.commit_log.flush_until, end), self.config.syncFlushTimeout / 1000)
        except TimeoutError:
            return False
        return flushed >= end


def _waiting_puts(msgs: list[MessageExtBrokerInner],
                  results: list[PutMessageResult]) -> tuple[list[PutMessageResult], int, bool]:
    """Of a list put: the stored results whose message waits (WAIT not "false"), the end offset of
    the last of them, and whether a stored message does not wait."""
    waiting: list[PutMessageResult] = []
    end = 0
    no_wait = False
    ok = _PUT_OK
    wait_key = MessageConst.WAIT
    for m, r in zip(msgs, results, strict=True):
        ar = r.append_result
        if r.status is not ok or ar is None:  # PutMessageResult.is_ok, inlined: it runs once per send
            continue
        if m.properties.get(wait_key) == "false":
            no_wait = True
            continue
        waiting.append(r)
        last = ar.wrote_offset + ar.wrote_bytes
        if last > end:
            end = last
    return waiting, end, no_wait

"""CleanCommitLogService: deletes expired CommitLog files (spec message-and-store-format.md §11.3).

A run deletes files when one of three triggers holds:

* *time-up*: the current local hour is one of ``deleteWhen`` (``"04"``, ``"04;10"``);
* *space-full*: the used ratio of the CommitLog partition (the least used one when
  ``storePathCommitLog`` lists several) or of the ConsumeQueue partition exceeds
  ``diskMaxUsedSpaceRatio`` (percent, clamped to 10..95);
* *manual*: :meth:`execute_delete_files_manually` (admin DELETE_EXPIRED_COMMITLOG)
  arms 20 runs.

Candidates are all files but the last, oldest first, last modified at least
``fileReservedTime`` hours ago; deletion stops at the first younger file and after
10 files. Above ``disk_space_clean_forcibly_ratio`` (0.85) with
``cleanFileForciblyEnable`` files go regardless of age; above
``disk_space_warning_level_ratio`` (0.90) the store is also marked disk-full
(new puts refused) until usage drops below 0.85.

The deletion itself is the MappedFileQueue's
``delete_expired_file_by_time(expired_ms, delete_interval_ms, interval_forcibly_ms,
clean_immediately) -> int``. The store calls :meth:`CleanCommitLogService.run_once`
every ``cleanResourceInterval`` ms (first run after 60 s), then
``CleanConsumeQueueService.run_once``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from typing import Protocol

from common.util import now_ms as _wall_ms
from store.config import MessageStoreConfig

__all__ = [
    "CleanCommitLogService",
    "clean_files_periodically",
    "disk_partition_used_ratio",
    "dledger_data_path",
    "is_it_time_to_do",
    "MAX_MANUAL_DELETE_FILE_TIMES",
    "DISK_SPACE_WARNING_LEVEL_RATIO",
    "DISK_SPACE_CLEAN_FORCIBLY_RATIO",
]

log = logging.getLogger(__name__)

MAX_MANUAL_DELETE_FILE_TIMES = 20
# RocketMQ reads these from system properties rocketmq.broker.diskSpaceWarningLevelRatio /
# rocketmq.broker.diskSpaceCleanForciblyRatio.
DISK_SPACE_WARNING_LEVEL_RATIO = 0.90
DISK_SPACE_CLEAN_FORCIBLY_RATIO = 0.85


class ExpiringFileQueue(Protocol):
    """The part of common.mapped_file_queue.MappedFileQueue this service uses."""

    def delete_expired_file_by_time(
        self, expired_ms: int, delete_interval_ms: int, interval_forcibly_ms: int, clean_immediately: bool
    ) -> int: ...

    def retry_delete_first_file(self, interval_forcibly_ms: int = 0) -> bool: ...


class ConsumeQueueCleaner(Protocol):
    """store.clean_consume_queue_service.CleanConsumeQueueService."""

    async def run_once_async(self, now_ms: int | None = None) -> int: ...


class DiskFullMark(Protocol):
    """The owner of the store's disk-full state (store.disk_space_guard.DiskSpaceGuard)."""

    @property
    def disk_full(self) -> bool: ...

    def set_ratio_full(self, full: bool) -> None: ...


def disk_partition_used_ratio(path: str) -> float:
    """Used fraction (0..1) of the partition holding ``path``; -1 when it cannot be read.

    Like Java's ``File.getTotalSpace/getFreeSpace``: free counts the blocks
    reserved for root as free.
    """
    if not path:
        return -1.0
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    total = st.f_blocks * st.f_frsize
    if total <= 0:
        return -1.0
    free = st.f_bfree * st.f_frsize
    return (total - free) / total


def dledger_data_path(config: MessageStoreConfig) -> str:
    """Where a DLedger broker's commit log lives: ``storePathDLedgerCommitLog``, else
    ``<storePathRootDir>/dledger-<dLegerSelfId>/data`` (DLedgerConfig.data_path as the broker fills it)."""
    explicit = config.storePathDLedgerCommitLog
    if explicit:
        return explicit
    self_id = config.dLegerSelfId or "n0"
    return os.path.join(config.storePathRootDir, f"dledger-{self_id}", "data")


def is_it_time_to_do(when: str, now_ms: int) -> bool:
    """Whether the local hour of ``now_ms`` is one of the ``;``-separated hours in ``when``."""
    hour = time.localtime(now_ms // 1000).tm_hour
    for w in str(when).split(";"):
        w = w.strip()
        if not w:
            continue
        try:
            if int(w) == hour:
                return True
        except ValueError:
            log.warning("deleteWhen entry %r is not an hour", w)
    return False


def _clamped_ratio(percent: int) -> float:
    return min(max(int(percent), 10), 95) / 100.0


class CleanCommitLogService:
    """Deletes expired CommitLog files; drive it with :meth:`run_once`.

    ``config``: MessageStoreConfig (``deleteWhen``, ``fileReservedTime``,
    ``diskMaxUsedSpaceRatio``, ``cleanFileForciblyEnable``,
    ``deleteCommitLogFilesInterval``, ``destroyMapedFileIntervalForcibly``,
    ``redeleteHangedFileInterval``, ``storePathRootDir``, ``storePathCommitLog``).
    ``file_queue``: the CommitLog's MappedFileQueue. ``disk_usage(path) -> float``
    probes a partition (tests inject one). Its verdict on the used ratio goes to
    ``disk_full``, the owner of the store's disk-full state (the store refuses puts
    while full); without one, the service only decides what to delete.
    """

    def __init__(
        self,
        config: MessageStoreConfig,
        file_queue: ExpiringFileQueue,
        *,
        disk_usage: Callable[[str], float] = disk_partition_used_ratio,
        disk_full: DiskFullMark | None = None,
        disk_space_warning_level_ratio: float = DISK_SPACE_WARNING_LEVEL_RATIO,
        disk_space_clean_forcibly_ratio: float = DISK_SPACE_CLEAN_FORCIBLY_RATIO,
    ) -> None:
        self.config = config
        self.file_queue = file_queue
        self._disk_usage = disk_usage
        self._mark = disk_full
        self.warning_ratio = disk_space_warning_level_ratio
        self.forcibly_ratio = disk_space_clean_forcibly_ratio
        self.manual_delete_file_several_times = 0
        self.clean_immediately = False
        self.full_store_paths: set[str] = set()
        self.last_redelete_timestamp = 0
        self.last_delete_count = 0

    # -- paths ------------------------------------------------------------

    def commit_log_paths(self) -> list[str]:
        """The CommitLog directories (``storePathCommitLog`` may list several, comma separated).

        In DLedger mode the messages live in the DLedger data directory and ``storePathCommitLog``
        is not written (it may not even exist): that directory is measured, as RocketMQ's
        ``getStorePathPhysic`` does.
        """
        if self.config.enableDLegerCommitLog:
            return [dledger_data_path(self.config)]
        root = self.config.storePathRootDir
        raw = self.config.storePathCommitLog or os.path.join(root, "commitlog")
        return [p.strip() for p in raw.split(",") if p.strip()]

    def consume_queue_path(self) -> str:
        """``<storePathRootDir>/consumequeue``."""
        return os.path.join(self.config.storePathRootDir, "consumequeue")

    # -- triggers ---------------------------------------------------------

    def execute_delete_files_manually(self) -> None:
        """Admin DELETE_EXPIRED_COMMITLOG: delete expired files in the next 20 runs regardless of the hour."""
        self.manual_delete_file_several_times = MAX_MANUAL_DELETE_FILE_TIMES

    def is_time_to_delete(self, now_ms: int) -> bool:
        """``deleteWhen`` contains the current local hour."""
        return is_it_time_to_do(self.config.deleteWhen, now_ms)

    @property
    def disk_full(self) -> bool:
        """The store's disk-full state (False without an owner to tell)."""
        return self._mark is not None and self._mark.disk_full

    def _set_disk_full(self, full: bool) -> None:
        if self._mark is not None:
            self._mark.set_ratio_full(full)  # it logs the change

    def _judge(self, ratio: float) -> None:
        if ratio > self.warning_ratio:
            self._set_disk_full(True)
            self.clean_immediately = True
        elif ratio > self.forcibly_ratio:
            self.clean_immediately = True
        else:
            self._set_disk_full(False)

    def is_space_to_delete(self) -> bool:
        """Probe the CommitLog and ConsumeQueue partitions; also sets ``clean_immediately`` and disk-full."""
        ratio = _clamped_ratio(self.config.diskMaxUsedSpaceRatio)
        self.clean_immediately = False
        paths = self.commit_log_paths()
        usages = {p: self._disk_usage(p) for p in paths}
        self.full_store_paths = {p for p, u in usages.items() if u > self.forcibly_ratio}
        min_physic = min(usages.values()) if usages else -1.0
        self._judge(min_physic)
        if min_physic < 0 or min_physic > ratio:
            log.info("commit log disk may be full soon (%.3f), reclaiming space", min_physic)
            return True
        logics = self._disk_usage(self.consume_queue_path())
        self._judge(logics)
        if logics < 0 or logics > ratio:
            log.info("consume queue disk may be full soon (%.3f), reclaiming space", logics)
            return True
        return False

    # -- the run ----------------------------------------------------------

    def run_once(self, now_ms: int) -> int:
        """One cleanup round at wall time ``now_ms``; returns the number of files deleted.

        Blocking: the queue pauses ``deleteCommitLogFilesInterval`` ms between
        deletions (at most 10 per run), so an asyncio caller should run it in an
        executor.
        """
        deleted = 0
        try:
            deleted = self.delete_expired_files(now_ms)
            self.redelete_hanged_file(now_ms)
        except Exception:  # a failed round must not kill the periodic task
            log.exception("commit log cleanup failed")
        self.last_delete_count = deleted
        return deleted

    def delete_expired_files(self, now_ms: int) -> int:
        """Delete expired files if time-up, space-full or manual; returns the count."""
        timeup = self.is_time_to_delete(now_ms)
        spacefull = self.is_space_to_delete()
        manual = self.manual_delete_file_several_times > 0
        if not (timeup or spacefull or manual):
            return 0
        if manual:
            self.manual_delete_file_several_times -= 1
        clean_at_once = self.config.cleanFileForciblyEnable and self.clean_immediately
        reserved_ms = self.config.fileReservedTime * 3600 * 1000
        log.info(
            "begin to delete expired commit log files: timeup=%s spacefull=%s manual=%s cleanAtOnce=%s",
            timeup, spacefull, manual, clean_at_once,
        )
        count = self.file_queue.delete_expired_file_by_time(
            reserved_ms,
            self.config.deleteCommitLogFilesInterval,
            self.config.destroyMapedFileIntervalForcibly,
            clean_at_once,
        )
        if count == 0 and spacefull:
            log.warning("disk space will be full soon, but no commit log file could be deleted")
        return count

    def redelete_hanged_file(self, now_ms: int) -> bool:
        """Every ``redeleteHangedFileInterval`` ms retry destroying a first file whose deletion hung."""
        interval = self.config.redeleteHangedFileInterval
        if now_ms - self.last_redelete_timestamp <= interval:
            return False
        self.last_redelete_timestamp = now_ms
        return bool(self.file_queue.retry_delete_first_file(self.config.destroyMapedFileIntervalForcibly))


async def clean_files_periodically(
    commit_log_cleaner: CleanCommitLogService,
    consume_queue_cleaner: ConsumeQueueCleaner | None,
    interval_ms: int,
    *,
    first_delay_ms: int = 60_000,
    clock: Callable[[], int] = _wall_ms,
) -> None:
    """RocketMQ's ``cleanFilesPeriodically``: every ``interval_ms`` (``cleanResourceInterval``),
    after ``first_delay_ms``, run the CommitLog cleanup in the default executor (it may pause
    between deletions) and then the ConsumeQueue/index cleanup on the loop.

    Runs until cancelled; a store adds ``lambda: clean_files_periodically(...)`` to its services.
    """
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0, first_delay_ms) / 1000.0)
    while True:
        try:
            await loop.run_in_executor(None, commit_log_cleaner.run_once, clock())
            if consume_queue_cleaner is not None:
                await consume_queue_cleaner.run_once_async(clock())
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("periodic file cleanup failed")
        await asyncio.sleep(max(1, interval_ms) / 1000.0)

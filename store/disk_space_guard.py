"""DiskSpaceGuard: keeps a full disk from faulting the store, and lets writes resume by themselves.

Every mapped file reserves its disk blocks before they are written (common.mapped_file: CommitLog
and DLedger files whole when created, consume queues and index files a step at a time), so a full
disk shows as a failed reservation (DiskFullError), never as a SIGBUS. This guard decides which
CommitLog files may be created and when the store refuses puts (RunningFlags DISK_FULL: the broker
answers SERVICE_NOT_AVAILABLE with RocketMQ's "the broker's disk is full" remark).

Levels (RocketMQ 4.9.7's, of CleanCommitLogService and its system properties):

* above ``diskSpaceWarningLevelRatio`` (0.90) used, on the CommitLog or the ConsumeQueue
  partition, the store is marked disk-full;
* at or below ``diskSpaceCleanForciblyRatio`` (0.85) the mark is cleared (between the two it stays
  as it is: no flapping);
* ``diskMaxUsedSpaceRatio`` (clamped 10..95) and the clean-forcibly level drive file deletion
  (store.clean_commit_log_service), not this guard.

Beyond 4.9.7, which checks every 10 s after the first minute and otherwise writes into sparse files
until a page cannot be backed:

* a new CommitLog file is created only if the partition stays at or below the warning level with
  it: the top 10 % stays free for the consume queues, index and checkpoint of records already
  accepted (their files are never refused here, as RocketMQ's isCQWriteable ignores DISK_FULL);
* a creation or reservation that still fails for want of space marks the store disk-full at once
  (records already accepted then wait to be dispatched: nothing is skipped);
* the partitions are probed every ``interval_ms`` (1 s), so writes resume within about a second
  of space coming back, without an operator.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections.abc import Callable

from common.mapped_file import DiskFullError
from store.clean_commit_log_service import (
    DISK_SPACE_CLEAN_FORCIBLY_RATIO,
    DISK_SPACE_WARNING_LEVEL_RATIO,
    disk_partition_used_ratio,
)
from store.config import MessageStoreConfig
from store.running_flags import RunningFlags

__all__ = ["DiskSpaceGuard", "PartitionSpace", "partition_space"]

log = logging.getLogger(__name__)

PROBE_INTERVAL_MS = 1000


def _existing(path: str) -> str:
    """``path`` or its nearest existing ancestor (a store directory may not exist yet)."""
    p = os.path.abspath(path)
    while not os.path.exists(p):
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return p


class PartitionSpace:
    """Bytes of one partition: ``total``, ``used`` (counting root's reserve as free, as Java's
    File.getFreeSpace) and ``available`` (what this process may still allocate)."""

    __slots__ = ("total", "used", "available")

    def __init__(self, total: int, used: int, available: int) -> None:
        self.total = total
        self.used = used
        self.available = available


def partition_space(path: str) -> PartitionSpace | None:
    """statvfs of the partition holding ``path``; None when it cannot be read."""
    try:
        st = os.statvfs(_existing(path))
    except OSError:
        return None
    if st.f_blocks <= 0:
        return None
    return PartitionSpace(st.f_blocks * st.f_frsize, (st.f_blocks - st.f_bfree) * st.f_frsize,
                          st.f_bavail * st.f_frsize)


class _QueueGate:
    """The gate of consume-queue (and other secondary) files: never refused beforehand, since
    they index records already accepted; a failure for want of space still marks the disk full."""

    __slots__ = ("_guard",)

    def __init__(self, guard: DiskSpaceGuard) -> None:
        self._guard = guard

    def before_create(self, path: str, size: int) -> bool:
        return True

    def create_failed(self, path: str, error: OSError) -> None:
        self._guard.create_failed(path, error)


def disk_runtime_info(config: MessageStoreConfig) -> dict[str, str]:
    """The disk keys of the broker's runtime info: used ratio of the CommitLog and ConsumeQueue
    partitions, the CommitLog's capacity."""
    info: dict[str, str] = {}
    for key, path in (("commitLogDiskRatio", config.commit_log_dir),
                      ("consumeQueueDiskRatio", config.consume_queue_dir)):
        try:
            st = os.statvfs(path if os.path.isdir(path) else config.storePathRootDir)
            info[key] = str((st.f_blocks - st.f_bfree) / st.f_blocks if st.f_blocks else 0.0)
            if key == "commitLogDiskRatio":
                info["commitLogDirCapacity"] = (f"Total : {st.f_blocks * st.f_frsize / 2**30:.1f} GiB, "
                                                f"Free : {st.f_bavail * st.f_frsize / 2**30:.1f} GiB.")
        except OSError:
            pass
    return info


class DiskSpaceGuard:
    """Owns the DISK_FULL bit of ``flags``; ``on_change(writeable)`` is told each time the store's
    writeability changes. Is the CreateGuard of the CommitLog; :attr:`queue_gate` is the one of the
    consume queues. ``disk_usage(path) -> ratio`` and ``space(path)`` are injectable probes."""

    def __init__(
        self,
        flags: RunningFlags,
        on_change: Callable[[bool], None],
        *,
        commit_log_paths: list[str],
        consume_queue_path: str,
        disk_usage: Callable[[str], float] = disk_partition_used_ratio,
        space: Callable[[str], PartitionSpace | None] = partition_space,
        warning_ratio: float = DISK_SPACE_WARNING_LEVEL_RATIO,
        clear_ratio: float = DISK_SPACE_CLEAN_FORCIBLY_RATIO,
        interval_ms: int = PROBE_INTERVAL_MS,
    ) -> None:
        self.flags = flags
        self._on_change = on_change
        self.commit_log_paths = commit_log_paths
        self.consume_queue_path = consume_queue_path
        self._disk_usage = disk_usage
        self._space = space
        self.warning_ratio = warning_ratio
        self.clear_ratio = clear_ratio
        self.interval_ms = interval_ms
        self.queue_gate = _QueueGate(self)
        self._ratio_full = False  # a partition above the warning level (hysteresis down to clear_ratio)
        self._blocked: tuple[str, int] | None = None  # (path, size) of a file that found no room
        self._writeable = flags.is_writeable()
        self.refusals = 0  # creations refused or failed for want of space
        self.last_ratios = (0.0, 0.0)

    # -- state -------------------------------------------------------------------------------

    @property
    def disk_full(self) -> bool:
        return self.flags.is_disk_full()

    def refresh(self) -> None:
        """Recompute DISK_FULL from both reasons and tell the store when writeability changed."""
        if self._ratio_full or self._blocked is not None:
            if self.flags.get_and_make_disk_full():
                cl, cq = self.last_ratios
                why = (f"no room for {os.path.basename(self._blocked[0])} ({self._blocked[1]} bytes)"
                       if self._blocked is not None else f"used ratio above {self.warning_ratio:.2f}")
                log.error("disk full (CommitLog %.3f, ConsumeQueue %.3f used): %s; sends are refused "
                          "until space returns", cl, cq, why)
        elif not self.flags.get_and_make_disk_ok():
            log.info("disk space is back (CommitLog %.3f, ConsumeQueue %.3f used): store writeable again",
                     *self.last_ratios)
        writeable = self.flags.is_writeable()
        if writeable != self._writeable:
            self._writeable = writeable
            self._on_change(writeable)

    def set_ratio_full(self, full: bool) -> None:
        """The used-ratio verdict of another probe (the CleanCommitLogService's): "full" is taken at
        once, "not full" is checked by a probe of all partitions first (that service judges one
        partition after the other, so its last verdict may hide a full one)."""
        if full:
            if not self._ratio_full:
                self._ratio_full = True
                self.refresh()
        elif self._ratio_full:
            self.probe()

    def fits(self, path: str, size: int) -> bool:
        """Whether a file of ``size`` bytes can be created under ``path`` and leave the partition
        at or below the warning level."""
        sp = self._space(path)
        if sp is None:
            return True  # cannot tell: the reservation itself will say
        return sp.available >= size and (sp.used + size) <= sp.total * self.warning_ratio

    # -- probing -----------------------------------------------------------------------------

    def _measure(self) -> float:
        # a directory not created yet is measured on the partition that will hold it
        ratios = [self._disk_usage(_existing(p)) for p in self.commit_log_paths]
        cl = min(ratios) if ratios else -1.0
        cq = self._disk_usage(_existing(self.consume_queue_path))
        self.last_ratios = (cl, cq)
        return max(cl, cq)

    def probe(self) -> bool:
        """Measure the partitions now and update the mark; returns whether the disk is full."""
        worst = self._measure()
        if worst > self.warning_ratio:
            self._ratio_full = True
        elif worst <= self.clear_ratio:
            self._ratio_full = False
        if self._blocked is not None and self.fits(*self._blocked):
            self._blocked = None
        self.refresh()
        return self.disk_full

    async def run(self) -> None:
        """Task body: probe every ``interval_ms`` until cancelled."""
        while True:
            try:
                self.probe()
            except Exception:  # a failed probe must not end the task
                log.exception("disk space probe failed")
            await asyncio.sleep(self.interval_ms / 1000.0)

    # -- CreateGuard (the CommitLog's files) ------------------------------------------------

    def before_create(self, path: str, size: int) -> bool:
        if self.flags.is_disk_full() and self.probe():
            return False  # still full (a probe now, not the last periodic one: space may be back)
        if not self.fits(os.path.dirname(path) or ".", size):
            self._block(path, size)
            return False
        return True

    def create_failed(self, path: str, error: OSError) -> None:
        if isinstance(error, DiskFullError):
            self._block(path, error.size)
        elif error.errno in (errno.ENOSPC, errno.EDQUOT):
            self._block(path, 0)
        else:
            log.error("create %s failed: %s", path, error)

    def _block(self, path: str, size: int) -> None:
        self.refusals += 1
        self._blocked = (path, size)
        self._measure()  # for the log line
        self.refresh()


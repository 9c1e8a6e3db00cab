"""The ordered queue of fixed-size mapped files (RocketMQ ``MappedFileQueue``; spec §1a).

A directory of files of exactly ``file_size`` bytes, each named by the 20-digit offset
of its first byte in the queue's byte space: the CommitLog, every ConsumeQueue and
DLedger's data/index files are such queues (the files: common.mapped_file).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from collections.abc import Iterator

from common.failpoint import record_durable as _record_durable
from common.mapped_file import (
    CREATING_SUFFIX,
    DELETE_FILES_BATCH_MAX,
    CreateGuard,
    DiskFullError,
    MappedFile,
    offset_to_file_name,
)

__all__ = ["MappedFileQueue"]

log = logging.getLogger(__name__)

_NO_ROOM = (errno.ENOSPC, errno.EDQUOT)


class MappedFileQueue:
    """The ordered files of one directory, all of ``mapped_file_size`` bytes.

    Mutations (create, truncate, delete) happen on the writer's thread (the
    event loop); the file list is replaced copy-on-write so readers and the
    flush executor can iterate a stable snapshot without locking.
    """

    def __init__(self, store_path: str, mapped_file_size: int, *, guard: CreateGuard | None = None,
                 reserve_step: int = 0) -> None:
        self.store_path = store_path
        self.mapped_file_size = mapped_file_size
        self.guard = guard
        self.reserve_step = reserve_step  # see MappedFile: 0 reserves each file whole when created
        # the last creation was refused or failed for want of disk space (the writer answers "disk full")
        self.create_refused_disk_full = False
        self.mapped_files: list[MappedFile] = []
        self.flushed_where = 0
        self.committed_where = 0
        self.store_timestamp = 0
        self._lock = threading.Lock()

    # -- load ----------------------------------------------------------------

    def load(self) -> bool:
        """Map every file of the directory; False when a file has the wrong size."""
        try:
            listing = os.listdir(self.store_path)
        except FileNotFoundError:
            return True
        for n in listing:
            if n.endswith(CREATING_SUFFIX):  # a creation cut short by a crash: never held data
                log.warning("removing unfinished mapped file %s", n)
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.store_path, n))
        names = sorted(n for n in listing if n.isdigit() and len(n) == 20)
        files: list[MappedFile] = []
        for name in names:
            path = os.path.join(self.store_path, name)
            if not os.path.isfile(path):
                continue
            size = os.path.getsize(path)
            if size == 0 and name == names[-1]:
                # an empty last file holds no data (interrupted creation by an older writer)
                log.warning("removing empty mapped file %s", path)
                os.unlink(path)
                continue
            if size != self.mapped_file_size:
                log.error("%s length %d does not match the configured file size %d", path, size,
                          self.mapped_file_size)
                for f in files:
                    f.close()
                return False
            try:
                mf = MappedFile(path, self.mapped_file_size, create=False, reserve_step=self.reserve_step)
            except (OSError, ValueError) as e:
                log.error("cannot map %s: %s", path, e)
                for f in files:
                    f.close()
                return False
            mf.set_positions(self.mapped_file_size)
            mf.reserved_to = self.mapped_file_size  # complete: never written again (but the last, below)
            files.append(mf)
        if files:
            # the last file is written on: its blocks (maybe left sparse by an older writer) are reserved
            # now, or as it fills with a reserve step
            last = files[-1]
            last.reserved_to = 0
            if self.reserve_step <= 0:
                try:
                    last.reserve(self.mapped_file_size)
                except OSError as e:
                    log.error("cannot reserve the disk blocks of %s (free some space, then start again): %s",
                              last.path, e)
                    for f in files:
                        f.close()
                    return False
        with self._lock:
            self.mapped_files = files
        return True

    # -- lookup --------------------------------------------------------------

    def __iter__(self) -> Iterator[MappedFile]:
        return iter(self.mapped_files)

    def __len__(self) -> int:
        return len(self.mapped_files)

    def get_first_mapped_file(self) -> MappedFile | None:
        files = self.mapped_files
        return files[0] if files else None

    def get_last_mapped_file(self) -> MappedFile | None:
        files = self.mapped_files
        return files[-1] if files else None

    def get_last_mapped_file_or_create(self, start_offset: int = 0, need_create: bool = True) -> MappedFile | None:
        """The last file, or a new one when there is none or it is full.

        With no file yet, the first one starts at the file boundary at or below
        ``start_offset``.
        """
        last = self.get_last_mapped_file()
        if last is not None and not last.is_full():
            return last
        if not need_create:
            return last
        if last is None:
            create_offset = start_offset - (start_offset % self.mapped_file_size)
        else:
            create_offset = last.file_from_offset + self.mapped_file_size
        return self._create(create_offset, first=last is None)

    def _create(self, offset: int, first: bool) -> MappedFile | None:
        path = os.path.join(self.store_path, offset_to_file_name(offset))
        guard = self.guard
        if guard is not None and not guard.before_create(path, self.mapped_file_size):
            self.create_refused_disk_full = True
            return None
        try:
            os.makedirs(self.store_path, exist_ok=True)
            mf = MappedFile(path, self.mapped_file_size, reserve_step=self.reserve_step)
            if self.reserve_step <= 0 and mf.reserved_to < self.mapped_file_size:
                try:  # the name existed already (left over): reserve it whole
                    mf.reserve(self.mapped_file_size)
                except OSError:
                    mf.close()
                    raise
        except OSError as e:
            self.create_refused_disk_full = isinstance(e, DiskFullError) or e.errno in _NO_ROOM
            if guard is not None:
                guard.create_failed(path, e)
            if not self.create_refused_disk_full:
                log.error("create mapped file %s failed: %s", path, e)
            return None
        self.create_refused_disk_full = False
        mf.first_create_in_queue = first
        with self._lock:
            self.mapped_files = [*self.mapped_files, mf]
        return mf

    def find_mapped_file_by_offset(self, offset: int, return_first_on_not_found: bool = False) -> MappedFile | None:
        """The file holding byte ``offset`` of the queue."""
        files = self.mapped_files
        if not files:
            return None
        first = files[0]
        idx = offset // self.mapped_file_size - first.file_from_offset // self.mapped_file_size
        if 0 <= idx < len(files):
            mf = files[idx]
            if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                return mf
        for mf in files:  # a gap in the sequence (deleted files); fall back to a scan
            if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                return mf
        return first if return_first_on_not_found else None

    def get_mapped_file_by_time(self, timestamp: int) -> MappedFile | None:
        """The first file last modified at or after ``timestamp`` (else the last file)."""
        files = self.mapped_files
        for mf in files:
            if mf.get_last_modified_timestamp() >= timestamp:
                return mf
        return files[-1] if files else None

    def get_min_offset(self) -> int:
        files = self.mapped_files
        return files[0].file_from_offset if files else -1

    def get_max_offset(self) -> int:
        """Offset just past the last readable byte."""
        files = self.mapped_files
        if not files:
            return 0
        last = files[-1]
        return last.file_from_offset + last.read_position

    def get_max_wrote_position(self) -> int:
        return self.get_max_offset()

    def remain_how_many_data_to_flush(self) -> int:
        return self.get_max_offset() - self.flushed_where

    def get_mapped_memory_size(self) -> int:
        return len(self.mapped_files) * self.mapped_file_size

    # -- flush ---------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> bool:
        """Flush the file holding ``flushed_where``; True when nothing new was flushed (RocketMQ's result)."""
        mf = self.find_mapped_file_by_offset(self.flushed_where, self.flushed_where == 0)
        if mf is None:
            return True
        ts = mf.store_timestamp
        wrote = mf.wrote_position
        pos = mf.flush(least_pages)
        where = mf.file_from_offset + pos
        result = where == self.flushed_where
        self.flushed_where = where
        self.committed_where = max(self.committed_where, where)
        if pos >= wrote and ts:
            # every record of the file up to the captured position is durable
            self.store_timestamp = ts
        return result

    def mark_flushed(self, offset: int, store_timestamp: int = 0) -> None:
        """Record that every byte below ``offset`` is durable, made so by someone else's fsync
        (the SYNC_FLUSH group-commit worker): flushed positions, ``flushed_where`` and, when
        given, the store time of the last durable record. Never moves anything backwards."""
        if offset <= self.flushed_where:
            return
        size = self.mapped_file_size
        files = self.mapped_files
        if not files:
            return
        # start at the file holding flushed_where (files are consecutive; a gap only skips ahead)
        first = max(0, self.flushed_where // size - files[0].file_from_offset // size)
        if first >= len(files) or files[first].file_from_offset > self.flushed_where:
            first = 0
        for mf in files[first:]:
            start = mf.file_from_offset
            if start + size <= self.flushed_where:
                continue
            if start >= offset:
                break
            pos = min(offset - start, size)
            if pos > mf.flushed_position:
                mf.flushed_position = pos
                if _record_durable is not None:  # fault suite only (env var); None otherwise
                    _record_durable(mf.path, pos)
        self.flushed_where = offset
        if offset > self.committed_where:
            self.committed_where = offset
        if store_timestamp:
            self.store_timestamp = store_timestamp

    def flush_all(self) -> int:
        """Flush every file with unflushed bytes; return the new flushed offset."""
        for _ in range(len(self.mapped_files) + 1):  # at most one step per file
            before = self.flushed_where
            self.flush(0)
            if self.flushed_where == before:
                break
        return self.flushed_where

    # -- truncation / deletion ----------------------------------------------

    def truncate_dirty_files(self, offset: int) -> None:
        """Drop everything at and after ``offset``: cut the file holding it, delete later files."""
        keep: list[MappedFile] = []
        for mf in self.mapped_files:
            tail = mf.file_from_offset + self.mapped_file_size
            if tail > offset:
                if offset >= mf.file_from_offset:
                    pos = offset % self.mapped_file_size
                    mf.set_positions(pos)
                    keep.append(mf)
                else:
                    mf.destroy()
            else:
                keep.append(mf)
        with self._lock:
            self.mapped_files = keep
        self.flushed_where = min(self.flushed_where, offset)
        self.committed_where = min(self.committed_where, offset)

    def delete_last_mapped_file(self) -> None:
        last = self.get_last_mapped_file()
        if last is not None:
            last.destroy()
            with self._lock:
                self.mapped_files = self.mapped_files[:-1]

    def _remove(self, victims: list[MappedFile]) -> None:
        if not victims:
            return
        ids = {id(v) for v in victims}
        with self._lock:
            self.mapped_files = [f for f in self.mapped_files if id(f) not in ids]

    def delete_expired_file_by_time(
        self,
        expired_ms: int,
        delete_interval_ms: int,
        interval_forcibly_ms: int,
        clean_immediately: bool,
    ) -> int:
        """Delete files (never the last) last modified ``expired_ms`` ago or more; return the count.

        Oldest first; stops at the first file that is not old enough; at most
        10 files a call. ``delete_interval_ms`` pauses between deletions (blocking:
        call it from an executor when non-zero). ``clean_immediately`` ignores age.
        ``interval_forcibly_ms`` is accepted for RocketMQ parity: views keep a
        destroyed file's mapping alive, so there is nothing to force.
        """
        del interval_forcibly_ms
        files = self.mapped_files[:-1]
        now = int(time.time() * 1000)
        deleted: list[MappedFile] = []
        for mf in files:
            if not (clean_immediately or now >= mf.get_last_modified_timestamp() + expired_ms):
                break
            mf.destroy()
            deleted.append(mf)
            if len(deleted) >= DELETE_FILES_BATCH_MAX:
                break
            if delete_interval_ms > 0 and mf is not files[-1]:
                time.sleep(delete_interval_ms / 1000.0)
        self._remove(deleted)
        return len(deleted)

    def delete_expired_file_by_offset(self, offset: int, unit_size: int) -> int:
        """Delete files (never the last) whose last unit's int64 offset is below ``offset``; return the count.

        For ConsumeQueue-like queues of fixed ``unit_size`` units whose first
        8 bytes are a CommitLog offset.
        """
        files = self.mapped_files[:-1]
        deleted: list[MappedFile] = []
        for mf in files:
            pos = self.mapped_file_size - unit_size
            if mf.read_position < pos + unit_size:
                if not mf.is_available():
                    deleted.append(mf)
                    continue
                log.warning("%s: last unit not written, stop deleting by offset", mf.path)
                break
            max_in_file = int.from_bytes(mf.mm[pos : pos + 8], "big", signed=True)
            if max_in_file < offset:
                mf.destroy()
                deleted.append(mf)
            else:
                break
        self._remove(deleted)
        return len(deleted)

    def retry_delete_first_file(self, interval_forcibly_ms: int = 0) -> bool:
        """Delete the first file when it is no longer available (a hanged deletion); True if done."""
        first = self.get_first_mapped_file()
        if first is not None and not first.is_available():
            first.destroy()
            self._remove([first])
            return True
        return False

    def destroy(self) -> None:
        """Delete every file and the directory if it is empty."""
        for mf in self.mapped_files:
            mf.destroy()
        with self._lock:
            self.mapped_files = []
        self.flushed_where = self.committed_where = 0
        try:
            os.rmdir(self.store_path)
        except OSError:
            pass

    def shutdown(self) -> None:
        """Close every file (the caller flushes first)."""
        for mf in self.mapped_files:
            mf.close()

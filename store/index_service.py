"""IndexService: the list of IndexFiles under ``<storePathRootDir>/index`` and the key index built from dispatch.

It is the store's ``BuildIndex`` dispatcher: for every dispatched CommitLog record
it indexes ``topic#UNIQ_KEY`` and ``topic#k`` for every non-empty space-separated
``k`` of ``KEYS`` (spec message-and-store-format.md §9), rolling to a new file when
the last one is full. Queries walk the files newest to oldest.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from common.mapped_file import CreateGuard, DiskFullError
from common.speedups import IS_COMPILED as _COMPILED
from common.util import now_ms
from store.config import MessageStoreConfig
from store.dispatch import DispatchRequest
from store.index_file import IndexFile, IndexFileError, PrefixedKeyHasher, index_file_name

__all__ = ["IndexService", "QueryOffsetResult", "IndexCheckpoint", "build_key"]

log = logging.getLogger(__name__)

_TRANSACTION_TYPE_MASK = 0xC
_TRANSACTION_ROLLBACK_TYPE = 0xC
_MAX_TRY_CREATE = 3


class IndexCheckpoint(Protocol):
    """What IndexService needs of the store checkpoint (store's StoreCheckpoint)."""

    index_msg_timestamp: int

    def flush(self) -> None: ...


@dataclass(slots=True)
class QueryOffsetResult:
    """Hash matches of an index query plus the last file's end timestamp / phy offset."""

    phy_offsets: list[int] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0

    def __iter__(self):  # allows ``offsets, ts, phy = service.query_offset(...)``
        yield self.phy_offsets
        yield self.index_last_update_timestamp
        yield self.index_last_update_phyoffset


def build_key(topic: str, key: str) -> str:
    """The indexed string for ``key`` of ``topic``: ``topic#key``."""
    return f"{topic}#{key}"


class IndexService:
    """The IndexFiles of one store.

    ``config`` is the store's MessageStoreConfig (read: ``maxHashSlotNum``,
    ``maxIndexNum``, ``maxMsgsNumBatch``, ``messageIndexEnable``); ``store_path``
    is the index directory (``<storePathRootDir>/index``). ``checkpoint`` (optional)
    receives the end timestamp of every file that fills up and is used by
    :meth:`load` for abnormal recovery. ``clock`` names new files.
    ``run_in_background(fn)`` may hand the flush of a full file to an executor;
    by default it runs inline.

    Thread-safety: one writer (the dispatcher) and any number of readers; a lock
    guards the file list.
    """

    def __init__(
        self,
        config: MessageStoreConfig,
        store_path: str,
        checkpoint: IndexCheckpoint | None = None,
        *,
        clock: Callable[[], int] = now_ms,
        run_in_background: Callable[[Callable[[], None]], object] | None = None,
        guard: CreateGuard | None = None,
    ) -> None:
        self.config = config
        self._guard = guard  # told when a new file finds no room (the store is then marked disk-full)
        self._no_room = False
        self.store_path = store_path
        self.checkpoint = checkpoint
        self.hash_slot_num = int(config.maxHashSlotNum)
        self.index_num = int(config.maxIndexNum)
        self._clock = clock
        self._run_in_background = run_in_background
        self._lock = threading.RLock()
        self.index_files: list[IndexFile] = []
        # per-topic hasher of "topic#": only the key part is hashed per entry
        self._hashers: dict[str, PrefixedKeyHasher] = {}
        self._dirty: IndexFile | None = None  # last file whose header changed since sync_header

    # -- lifecycle --------------------------------------------------------

    def load(self, last_exit_ok: bool, index_msg_timestamp: int | None = None) -> bool:
        """Open every file of the index directory in name order.

        After an abnormal exit, files whose end timestamp is newer than the
        checkpoint's ``indexMsgTimestamp`` are deleted: their content is rebuilt
        by the abnormal CommitLog recovery's re-dispatch. ``index_msg_timestamp``
        overrides the checkpoint's value. Returns False when a file cannot be opened.
        """
        if index_msg_timestamp is None:
            index_msg_timestamp = self.checkpoint.index_msg_timestamp if self.checkpoint is not None else 0
        try:
            names = sorted(os.listdir(self.store_path))
        except FileNotFoundError:
            return True
        loaded: list[IndexFile] = []
        for name in names:
            path = os.path.join(self.store_path, name)
            if not os.path.isfile(path) or not name.isdigit():
                continue
            try:
                f = IndexFile(path, self.hash_slot_num, self.index_num)
            except (IndexFileError, OSError, ValueError) as e:
                log.error("load index file %s failed: %s", path, e)
                for g in loaded:
                    g.close()
                return False
            f.load()
            if not last_exit_ok and f.end_timestamp > index_msg_timestamp:
                log.info("abnormal exit: dropping index file %s (end %d > checkpoint %d)",
                         name, f.end_timestamp, index_msg_timestamp)
                f.destroy()
                continue
            loaded.append(f)
        with self._lock:
            self.index_files = loaded
        return True

    def flush(self) -> None:
        """Flush the last file (the only one still written to)."""
        with self._lock:
            last = self.index_files[-1] if self.index_files else None
        if last is not None:
            self._flush_file(last)

    def shutdown(self) -> None:
        """Flush and unmap every file."""
        with self._lock:
            files = list(self.index_files)
        for f in files:
            f.flush()
            f.close()

    def destroy(self) -> None:
        """Delete every index file."""
        with self._lock:
            files, self.index_files = self.index_files, []
        for f in files:
            f.destroy()

    # -- write ------------------------------------------------------------

    def dispatch(self, request: DispatchRequest) -> None:
        """CommitLogDispatcher entry point: index ``request`` when ``messageIndexEnable``."""
        if self.config.messageIndexEnable:
            self.build_index(request)

    def build_index(self, req: DispatchRequest) -> None:
        """Index one dispatched record (a store.dispatch.DispatchRequest).

        Skipped when the record lies before the last file's endPhyOffset (already
        indexed: re-dispatch after recovery) and for ROLLBACK transaction records.
        PREPARED records are indexed, as RocketMQ 4.9 does. The header reaches the
        file on :meth:`sync_header` (the dispatcher calls it after each batch),
        flush and roll; a direct caller that reads the raw file should call it.
        """
        files = self.index_files  # only this writer appends; cleanup swaps the list: a plain read is safe
        f = files[-1] if files else None
        if f is None or f.header.index_count >= f.index_num:
            f = self._retry_get_and_create_index_file()
            if f is None:
                if not self._no_room:
                    log.error("build index failed: no index file; offset %d", req.commit_log_offset)
                return
        offset = req.commit_log_offset
        if offset < f.header.end_phy_offset:
            return
        if (req.sys_flag & _TRANSACTION_TYPE_MASK) == _TRANSACTION_ROLLBACK_TYPE:
            return
        topic = req.topic
        uniq = req.uniq_key
        keys = req.keys
        if _COMPILED:
            # the compiled index_put_keys hashes whole "topic#key" strings faster than any prefix trick
            prefix = topic + "#"
            if keys:
                items = [prefix + k for k in keys.split(" ") if k] if " " in keys else [prefix + keys]
                if uniq:
                    items.insert(0, prefix + uniq)
            elif uniq:
                items = [prefix + uniq]
            else:
                return
            put = IndexFile.put_keys
        else:
            hasher = self._hashers.get(topic)
            if hasher is None:
                if len(self._hashers) > 10_000:
                    self._hashers.clear()
                hasher = self._hashers[topic] = PrefixedKeyHasher(topic + "#")
            if keys:
                items = [hasher(k) for k in keys.split(" ") if k] if " " in keys else [hasher(keys)]
                if uniq:
                    items.insert(0, hasher(uniq))
            elif uniq:
                items = [hasher(uniq)]
            else:
                return
            put = IndexFile.put_hashes
        ts = req.store_timestamp
        self._dirty = f
        try:
            done = put(f, items, offset, ts)
            while done < len(items):
                items = items[done:]
                f = self._roll(f, offset)
                if f is None:
                    return
                self._dirty = f
                done = put(f, items, offset, ts)
                if done == 0:
                    log.error("put key at offset %d failed: a new index file is already full", offset)
                    return
        except DiskFullError as e:  # no room for the file's next entries
            self._entries_without_room(e)
            return
        if self._no_room:
            self._room_again(f)

    def build_index_many(self, requests: list) -> None:
        """:meth:`build_index` each request, in order; with the compiled speedups a run of records
        goes to the last file in one call (records met at a roll take the per-record path)."""
        if not _COMPILED:
            # pure: the per-record path's prefix hashing beats the generic twin
            build = self.build_index
            for r in requests:
                build(r)
            return
        i = 0
        n = len(requests)
        while i < n:
            files = self.index_files
            f = files[-1] if files else None
            if f is not None and f.header.index_count < f.index_num:
                count = f.header.index_count
                try:
                    j = f.put_requests(requests, i)
                except DiskFullError as e:  # the rest of the run is left out of the index
                    self._dirty = f
                    self._entries_without_room(e)
                    return
                if f.header.index_count != count:
                    self._dirty = f
                if self._no_room:
                    self._room_again(f)
                i = j
                if i >= n:
                    return
            # no file, or the file is full at this record or cannot take all its keys: roll here
            self.build_index(requests[i])
            i += 1

    def _entries_without_room(self, e: DiskFullError) -> None:
        """Records are left out of the index (their queues still get them) until space returns."""
        if not self._no_room:
            log.error("no room for index entries, records are not indexed until space returns: %s", e)
        self._no_room = True
        if self._guard is not None:
            self._guard.create_failed(e.filename or self.store_path, e)

    def _room_again(self, f: IndexFile) -> None:
        log.info("index file %s has room again: indexing again", f.file_name)
        self._no_room = False

    def sync_header(self) -> None:
        """Write the header of the file written since the last call to its mapping (cheap, no msync)."""
        f, self._dirty = self._dirty, None
        if f is not None:
            f.store_header()

    def _roll(self, f: IndexFile, offset: int) -> IndexFile | None:
        """``f`` is full: the file that follows it (created), or None when none can be created."""
        log.info("index file %s is full, creating another one", f.file_name)
        nf = self._retry_get_and_create_index_file()
        if nf is None or nf is f:
            if not self._no_room:
                log.error("put key at offset %d failed: cannot create an index file", offset)
            return None
        return nf

    def _retry_get_and_create_index_file(self) -> IndexFile | None:
        for _ in range(_MAX_TRY_CREATE):
            f = self.get_and_create_last_index_file()
            if f is not None:
                return f
            if self._no_room:
                break  # trying again at once cannot find room
        return None

    def get_and_create_last_index_file(self) -> IndexFile | None:
        """The last file if it has room, else a new file following it."""
        prev = None
        with self._lock:
            if self.index_files:
                last = self.index_files[-1]
                if not last.is_write_full():
                    return last
                prev = last
            end_phy = prev.end_phy_offset if prev is not None else 0
            end_ts = prev.end_timestamp if prev is not None else 0
            try:
                os.makedirs(self.store_path, exist_ok=True)
                path = self._new_file_path()
                f = IndexFile(path, self.hash_slot_num, self.index_num, end_phy, end_ts)
            except DiskFullError as e:
                # records are left out of the index (their queues still get them) until space returns
                if not self._no_room:
                    log.error("no room for a new index file, records are not indexed until space returns: %s", e)
                self._no_room = True
                if self._guard is not None:
                    self._guard.create_failed(e.filename or self.store_path, e)
                return None
            except OSError as e:
                log.error("create index file failed: %s", e)
                return None
            if self._no_room:
                self._room_again(f)
            self.index_files.append(f)
        if prev is not None:
            if self._run_in_background is not None:
                self._run_in_background(lambda p=prev: self._flush_file(p))
            else:
                self._flush_file(prev)
        return f

    def _new_file_path(self) -> str:
        # Names are creation times in ms; two files in one ms would collide, so
        # move forward to keep names unique and ordered.
        ts = self._clock()
        if self.index_files:
            try:
                ts = max(ts, _name_ms(self.index_files[-1].file_name) + 1)
            except ValueError:
                pass
        while True:
            path = os.path.join(self.store_path, index_file_name(ts))
            if not os.path.exists(path):
                return path
            ts += 1

    def _flush_file(self, f: IndexFile) -> None:
        full_ts = f.end_timestamp if f.is_write_full() else 0
        f.flush()
        if full_ts > 0 and self.checkpoint is not None:
            self.checkpoint.index_msg_timestamp = full_ts
            self.checkpoint.flush()

    # -- read -------------------------------------------------------------

    def query_offset(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryOffsetResult:
        """CommitLog offsets indexed under ``topic#key`` with store time in [begin, end].

        At most ``min(max_num, maxMsgsNumBatch)``, newest file and entry first. These
        are hash matches: callers must check each record's topic and keys.
        The result unpacks as ``(phy_offsets, last_update_timestamp, last_update_phyoffset)``.
        """
        max_num = min(max_num, self.config.maxMsgsNumBatch)
        result = QueryOffsetResult()
        idx_key = build_key(topic, key)
        with self._lock:
            files = list(self.index_files)
        if not files:
            return result
        last = files[-1]
        result.index_last_update_timestamp = last.end_timestamp
        result.index_last_update_phyoffset = last.end_phy_offset
        for f in reversed(files):
            if f.is_time_matched(begin, end):
                f.select_phy_offset(result.phy_offsets, idx_key, max_num, begin, end)
            if f.begin_timestamp < begin or len(result.phy_offsets) >= max_num:
                break
        return result

    # -- cleanup ----------------------------------------------------------

    def delete_expired_file(self, offset: int) -> int:
        """Delete files (never the last) whose endPhyOffset is below ``offset``, the
        CommitLog min offset. Returns the number deleted."""
        with self._lock:
            if not self.index_files or self.index_files[0].end_phy_offset >= offset:
                return 0
            doomed = []
            for f in self.index_files[:-1]:
                if f.end_phy_offset < offset:
                    doomed.append(f)
                else:
                    break
            self.index_files = self.index_files[len(doomed):]
        for f in doomed:
            log.info("deleting expired index file %s (endPhyOffset %d < %d)", f.file_name, f.end_phy_offset, offset)
            f.destroy()
        return len(doomed)

    @property
    def file_count(self) -> int:
        """Number of index files currently open."""
        return len(self.index_files)


def _name_ms(name: str) -> int:
    """Inverse of index_file_name (local time) in ms."""
    if len(name) != 17 or not name.isdigit():
        raise ValueError(name)
    t = time.strptime(name[:14], "%Y%m%d%H%M%S")
    return int(time.mktime(t)) * 1000 + int(name[14:])

"""One IndexFile: a fixed-size hash index from message keys to CommitLog offsets.

Byte layout (RocketMQ 4.9, all big-endian; spec message-and-store-format.md §9)::

    header   40 B   int64 beginTimestamp, int64 endTimestamp,
                    int64 beginPhyOffset, int64 endPhyOffset,
                    int32 hashSlotCount, int32 indexCount
    slots    hashSlotNum x int32     newest entry number of the slot, 0 = empty
    entries  indexNum x 20 B         int32 keyHash, int64 phyOffset,
                                     int32 timeDiff (s), int32 prevEntry

Entry 0 is never used (``indexCount`` starts at 1) so that 0 can mean "no entry".
The file is a plain ``mmap`` of one file whose blocks are reserved at creation; it does not need
a MappedFileQueue because an IndexFile never grows.
"""

from __future__ import annotations

import mmap
import operator
import os
import struct
import sys
import time
from collections.abc import Iterator

from common.errors import StoreError
from common.mapped_file import DiskFullError, create_reserved_file, reserve_blocks, sync_file
from common.speedups import index_build_many, index_put, index_put_keys, java_hash

__all__ = [
    "INDEX_HEADER_SIZE",
    "HASH_SLOT_SIZE",
    "INDEX_ENTRY_SIZE",
    "INVALID_INDEX",
    "IndexHeader",
    "IndexFile",
    "IndexFileError",
    "index_key_hash",
    "PrefixedKeyHasher",
    "index_file_size",
    "index_file_name",
]

INDEX_HEADER_SIZE = 40
ENTRIES_RESERVE_CHUNK = 4 * 1024 * 1024  # entry bytes reserved at a time (~210k entries)
ENTRIES_RESERVE_MIN = 64 * 1024  # ... or this little when the disk has no room for a chunk
HASH_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20
INVALID_INDEX = 0
_INT_MAX = 0x7FFFFFFF

_HEADER = struct.Struct(">qqqqii")
_INT = struct.Struct(">i")
_ENTRY = struct.Struct(">iqii")


class IndexFileError(StoreError, OSError):
    """An index file cannot be opened (wrong size, unreadable)."""


_POW_MAX = 1024
# 31**k mod 2**32, lowest power first: String.hashCode() = sum(u[n-1-k] * 31**k) mod 2**32, so the
# units are walked in reverse against this table (map() stops at the shorter iterable: no slicing)
_POW31 = [pow(31, k, 1 << 32) for k in range(_POW_MAX)]
_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"
_mul = operator.mul


def _java_hash_unsigned(s: str) -> int:
    """Java ``String.hashCode()`` as an unsigned 32-bit value."""
    return java_hash(s) & 0xFFFFFFFF


def _java_hash(s: str) -> int:
    """Same value as common.util.java_string_hash (common.speedups.java_hash, compiled when available)."""
    return java_hash(s)


def _abs_hash(h: int) -> int:
    """``indexKeyHashMethod`` of an unsigned 32-bit hash: abs of the signed value, MIN_VALUE -> 0."""
    if h & 0x80000000:
        return 0 if h == 0x80000000 else 0x100000000 - h
    return h


_TAIL = 12  # long keys: the head's hash is cached (UNIQ_KEYs of one producer share their first 20 chars)
_POW_TAIL = _POW31[_TAIL]


class PrefixedKeyHasher:
    """``index_key_hash(prefix + key)`` with the prefix's hash computed once.

    hash(p + k) = hash(p) * 31**len16(k) + hash(k) (mod 2**32), so indexing
    ``topic#key`` only hashes ``key``. For long ASCII keys the hash of all but the
    last 12 characters is cached too (bounded), since message ids and order keys
    of one producer share long heads.
    """

    __slots__ = ("_h", "_heads")

    def __init__(self, prefix: str) -> None:
        self._h = _java_hash_unsigned(prefix)
        self._heads: dict[str, int] = {}

    def __call__(self, key: str) -> int:
        n = len(key)
        if key.isascii() and n < _POW_MAX:
            if n > 2 * _TAIL:
                head = key[: n - _TAIL]
                heads = self._heads
                hh = heads.get(head)
                if hh is None:
                    if len(heads) >= 1024:
                        heads.clear()
                    hh = heads[head] = sum(map(_mul, reversed(head.encode("ascii")), _POW31))
                h = hh * _POW_TAIL + sum(map(_mul, reversed(key[n - _TAIL :].encode("ascii")), _POW31))
            else:
                h = sum(map(_mul, reversed(key.encode("ascii")), _POW31))
            h = (self._h * _POW31[n] + h) & 0xFFFFFFFF
        else:
            n = len(key.encode(_UTF16_NATIVE)) // 2
            h = (self._h * pow(31, n, 1 << 32) + _java_hash_unsigned(key)) & 0xFFFFFFFF
        if h & 0x80000000:
            return 0 if h == 0x80000000 else 0x100000000 - h
        return h


def index_key_hash(key: str) -> int:
    """RocketMQ's ``indexKeyHashMethod``: ``abs(String.hashCode())``, Integer.MIN_VALUE mapped to 0."""
    h = java_hash(key)
    if h < 0:
        return 0 if h == -0x80000000 else -h
    return h


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    """Size in bytes of an IndexFile with this geometry."""
    return INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE


def index_file_name(ts_ms: int) -> str:
    """RocketMQ's ``UtilAll.timeMillisToHumanString``: ``yyyyMMddHHmmssSSS`` in the local time zone."""
    lt = time.localtime(ts_ms // 1000)
    return time.strftime("%Y%m%d%H%M%S", lt) + f"{ts_ms % 1000:03d}"


#: the header's fields in file order (beginTimestamp, endTimestamp, beginPhyOffset, endPhyOffset,
#: hashSlotCount, indexCount)
_HEADER_FIELDS = ("begin_timestamp", "end_timestamp", "begin_phy_offset", "end_phy_offset", "hash_slot_count",
                  "index_count")
_header_values = operator.attrgetter(*_HEADER_FIELDS)


class IndexHeader:
    """The 40-byte header, kept in memory; :meth:`store` writes it to the buffer.

    Writers store it after each batch of puts (IndexService.sync_header), on
    flush and on close, instead of repacking 40 bytes per key."""

    __slots__ = ("_buf", *_HEADER_FIELDS)

    def __init__(self, buf) -> None:
        self._buf = buf
        self.begin_timestamp = 0
        self.end_timestamp = 0
        self.begin_phy_offset = 0
        self.end_phy_offset = 0
        self.hash_slot_count = 0
        self.index_count = 1

    def load(self) -> None:
        """Read the header from the buffer; a stored indexCount <= 0 reads as 1."""
        for name, value in zip(_HEADER_FIELDS, _HEADER.unpack_from(self._buf, 0), strict=True):
            setattr(self, name, value)
        if self.index_count <= 0:
            self.index_count = 1

    def store(self) -> None:
        """Write every header field to the buffer."""
        _HEADER.pack_into(self._buf, 0, *_header_values(self))

    def as_dict(self) -> dict[str, int]:
        """Header fields under RocketMQ's names (for tools and logs)."""
        return {
            "beginTimestamp": self.begin_timestamp,
            "endTimestamp": self.end_timestamp,
            "beginPhyOffset": self.begin_phy_offset,
            "endPhyOffset": self.end_phy_offset,
            "hashSlotCount": self.hash_slot_count,
            "indexCount": self.index_count,
        }


class IndexFile:
    """One IndexFile on disk.

    ``IndexFile(path, hash_slot_num, index_num)`` opens ``path`` (creating a
    zero-filled file of the right size if it does not exist). For a new file
    that follows a full one, pass the previous file's ``end_phy_offset`` and
    ``end_timestamp``: RocketMQ pre-sets the new header's begin/end fields to
    them so that a query's time filter and the "already indexed" check of
    :class:`store.index_service.IndexService` keep working across the roll.
    Call :meth:`load` to read the header of an existing file.
    """

    def __init__(
        self,
        path: str,
        hash_slot_num: int,
        index_num: int,
        end_phy_offset: int = 0,
        end_timestamp: int = 0,
        *,
        read_only: bool = False,
    ) -> None:
        if hash_slot_num <= 0 or index_num <= 0:
            raise ValueError("hash_slot_num and index_num must be positive")
        self.path = path
        self.file_name = os.path.basename(path)
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.file_size = index_file_size(hash_slot_num, index_num)
        self._entries_base = INDEX_HEADER_SIZE + hash_slot_num * HASH_SLOT_SIZE
        self.read_only = read_only
        exists = os.path.exists(path)
        if exists:
            actual = os.path.getsize(path)
            if actual != self.file_size:
                raise IndexFileError(
                    f"index file {path} has {actual} bytes, expected {self.file_size} "
                    f"(maxHashSlotNum={hash_slot_num}, maxIndexNum={index_num})"
                )
        elif read_only:
            raise IndexFileError(f"index file {path} does not exist")
        # Blocks are reserved before anything is written through the mapping (a store into a page
        # the disk cannot back is a SIGBUS): header and slots at creation, entries a chunk at a time
        # as they fill (a new file takes its first chunk), so the file does not take 420 MB of disk
        # (the default geometry) before its first entry. No room: DiskFullError, no file left.
        if exists:
            fd = os.open(path, os.O_RDONLY if read_only else os.O_RDWR)
            self._reserved = 0  # unknown (an older writer's sparse file): reserved again from 0 on the first put
        else:
            self._reserved = min(self.file_size, self._entries_base + ENTRIES_RESERVE_CHUNK)
            fd = create_reserved_file(path, self.file_size, reserve=self._reserved)
        self._writable_num = self._writable_for(self._reserved)
        try:
            access = mmap.ACCESS_READ if read_only else mmap.ACCESS_WRITE
            self._mm = mmap.mmap(fd, self.file_size, access=access)
        finally:
            os.close(fd)
        self.header = IndexHeader(self._mm)
        self._closed = False
        if not exists:
            if end_phy_offset > 0:
                self.header.begin_phy_offset = end_phy_offset
                self.header.end_phy_offset = end_phy_offset
            if end_timestamp > 0:
                self.header.begin_timestamp = end_timestamp
                self.header.end_timestamp = end_timestamp
            self.header.store()

    # -- header accessors -------------------------------------------------

    @property
    def begin_timestamp(self) -> int:
        return self.header.begin_timestamp

    @property
    def end_timestamp(self) -> int:
        return self.header.end_timestamp

    @property
    def begin_phy_offset(self) -> int:
        return self.header.begin_phy_offset

    @property
    def end_phy_offset(self) -> int:
        return self.header.end_phy_offset

    @property
    def index_count(self) -> int:
        return self.header.index_count

    @property
    def hash_slot_count(self) -> int:
        return self.header.hash_slot_count

    def load(self) -> None:
        """Read the header of an existing file."""
        self.header.load()

    def is_write_full(self) -> bool:
        """True once ``indexCount`` reached ``maxIndexNum`` (so at most indexNum-1 entries)."""
        return self.header.index_count >= self.index_num

    def is_time_matched(self, begin: int, end: int) -> bool:
        """Whether [begin, end] overlaps the file's [beginTimestamp, endTimestamp] (RocketMQ's rule)."""
        b, e = self.header.begin_timestamp, self.header.end_timestamp
        return (begin < b and end > e) or (b <= begin <= e) or (b <= end <= e)

    # -- write ------------------------------------------------------------

    def _writable_for(self, reserved: int) -> int:
        """Entries (counted from 0) whose bytes lie within the first ``reserved`` bytes."""
        return max(0, min(self.index_num, (reserved - self._entries_base) // INDEX_ENTRY_SIZE))

    def _reserve_more(self) -> None:
        """Reserve the blocks of the next chunk of entries (from byte 0 for a file opened from disk,
        up to past its last entry); DiskFullError when the disk has no room for them."""
        if self._writable_num >= self.index_num:
            return
        start = self._reserved
        past = self._entries_base + max(self._writable_num, self.header.index_count) * INDEX_ENTRY_SIZE
        end = min(self.file_size, past + ENTRIES_RESERVE_CHUNK)
        fd = os.open(self.path, os.O_RDWR)
        try:
            try:
                reserve_blocks(fd, start, end - start, self.path)
            except DiskFullError:
                # nearly full: a small step still indexes what was already accepted
                end = min(self.file_size, past + ENTRIES_RESERVE_MIN)
                reserve_blocks(fd, start, end - start, self.path)
        finally:
            os.close(fd)
        self._reserved = end
        self._writable_num = self._writable_for(end)

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """Append an entry for ``key``; False when the file is full (header written through)."""
        if not self.put_hash(index_key_hash(key), phy_offset, store_timestamp):
            return False
        self.header.store()
        return True

    def put_hash(self, key_hash: int, phy_offset: int, store_timestamp: int) -> bool:
        """Append an entry for a key whose :func:`index_key_hash` is ``key_hash``; False when full.

        The header is updated in memory only; call :meth:`store_header` (or flush) to write it.
        """
        h = self.header
        count = h.index_count
        if count >= self._writable_num:
            self._reserve_more()
            if count >= self._writable_num:
                return False
        if index_put(self._mm, self.hash_slot_num, count, key_hash, phy_offset, self._time_diff(store_timestamp)):
            h.hash_slot_count += 1
        if count <= 1:
            h.begin_phy_offset = phy_offset
            h.begin_timestamp = store_timestamp
        h.index_count = count + 1
        h.end_phy_offset = phy_offset
        h.end_timestamp = store_timestamp
        return True

    def put_keys(self, keys: list[str], phy_offset: int, store_timestamp: int) -> int:
        """Append one entry per key (each the whole ``topic#key``; all for the same record) with
        common.speedups.index_put_keys; return how many fit (the file filled up when that is
        less than ``len(keys)``). The header is updated in memory only."""
        h = self.header
        count = h.index_count
        if count + len(keys) > self._writable_num:
            self._reserve_more()
        done, new_slots = index_put_keys(self._mm, self.hash_slot_num, count, self._writable_num, keys, phy_offset,
                                         self._time_diff(store_timestamp))
        if done:
            if count <= 1:
                h.begin_phy_offset = phy_offset
                h.begin_timestamp = store_timestamp
            h.hash_slot_count += new_slots
            h.index_count = count + done
            h.end_phy_offset = phy_offset
            h.end_timestamp = store_timestamp
        return done

    def put_requests(self, requests, start: int = 0) -> int:
        """Index ``requests[start:]`` (dispatched records) with common.speedups.index_build_many while
        each fits whole; return the index of the first record left undone (``len(requests)`` when
        all are): the file was full at it or its keys do not all fit. The header is updated in
        memory only. Same entries and header as IndexService.build_index record by record."""
        h = self.header
        old = (h.begin_timestamp, h.end_timestamp, h.begin_phy_offset, h.end_phy_offset, h.hash_slot_count,
               h.index_count)
        if h.index_count >= self._writable_num:
            self._reserve_more()
        nxt, new = index_build_many(self._mm, self.hash_slot_num, self._writable_num, requests, start, old)
        while True:
            if new != old:
                (h.begin_timestamp, h.end_timestamp, h.begin_phy_offset, h.end_phy_offset, h.hash_slot_count,
                 h.index_count) = old = new
            if nxt >= len(requests) or self._writable_num >= self.index_num:
                return nxt
            # stopped at the end of the reserved entries, not of the file: reserve more (the header
            # is up to date if that fails), go on
            self._reserve_more()
            nxt, new = index_build_many(self._mm, self.hash_slot_num, self._writable_num, requests, nxt, old)

    def _time_diff(self, store_timestamp: int) -> int:
        """Seconds from the header's beginTimestamp (0 before the first entry), clamped to int32."""
        begin_ts = self.header.begin_timestamp
        if begin_ts <= 0:
            return 0
        # Java long division truncates toward zero; negatives clamp to 0 anyway.
        delta = store_timestamp - begin_ts
        return 0 if delta < 0 else (delta // 1000 if delta < 2_147_483_647_000 else _INT_MAX)

    def put_hashes(self, key_hashes: list[int], phy_offset: int, store_timestamp: int) -> int:
        """Append one entry per hash (all for the same record); return how many fit (the file filled up
        when that is less than ``len(key_hashes)``). The header is updated in memory only."""
        h = self.header
        count = h.index_count
        if count + len(key_hashes) > self._writable_num:
            self._reserve_more()
        index_num = self._writable_num
        mm = self._mm
        slots = self.hash_slot_num
        entries_base = self._entries_base
        unpack_int = _INT.unpack_from
        pack_int = _INT.pack_into
        pack_entry = _ENTRY.pack_into
        begin_ts = h.begin_timestamp
        if begin_ts <= 0:
            time_diff = 0
        else:
            delta = store_timestamp - begin_ts
            time_diff = 0 if delta < 0 else (delta // 1000 if delta < 2_147_483_647_000 else _INT_MAX)
        done = 0
        new_slots = 0
        for key_hash in key_hashes:
            if count >= index_num:
                break
            slot_pos = INDEX_HEADER_SIZE + (key_hash % slots) * HASH_SLOT_SIZE
            slot_value = unpack_int(mm, slot_pos)[0]
            if slot_value <= INVALID_INDEX or slot_value > count:
                slot_value = INVALID_INDEX
                new_slots += 1
            pack_entry(mm, entries_base + count * INDEX_ENTRY_SIZE, key_hash, phy_offset, time_diff, slot_value)
            pack_int(mm, slot_pos, count)
            if count <= 1:
                # the first entry sets beginTimestamp: later keys of this record are 0 s from it
                h.begin_phy_offset = phy_offset
                h.begin_timestamp = store_timestamp
                time_diff = 0
            count += 1
            done += 1
        if done:
            h.hash_slot_count += new_slots
            h.index_count = count
            h.end_phy_offset = phy_offset
            h.end_timestamp = store_timestamp
        return done

    def store_header(self) -> None:
        """Write the in-memory header to the mapping (no msync)."""
        if not self._closed and not self.read_only:
            self.header.store()

    # -- read -------------------------------------------------------------

    def select_phy_offset(
        self, phy_offsets: list[int], key: str, max_num: int, begin: int, end: int
    ) -> list[int]:
        """Append to ``phy_offsets`` the offsets of entries whose hash equals ``key``'s and
        whose time lies in [begin, end], newest first, until ``len(phy_offsets) >= max_num``.

        Results are hash matches: the caller must check topic and key on the records.
        """
        h = self.header
        count = h.index_count
        mm = self._mm
        key_hash = index_key_hash(key)
        slot_value = _INT.unpack_from(mm, INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * HASH_SLOT_SIZE)[0]
        if slot_value <= INVALID_INDEX or slot_value > count or count <= 1:
            return phy_offsets
        base = self._entries_base
        begin_ts = h.begin_timestamp
        n = slot_value
        while len(phy_offsets) < max_num:
            hash_read, phy_read, time_diff, prev = _ENTRY.unpack_from(mm, base + n * INDEX_ENTRY_SIZE)
            if time_diff < 0:
                break
            time_read = begin_ts + time_diff * 1000
            if hash_read == key_hash and begin <= time_read <= end:
                phy_offsets.append(phy_read)
            if prev <= INVALID_INDEX or prev > count or prev == n or time_read < begin:
                break
            n = prev
        return phy_offsets

    def read_slot(self, slot: int) -> int:
        """Raw value of hash slot ``slot``."""
        return _INT.unpack_from(self._mm, INDEX_HEADER_SIZE + slot * HASH_SLOT_SIZE)[0]

    def read_entry(self, n: int) -> tuple[int, int, int, int]:
        """Entry ``n`` as (keyHash, phyOffset, timeDiffSeconds, prevEntry)."""
        if not 0 <= n < self.index_num:
            raise IndexError(n)
        return _ENTRY.unpack_from(self._mm, self._entries_base + n * INDEX_ENTRY_SIZE)

    def iter_slots(self) -> Iterator[tuple[int, int]]:
        """(slot, value) for every non-zero slot, in slot order."""
        mm = self._mm
        for i, (v,) in enumerate(struct.iter_unpack(">i", mm[INDEX_HEADER_SIZE : self._entries_base])):
            if v != 0:
                yield i, v

    def iter_entries(self) -> Iterator[tuple[int, int, int, int, int]]:
        """(n, keyHash, phyOffset, timeDiff, prev) for entries 1 .. indexCount-1."""
        for n in range(1, min(self.header.index_count, self.index_num)):
            yield (n, *self.read_entry(n))

    # -- lifecycle --------------------------------------------------------

    def flush(self) -> None:
        """Write the header and msync the whole file."""
        if self._closed or self.read_only:
            return
        self.header.store()
        try:
            sync_file(self.path)  # releases the GIL, unlike mmap.flush(): safe on a background thread
        except FileNotFoundError:
            pass

    def close(self) -> None:
        """Unmap the file (idempotent)."""
        if not self._closed:
            if not self.read_only:
                self.header.store()
            self._closed = True
            self._mm.close()

    def destroy(self) -> bool:
        """Unmap and delete the file."""
        self.close()
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
        return True

    def __repr__(self) -> str:
        return f"IndexFile({self.file_name}, {self.header.as_dict()})"

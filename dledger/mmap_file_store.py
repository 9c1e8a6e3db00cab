"""DLedgerMmapFileStore: DLedger's data + index mapped files, checkpoint and recovery (spec §6).

Layout under the member directory (``<storeBaseDir>/dledger-<selfId>``)::

    data/<20-digit offset>    entries (entry.py), blank-filled file tails
    index/<20-digit offset>   32-byte units at index * 32
    checkpoint                endIndex=..., committedIndex=...

The store implements the core's Storage protocol. Writes go into the mmaps;
:meth:`flush` makes them durable, :meth:`persist_checkpoint` writes the
checkpoint (the driver calls it every ``checkPointInterval``).
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable

from common.config import parse_properties
from common.mapped_file import CreateGuard, DiskFullError, MappedFile
from common.mapped_file_queue import MappedFileQueue
from common.util import read_file_with_bak, write_file_atomic
from dledger.config import DLedgerConfig
from dledger.entry import (
    BLANK_MAGIC,
    BODY_OFFSET,
    CURRENT_MAGIC,
    HEAD_STRUCT,
    HEADER_SIZE,
    INDEX_STRUCT,
    INDEX_UNIT_SIZE,
    DLedgerEntry,
    EntryFormatError,
    decode_index_unit,
    encode_index_unit,
)
from dledger.protocol import DLedgerError
from dledger.protocol import DLedgerResponseCode as C
from dledger.storage import AppendHook, apply_append_hook

__all__ = ["DLedgerMmapFileStore", "CHECKPOINT_FILE"]

log = logging.getLogger(__name__)

CHECKPOINT_FILE = "checkpoint"
MIN_BLANK_LEN = 8  # room always left for the blank marker (magic + size)
_ZERO_CHUNK = 1 << 20
INDEX_RESERVE_STEP = 64 * 1024  # index bytes reserved at a time (2,048 units)
_BLANK = struct.Struct(">ii")
_RECENT_ENTRIES = 4096
_HEAD = HEAD_STRUCT
_INDEX = INDEX_STRUCT


class DLedgerMmapFileStore:
    """The file-backed Storage. ``base_dir`` is the member directory."""

    def __init__(
        self,
        base_dir: str,
        *,
        data_file_size: int = 1024 * 1024 * 1024,
        index_file_size: int = 32 * 5 * 1024 * 1024,
        data_path: str | None = None,
        guard: CreateGuard | None = None,
    ):
        if index_file_size % INDEX_UNIT_SIZE:
            raise ValueError("index file size must be a multiple of 32")
        self.base_dir = base_dir
        # ``guard`` may refuse a new data file (the disk nearly full); files reserve their blocks
        self.data = MappedFileQueue(data_path or os.path.join(base_dir, "data"), data_file_size, guard=guard)
        # index units are reserved a step at a time as they come (a 160 MB file up front is much)
        self.index = MappedFileQueue(os.path.join(base_dir, "index"), index_file_size, reserve_step=INDEX_RESERVE_STEP)
        self.checkpoint_path = os.path.join(base_dir, CHECKPOINT_FILE)
        self._begin = 0
        self._end = -1
        self._end_term = -1
        self._committed = -1
        self._checkpointed = (None, None)
        # Recently written entries: the leader reads each new entry once per follower
        # right after appending it; serving those from memory skips index + decode.
        self._recent: dict[int, DLedgerEntry] = {}
        # truncations and resets so far: a background syncer must not take rewritten bytes as synced
        self.cuts = 0
        # on_misplaced_first_entry(pos, start): an empty log was offered a first entry at ``pos``
        # while its data starts at ``start`` (the owner explains; the append is refused anyway)
        self.on_misplaced_first_entry: Callable[[int, int], None] | None = None
        os.makedirs(base_dir, exist_ok=True)
        if not self.data.load() or not self.index.load():
            raise DLedgerError(C.DISK_ERROR, f"cannot load the mapped files under {base_dir}")
        self._recover()

    @classmethod
    def from_config(cls, cfg: DLedgerConfig) -> DLedgerMmapFileStore:
        return cls(
            cfg.default_path(),
            data_file_size=cfg.mappedFileSizeForEntryData,
            index_file_size=cfg.mappedFileSizeForEntryIndex,
            data_path=cfg.dataStorePath or None,
        )

    # ------------------------------------------------------------------ Storage protocol
    @property
    def ledger_begin_index(self) -> int:
        return self._begin

    @property
    def ledger_end_index(self) -> int:
        return self._end

    @property
    def ledger_end_term(self) -> int:
        return self._end_term

    @property
    def committed_index(self) -> int:
        return self._committed

    def get(self, index: int) -> DLedgerEntry | None:
        if index < self._begin or index > self._end:
            return None
        e = self._recent.get(index)
        if e is not None:
            return e
        unit = self._read_index_unit(index)
        if unit is None:
            return None
        _magic, pos, size, _idx, _term = unit
        mf = self.data.find_mapped_file_by_offset(pos)
        if mf is None:
            return None
        view = mf.select(pos - mf.file_from_offset, size)
        if view is None:
            return None
        try:
            e = DLedgerEntry.decode(view)
        except EntryFormatError as err:
            raise DLedgerError(C.DISK_ERROR, f"entry {index} at {pos}: {err}") from None
        finally:
            view.release()
        if e.index != index or e.pos != pos:
            raise DLedgerError(C.DISK_ERROR, f"index unit of {index} points at entry {e.index} pos {e.pos}")
        return e

    def select_data(self, pos: int, size: int | None = None) -> memoryview | None:
        """A view of ``size`` bytes of the data files at absolute position ``pos`` (default:
        up to the end of what is written in that file), e.g. a message body at entry.pos + 48.
        None when nothing is written there."""
        mf = self.data.find_mapped_file_by_offset(pos)
        if mf is None:
            return None
        return mf.select(pos - mf.file_from_offset, size)

    def append(
        self, index: int, term: int, body: bytes, pos: int | None = None, hook: AppendHook | None = None
    ) -> DLedgerEntry:
        if index != self._end + 1:
            raise DLedgerError(C.INCONSISTENT_INDEX, f"append {index} after {self._end}")
        n = len(body)
        size = BODY_OFFSET + n
        # the index unit's place first: a data entry without its unit would be an orphan on disk
        ifiles = self.index.mapped_files
        last = ifiles[-1] if ifiles else None
        irel = index * INDEX_UNIT_SIZE - last.file_from_offset if last is not None else -1
        if last is None or irel != last.wrote_position or irel + INDEX_UNIT_SIZE > last.reserved_to:
            last = None
            imf = self._index_file_for(index, create=True)
            if imf is None:
                raise self._no_file("index", self.index)
            self._reserve_unit(imf, index)
        files = self.data.mapped_files
        mf = files[-1] if files else None
        if mf is None or mf.wrote_position + size + MIN_BLANK_LEN > mf.file_size:
            mf = self._pre_append(size)  # a new file, a blank-filled tail, or the size refusal
        wp = mf.wrote_position
        start = mf.file_from_offset + wp
        if pos is not None and pos != start:
            if self._end < 0 and self.on_misplaced_first_entry is not None:
                self.on_misplaced_first_entry(pos, start)
            raise DLedgerError(C.INCONSISTENT_STATE, f"pos {pos} != write position {start}")
        if hook is not None:
            body = apply_append_hook(hook, start, body)
        elif type(body) is not bytes:
            body = bytes(body)
        if wp + size > mf.warmed_to:
            # pages ahead of the writer put in the page cache in bulk (pwrite of zeros past what
            # is written): stores into fresh mapped pages would each take an allocating fault
            mf.warm_ahead(wp + size)
        # header and body stored straight into the mapping (no encoded copy of the entry)
        mm = mf.mm
        _HEAD.pack_into(mm, wp, CURRENT_MAGIC, size, index, term, start, 0, 0, 0, n)
        mm[wp + BODY_OFFSET : wp + size] = body
        mf.wrote_position = mf.committed_position = wp + size
        entry = DLedgerEntry(index, term, body, start)
        # the index unit: usually right at the write position of the last index file
        if last is not None:
            _INDEX.pack_into(last.mm, irel, CURRENT_MAGIC, start, size, index, term)
            last.wrote_position = last.committed_position = irel + INDEX_UNIT_SIZE
        else:
            self._write_index_unit(entry)
        recent = self._recent
        recent[index] = entry
        # indexes are consecutive (a cut or reset clears the cache): drop the one that falls out,
        # O(1) where removing the dict's first key scans the holes earlier removals left
        recent.pop(index - _RECENT_ENTRIES, None)
        if self._end < 0:
            self._begin = index
        self._end, self._end_term = index, term
        return entry

    def append_run(self, entries: list[DLedgerEntry]) -> list[DLedgerEntry] | None:
        """A follower's pushed entries stored together, byte for byte as :meth:`append` stores them one
        by one (the pushed objects become the stored entries); None, with nothing written, unless the
        usual case: they follow the log's end in index and position, in the current data file and
        the reserved part of the current index file, as :meth:`append` writes them."""
        files = self.data.mapped_files
        ifiles = self.index.mapped_files
        if len(entries) < 2 or not files or not ifiles:
            return None
        mf, imf = files[-1], ifiles[-1]
        first, last = entries[0], entries[-1]
        wp = mf.wrote_position
        irel = first.index * INDEX_UNIT_SIZE - imf.file_from_offset
        total = last.pos + BODY_OFFSET + len(last.body) - first.pos
        if (first.index != self._end + 1 or first.pos != mf.file_from_offset + wp or irel != imf.wrote_position
                or wp + total + MIN_BLANK_LEN > mf.file_size or irel + len(entries) * INDEX_UNIT_SIZE > imf.reserved_to):
            return None
        p, i = first.pos, first.index
        for e in entries:
            if e.index != i or e.pos != p or e.magic != CURRENT_MAGIC or e.channel or e.chain_crc or e.body_crc:
                return None
            p += BODY_OFFSET + len(e.body)
            i += 1
        if wp + total > mf.warmed_to:
            mf.warm_ahead(wp + total)
        mm, imm = mf.mm, imf.mm
        pack, ipack = _HEAD.pack_into, _INDEX.pack_into
        recent = self._recent
        rel, ir = wp, irel
        for e in entries:
            body = e.body
            n = len(body)
            size = BODY_OFFSET + n
            index = e.index
            pack(mm, rel, CURRENT_MAGIC, size, index, e.term, e.pos, 0, 0, 0, n)
            mm[rel + BODY_OFFSET : rel + size] = body
            ipack(imm, ir, CURRENT_MAGIC, e.pos, size, index, e.term)
            rel += size
            ir += INDEX_UNIT_SIZE
            recent[index] = e
            recent.pop(index - _RECENT_ENTRIES, None)
        mf.wrote_position = mf.committed_position = rel
        imf.wrote_position = imf.committed_position = ir
        if self._end < 0:
            self._begin = first.index
        self._end, self._end_term = last.index, last.term
        return entries

    def truncate(self, entry: DLedgerEntry) -> None:
        if entry.index < self._begin and self._end >= 0:
            raise DLedgerError(C.INDEX_LESS_THAN_LOCAL_BEGIN, f"truncate {entry.index} < {self._begin}")
        if entry.index > self._end + 1:
            raise DLedgerError(C.INCONSISTENT_INDEX, f"truncate {entry.index} beyond {self._end}")
        local = self.get(entry.index)
        if local is not None and local.same_as(entry):
            self._cut(entry.index + 1, local.pos + local.size, entry.index, entry.term)
            return
        prev = self.get(entry.index - 1)
        cut_at = entry.pos
        if prev is not None:
            # Checked before cutting anything: the entry must follow our entry index - 1,
            # directly or at the start of the next data file (after a blank).
            end = prev.pos + prev.size
            size = self.data.mapped_file_size
            if entry.pos != end and not (
                entry.pos > end and entry.pos % size == 0 and entry.pos - end <= size
            ):
                raise DLedgerError(C.INCONSISTENT_STATE, f"truncate pos {entry.pos} does not follow {end}")
            cut_at = end  # also drops a stale tail (entries or a blank) left in that file
        self._cut(entry.index, cut_at, entry.index - 1, prev.term if prev else -1)
        self.append(entry.index, entry.term, entry.body, pos=entry.pos)

    def reset(self, entry: DLedgerEntry) -> None:
        # DLedger's rebuildWithPos: the data files restart in the file holding entry.pos, the
        # index files at the entry's unit; recovery finds this first entry via the index.
        self._recent.clear()
        self.cuts += 1
        self.data.destroy()
        self.index.destroy()
        mf = self.data.get_last_mapped_file_or_create(entry.pos)
        if mf is None:
            raise DLedgerError(C.DISK_ERROR, "cannot create a data file")
        mf.set_positions(entry.pos - mf.file_from_offset)
        self._begin, self._end, self._end_term = entry.index, entry.index - 1, -1
        self._committed = min(self._committed, entry.index - 1)
        self.append(entry.index, entry.term, entry.body, pos=entry.pos)

    def delete_expired_files(self, expired_before_ms: int | None = None, max_files: int = 10) -> int:
        """Delete the oldest data files (never the last one, never one holding an entry
        above the committed index; with ``expired_before_ms`` only files last modified
        before it) and the index files wholly below the new first entry. Returns the
        number of data files deleted; ``ledger_begin_index`` moves up accordingly."""
        deleted = 0
        while deleted < max_files:
            files = self.data.mapped_files
            if len(files) < 2:
                break
            first, nxt = files[0], files[1]
            h = self._entry_header(nxt, 0)
            if h is None or h[0] != CURRENT_MAGIC or h[2] - 1 > self._committed:
                break  # the next file's first entry is not committed: this one holds uncommitted ones
            if expired_before_ms is not None and first.get_last_modified_timestamp() >= expired_before_ms:
                break
            first.destroy()
            self.data.mapped_files = files[1:]
            self._begin = h[2]
            deleted += 1
        if deleted:
            self._recent = {i: e for i, e in self._recent.items() if i >= self._begin}
            limit = self._begin * INDEX_UNIT_SIZE
            ifiles = self.index.mapped_files
            keep = [f for f in ifiles if f.file_from_offset + f.file_size > limit or f is ifiles[-1]]
            for f in ifiles:
                if f not in keep:
                    f.destroy()
            self.index.mapped_files = keep
        return deleted

    def set_committed_index(self, index: int) -> None:
        self._committed = index

    def flush(self) -> None:
        self.data.flush_all()
        self.index.flush_all()

    def persist_checkpoint(self) -> None:
        """Write ``endIndex``/``committedIndex`` (skipped when unchanged)."""
        state = (self._end, self._committed)
        if state == self._checkpointed:
            return
        write_file_atomic(self.checkpoint_path, f"endIndex={self._end}\ncommittedIndex={self._committed}\n")
        self._checkpointed = state

    def close(self) -> None:
        self.flush()
        self.persist_checkpoint()
        self.data.shutdown()
        self.index.shutdown()

    def abandon(self) -> None:
        """Unmap without flushing or checkpointing: what a killed process leaves behind."""
        self.data.shutdown()
        self.index.shutdown()

    # ------------------------------------------------------------------ data / index helpers
    def _pre_append(self, size: int) -> MappedFile:
        """The file the next entry of ``size`` bytes goes to, blank-filling a too-full tail."""
        if size + MIN_BLANK_LEN > self.data.mapped_file_size:
            raise DLedgerError(C.UNEXPECTED_ARGUMENT, f"entry of {size} bytes exceeds the data file size")
        mf = self.data.get_last_mapped_file_or_create(0)
        if mf is None:
            raise self._no_file("data", self.data)
        if mf.wrote_position + size + MIN_BLANK_LEN > mf.file_size:
            remaining = mf.file_size - mf.wrote_position
            mf.write_at(mf.wrote_position, _BLANK.pack(BLANK_MAGIC, remaining))
            mf.wrote_position = mf.committed_position = mf.file_size
            mf = self.data.get_last_mapped_file_or_create(0)
            if mf is None:
                raise self._no_file("data", self.data)
        return mf

    @staticmethod
    def _no_file(kind: str, queue: MappedFileQueue) -> DLedgerError:
        if queue.create_refused_disk_full:
            return DLedgerError(C.DISK_FULL, f"no room on the disk for a new {kind} file")
        return DLedgerError(C.DISK_ERROR, f"cannot create a {kind} file")

    def _index_file_for(self, index: int, create: bool) -> MappedFile | None:
        off = index * INDEX_UNIT_SIZE
        mf = self.index.find_mapped_file_by_offset(off)
        if mf is None and create:
            last = self.index.get_last_mapped_file()
            if last is None:
                mf = self.index.get_last_mapped_file_or_create(off)
                if mf is not None:
                    mf.set_positions(off - mf.file_from_offset)
            else:
                last.wrote_position = last.committed_position = last.file_size
                mf = self.index.get_last_mapped_file_or_create(off)
        return mf

    @staticmethod
    def _reserve(mf: MappedFile, end: int) -> None:
        """The blocks of ``mf`` up to ``end`` reserved before they are written; DISK_FULL when the disk
        has no room (nothing written)."""
        try:
            mf.reserve(end)
        except DiskFullError as e:
            raise DLedgerError(C.DISK_FULL, f"no room on the disk: {e}") from e

    def _reserve_unit(self, mf: MappedFile, index: int) -> None:
        self._reserve(mf, index * INDEX_UNIT_SIZE - mf.file_from_offset + INDEX_UNIT_SIZE)

    def _write_index_unit(self, entry: DLedgerEntry) -> None:
        mf = self._index_file_for(entry.index, create=True)
        if mf is None:
            raise self._no_file("index", self.index)
        self._reserve_unit(mf, entry.index)
        rel = entry.index * INDEX_UNIT_SIZE - mf.file_from_offset
        if rel != mf.wrote_position:
            # After a truncation or a rebuild the index write position must follow the entry.
            mf.set_positions(rel)
        mf.append(encode_index_unit(entry))

    def _read_index_unit(self, index: int) -> tuple[int, int, int, int, int] | None:
        off = index * INDEX_UNIT_SIZE
        mf = self.index.find_mapped_file_by_offset(off)
        if mf is None:
            return None
        rel = off - mf.file_from_offset
        if rel + INDEX_UNIT_SIZE > mf.wrote_position:
            return None
        return decode_index_unit(mf.mm, rel)

    @staticmethod
    def _zero(mf: MappedFile, start: int, end: int) -> None:
        DLedgerMmapFileStore._reserve(mf, end)
        while start < end:
            n = min(_ZERO_CHUNK, end - start)
            mf.write_at(start, bytes(n))
            start += n

    def _cut_queue(self, q: MappedFileQueue, offset: int, recovering: bool = False) -> None:
        """Drop everything from ``offset`` on and zero the stale bytes left in the kept file,
        so recovery can never walk into entries that were cut. While recovering the old
        write position is unknown (files load as full): zero until the first all-zero
        chunk instead of to the end, which would allocate the whole sparse file."""
        mf = q.find_mapped_file_by_offset(offset)
        if mf is not None:
            rel = offset - mf.file_from_offset
            if recovering:
                self._zero_stale_tail(mf, rel)
            else:
                self._zero(mf, rel, max(rel, mf.wrote_position))
        q.truncate_dirty_files(offset)

    def _cut(self, first_removed: int, data_offset: int, new_end: int, new_end_term: int) -> None:
        self._recent.clear()
        self.cuts += 1
        self._cut_queue(self.data, data_offset)
        self._cut_queue(self.index, first_removed * INDEX_UNIT_SIZE)
        self._end, self._end_term = new_end, new_end_term
        if self._committed > new_end:
            self._committed = new_end
        # Cutting everything leaves begin where it was: the next append starts the log there.

    # ------------------------------------------------------------------ recovery
    def _entry_header(self, mf: MappedFile, rel: int):
        if rel + BODY_OFFSET > mf.file_size:
            return None
        return DLedgerEntry.peek_header(mf.mm, rel)

    def _first_entry_consistent(self, mf: MappedFile) -> bool:
        h = self._entry_header(mf, 0)
        if h is None:
            return False
        magic, size, index, term, pos, body_size = h
        if magic != CURRENT_MAGIC or size <= HEADER_SIZE or pos != mf.file_from_offset:
            return False
        if size != body_size + BODY_OFFSET:
            return False
        unit = self._read_index_unit_raw(index)
        return unit is not None and unit == (magic, pos, size, index, term)

    def _read_index_unit_raw(self, index: int):
        if index < 0:
            return None
        off = index * INDEX_UNIT_SIZE
        mf = self.index.find_mapped_file_by_offset(off)
        if mf is None:
            return None
        return decode_index_unit(mf.mm, off - mf.file_from_offset)

    def _recover(self) -> None:
        files = list(self.data)
        if not files:
            self.index.destroy()
            self._begin, self._end, self._end_term = 0, -1, -1
            self._load_checkpoint()
            return
        start = 0
        for i in range(max(0, len(files) - 3), -1, -1):
            if self._first_entry_consistent(files[i]):
                start = i
                break
        last_index, last_term = -1, -1
        first_rel = self._first_entry_rel(files[0]) if start == 0 else 0
        last_end_offset = files[start].file_from_offset + first_rel
        index_rebuild_from: int | None = None
        fi = start
        while fi < len(files):
            mf = files[fi]
            rel = first_rel if fi == 0 else 0
            next_file = False
            while True:
                h = self._entry_header(mf, rel)
                if h is None:
                    next_file = rel + MIN_BLANK_LEN > mf.file_size or self._is_blank(mf, rel)
                    break
                magic, size, index, term, pos, body_size = h
                if magic == BLANK_MAGIC:
                    next_file = True
                    break
                if magic == 0 and size == 0:
                    break
                ok = (
                    magic == CURRENT_MAGIC
                    and pos == mf.file_from_offset + rel
                    and size == body_size + BODY_OFFSET
                    and size > HEADER_SIZE
                    and rel + size <= mf.file_size
                    and (last_index < 0 or index == last_index + 1)
                    and term >= last_term
                )
                if not ok:
                    break
                unit = self._read_index_unit_raw(index) if index_rebuild_from is None else None
                if index_rebuild_from is None and unit != (magic, pos, size, index, term):
                    index_rebuild_from = index
                if index_rebuild_from is not None:
                    if index == index_rebuild_from:
                        self._cut_queue(self.index, index * INDEX_UNIT_SIZE, recovering=True)
                    self._write_index_unit(
                        DLedgerEntry(index=index, term=term, pos=pos, body=b"\0" * body_size)
                    )
                last_index, last_term = index, term
                rel += size
                last_end_offset = pos + size
            if not next_file:
                break
            fi += 1
        # Everything after the last good entry is cut (zeroed so it is never read again).
        self._cut_queue(self.data, last_end_offset, recovering=True)
        first = self.data.get_first_mapped_file()
        h = self._entry_header(first, self._first_entry_rel(first)) if first is not None else None
        self._begin = h[2] if h is not None and h[0] == CURRENT_MAGIC else max(0, last_index + 1)
        self._end, self._end_term = last_index, last_term
        if index_rebuild_from is None:
            self._cut_queue(self.index, (last_index + 1) * INDEX_UNIT_SIZE, recovering=True)
        if last_index < 0:
            self.index.destroy()
        self._load_checkpoint()

    def _first_entry_rel(self, mf: MappedFile) -> int:
        """Where the first entry of the first data file starts: 0, or after a reset the
        position its index unit (the first one stored) names."""
        h = self._entry_header(mf, 0)
        if h is not None and h[0] == CURRENT_MAGIC:
            return 0
        ifile = self.index.get_first_mapped_file()
        if ifile is None:
            return 0
        # Units before the first entry's are zero: the first "00 00 00 01" is its magic.
        at = ifile.mm.find(b"\x00\x00\x00\x01")
        if at < 0 or at % INDEX_UNIT_SIZE or at + INDEX_UNIT_SIZE > ifile.file_size:
            return 0
        _magic, pos, _size, _index, _term = decode_index_unit(ifile.mm, at)
        if mf.file_from_offset <= pos < mf.file_from_offset + mf.file_size:
            return pos - mf.file_from_offset
        return 0

    def _is_blank(self, mf: MappedFile, rel: int) -> bool:
        if rel + MIN_BLANK_LEN > mf.file_size:
            return True
        magic, _size = _BLANK.unpack_from(mf.mm, rel)
        return magic == BLANK_MAGIC

    def _zero_stale_tail(self, mf: MappedFile, rel: int) -> None:
        """After recovery: zero leftovers of a torn write until the first all-zero chunk."""
        while rel < mf.file_size:
            n = min(_ZERO_CHUNK, mf.file_size - rel)
            chunk = mf.mm[rel : rel + n]
            if not any(chunk):
                return
            self._reserve(mf, rel + n)
            mf.write_at(rel, bytes(n))
            rel += n

    def _load_checkpoint(self) -> None:
        text = read_file_with_bak(self.checkpoint_path)
        committed = -1
        if text:
            props = parse_properties(text)
            try:
                committed = int(props.get("committedIndex", "-1"))
            except ValueError:
                log.warning("bad committedIndex in %s", self.checkpoint_path)
        self._committed = min(committed, self._end)

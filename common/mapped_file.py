"""Fixed-size memory-mapped files and the ordered queue of them (spec message-and-store-format.md §1a).

A :class:`MappedFileQueue` is a directory of files of exactly ``file_size``
bytes, each named by the 20-digit offset of its first byte in the queue's byte
space. The CommitLog, every ConsumeQueue and DLedger's data/index files are such
queues. Writers put bytes straight into ``MappedFile.mm`` (an ``mmap``) and
advance ``wrote_position``; :meth:`MappedFile.flush` makes them durable with
``fdatasync`` on the file (it covers pages dirtied through the shared mapping). Not
``mmap.flush()``: CPython 3.11 holds the GIL during that msync, which would stall
the event loop even from an executor thread; fdatasync releases it.

Reads hand out ``memoryview`` slices of the mapping. A file that is destroyed
while views are alive is unlinked at once; its mapping stays valid until the
last view is dropped (Python keeps the buffer alive), so readers never touch
unmapped memory.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import mmap
import os
import threading
from typing import Protocol

from common.errors import StoreError
from common.failpoint import record_durable as _record_durable

__all__ = ["MappedFile", "MappedFileError", "DiskFullError", "CreateGuard", "create_reserved_file",
           "reserve_blocks", "offset_to_file_name", "OS_PAGE_SIZE", "sync_file"]

log = logging.getLogger(__name__)

OS_PAGE_SIZE = 4096
WARM_AHEAD = 1024 * 1024  # MappedFile.warm_ahead: bytes put into the page cache ahead of the writer
_ZEROS = bytes(2 * WARM_AHEAD)
_ZERO_VIEW = memoryview(_ZEROS)
DELETE_FILES_BATCH_MAX = 10


class MappedFileError(StoreError, OSError):
    """A mapped file cannot be created or has the wrong size."""


class DiskFullError(MappedFileError):
    """The disk has no room for a new file's blocks (ENOSPC/EDQUOT while reserving them)."""

    def __init__(self, path: str, size: int, why: str) -> None:
        super().__init__(errno.ENOSPC, f"no space left on device to reserve {size} bytes ({why})", path)
        self.size = size


class CreateGuard(Protocol):
    """Consulted by a :class:`MappedFileQueue` around the creation of each new file."""

    def before_create(self, path: str, size: int) -> bool:
        """False refuses the creation (the disk is nearly full); the queue then has no new file."""
        ...

    def create_failed(self, path: str, error: OSError) -> None:
        """The creation failed (``DiskFullError`` when the disk had no room)."""
        ...


_NO_ROOM = (errno.ENOSPC, errno.EDQUOT)
CREATING_SUFFIX = ".creating"


def reserve_blocks(fd: int, offset: int, length: int, path: str) -> None:
    """Reserve the disk blocks of ``[offset, offset + length)`` of an open file (posix_fallocate);
    :class:`DiskFullError` when the disk has no room for them."""
    try:
        os.posix_fallocate(fd, offset, length)
    except OSError as e:
        if e.errno in _NO_ROOM:
            raise DiskFullError(path, length, os.strerror(e.errno)) from e
        if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise
        # no way to reserve blocks here: at least the free space must be there now
        st = os.fstatvfs(fd)
        if st.f_bavail * st.f_frsize < length:
            raise DiskFullError(path, length, "file system cannot reserve blocks and has too little free") from None


def create_reserved_file(path: str, size: int, reserve: int | None = None) -> int:
    """Create ``path`` with ``size`` bytes whose disk blocks are reserved; return an O_RDWR descriptor.

    Files are written through shared mappings: a store into a page the disk cannot back
    is a SIGBUS that kills the process, so the blocks are reserved here (posix_fallocate)
    and a full disk fails now, as :class:`DiskFullError`, instead. ``reserve`` limits that to
    the first bytes (a file reserving the rest as it fills). The file is built under
    ``<path>.creating`` and renamed once complete; on any failure the temporary file is
    removed, so no short or half-reserved file is left for recovery to misread.
    """
    tmp = path + CREATING_SUFFIX
    try:
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as e:
        if e.errno in _NO_ROOM:
            raise DiskFullError(path, size, "cannot create the file") from e
        raise
    try:
        os.ftruncate(fd, size)
        n = size if reserve is None else min(size, reserve)
        if n > 0:
            reserve_blocks(fd, 0, n, path)
        os.rename(tmp, path)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return fd


def sync_file(path: str) -> None:
    """Make every byte written to ``path`` (through any shared mapping) durable: ``fdatasync``.

    Used instead of ``mmap.flush()``: CPython 3.11 holds the GIL for the whole
    msync, so a flush "in an executor" would still stop the event loop; os.fdatasync
    releases it. Raises FileNotFoundError when the file was deleted meanwhile.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
    finally:
        os.close(fd)


def offset_to_file_name(offset: int) -> str:
    """The 20-digit zero-padded name of the file starting at ``offset``."""
    return f"{offset:020d}"


class MappedFile:
    """One mmap'd file of a queue; its disk blocks are reserved before they are written (``reserved_to``).

    ``wrote_position`` is where the next byte goes (bytes before it are
    readable); ``committed_position`` equals it (no transient store pool);
    ``flushed_position`` is what is known to be on disk.
    """

    __slots__ = (
        "path",
        "file_name",
        "file_size",
        "file_from_offset",
        "mm",
        "wrote_position",
        "committed_position",
        "flushed_position",
        "first_create_in_queue",
        "store_timestamp",
        "_available",
        "_flush_lock",
        "warmed_to",
        "reserved_to",
        "reserve_step",
    )

    def __init__(self, path: str, file_size: int, *, create: bool = True, reserve_step: int = 0) -> None:
        self.path = path
        self.file_name = os.path.basename(path)
        if not self.file_name.isdigit():
            raise MappedFileError(f"mapped file name is not an offset: {path}")
        self.file_from_offset = int(self.file_name)
        self.file_size = file_size
        # Bytes [0, reserved_to) have their disk blocks reserved (see create_reserved_file). A file
        # reserves all of itself when created, or, with ``reserve_step``, that many bytes at a time
        # ahead of its writer (reserve()). A file opened from disk counts as unreserved: an older
        # writer may have left it sparse; its last file reserves before it is written (reserve()).
        self.reserve_step = reserve_step
        if create and not os.path.exists(path):
            self.reserved_to = file_size if reserve_step <= 0 else min(file_size, reserve_step)
            fd = create_reserved_file(path, file_size, reserve=self.reserved_to)
        else:
            self.reserved_to = 0
            fd = os.open(path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            if size != file_size:
                raise MappedFileError(f"{path}: size {size} differs from the configured {file_size}")
            self.mm = mmap.mmap(fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            # the mapping keeps its own descriptor: one fd per file, not two
            os.close(fd)
        self.wrote_position = 0
        self.committed_position = 0
        self.flushed_position = 0
        self.first_create_in_queue = False
        self.store_timestamp = 0  # store time of the last record written (CommitLog sets it)
        self._available = True
        self._flush_lock = threading.Lock()
        self.warmed_to = 0  # see warm_ahead

    # -- positions ---------------------------------------------------------

    @property
    def read_position(self) -> int:
        return self.wrote_position

    def set_positions(self, pos: int) -> None:
        """Set wrote, committed and flushed positions (after load/recovery/truncation)."""
        self.wrote_position = self.committed_position = self.flushed_position = pos

    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    def remaining(self) -> int:
        return self.file_size - self.wrote_position

    def is_available(self) -> bool:
        return self._available

    @property
    def end_offset(self) -> int:
        return self.file_from_offset + self.file_size

    def get_last_modified_timestamp(self) -> int:
        try:
            return int(os.stat(self.path).st_mtime * 1000)
        except OSError:
            return 0

    # -- writing -----------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview) -> bool:
        """Copy ``data`` at the write position; False when it does not fit."""
        pos = self.wrote_position
        n = len(data)
        if pos + n > self.file_size:
            return False
        self.mm[pos : pos + n] = data
        self.wrote_position = self.committed_position = pos + n
        return True

    def warm_ahead(self, end: int, ahead: int = WARM_AHEAD) -> None:
        """Put the pages up to ``end`` (and ``ahead`` bytes further) into the page cache before the
        writer touches them, by writing zeros there with ``pwrite``.

        Never below ``wrote_position``: only bytes nobody has written yet (zeros on disk or
        garbage past the end). A first store through the mapping into a page that is not in
        the cache costs a page fault that allocates, zeroes and reserves the page; on some
        kernels that is several microseconds per page, and worse when it lands in reclaim.
        One ``pwrite`` per ``ahead`` bytes does the same work in bulk; the stores that
        follow take only minor faults.
        """
        start = max(self.warmed_to, self.wrote_position)
        if end <= start and self.warmed_to:
            return
        stop = min(self.file_size, max(end, start) + ahead)
        if stop <= start:
            self.warmed_to = self.file_size
            return
        try:
            fd = os.open(self.path, os.O_WRONLY)
        except OSError as e:
            log.warning("warm_ahead %s: %s", self.path, e)
            self.warmed_to = self.file_size  # writes still go through the mapping
            return
        try:
            os.pwrite(fd, _ZERO_VIEW[: stop - start] if stop - start <= len(_ZERO_VIEW) else bytes(stop - start), start)
        except OSError as e:  # not for want of space (the blocks are reserved): an I/O error
            log.warning("warm_ahead %s: %s", self.path, e)
            self.warmed_to = self.file_size
            return
        finally:
            os.close(fd)
        self.warmed_to = stop

    def reserve(self, end: int) -> None:
        """Reserve the disk blocks up to ``end`` (and ``reserve_step`` further; without a step, the
        whole file); DiskFullError when the disk has no room. Writers call it before writing past
        ``reserved_to``."""
        if end <= self.reserved_to:
            return
        step = self.reserve_step
        target = self.file_size if step <= 0 else min(self.file_size, max(end, self.reserved_to + step))
        fd = os.open(self.path, os.O_RDWR)
        try:
            reserve_blocks(fd, self.reserved_to, target - self.reserved_to, self.path)
        finally:
            os.close(fd)
        self.reserved_to = target

    def write_at(self, pos: int, data: bytes | bytearray | memoryview) -> None:
        """Write ``data`` at ``pos`` without moving positions (in-place patches)."""
        self.mm[pos : pos + len(data)] = data

    def dirty_pages(self) -> int:
        return self.wrote_position // OS_PAGE_SIZE - self.flushed_position // OS_PAGE_SIZE

    def is_able_to_flush(self, least_pages: int) -> bool:
        if self.is_full() and self.wrote_position > self.flushed_position:
            return True
        if least_pages > 0:
            return self.dirty_pages() >= least_pages
        return self.wrote_position > self.flushed_position

    def flush(self, least_pages: int = 0) -> int:
        """msync the dirty range when at least ``least_pages`` pages are dirty (0: any byte).

        Returns the flushed position. Safe to call from an executor thread: the
        GIL is released during the sync.
        """
        if not self._available:
            return self.flushed_position
        if self.is_able_to_flush(least_pages):
            with self._flush_lock:
                target = self.wrote_position
                if target > self.flushed_position:
                    try:
                        sync_file(self.path)
                    except (OSError, ValueError) as e:  # deleted under us by destroy()
                        if self._available:
                            raise
                        log.debug("flush of destroyed file %s ignored: %s", self.path, e)
                        return self.flushed_position
                    if target > self.flushed_position:
                        self.flushed_position = target
                    if _record_durable is not None:  # fault suite only (env var); None otherwise
                        _record_durable(self.path, target)
        return self.flushed_position

    # -- reading -----------------------------------------------------------

    def select(self, pos: int, size: int | None = None) -> memoryview | None:
        """A view of ``size`` bytes (default: up to the read position) at file position ``pos``."""
        rp = self.wrote_position
        if pos < 0 or pos >= rp:
            return None
        end = rp if size is None else pos + size
        if end > rp:
            return None
        try:
            return memoryview(self.mm)[pos:end]
        except ValueError:  # closed meanwhile (deleted by the cleanup): as if already gone
            return None

    # -- lifecycle ---------------------------------------------------------

    def close(self) -> None:
        """Unmap and close (the mapping lingers while views of it exist)."""
        if not self._available:
            return
        self._available = False
        with self._flush_lock:
            try:
                self.mm.close()
            except BufferError:
                pass  # exported views still alive; the mapping is freed with them

    def destroy(self) -> bool:
        """Close and delete the file."""
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        return True

    def __repr__(self) -> str:
        return f"MappedFile({self.file_name}, wrote={self.wrote_position}, flushed={self.flushed_position})"

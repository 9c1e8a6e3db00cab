"""StoreCheckpoint: the 4 KiB ``checkpoint`` file (spec message-and-store-format.md §7).

Bytes 0, 8, 16 hold int64 physicMsgTimestamp, logicsMsgTimestamp and
indexMsgTimestamp; the rest of the page is zero.
"""

from __future__ import annotations

import mmap
import os
import struct
import threading

from common.mapped_file import create_reserved_file, sync_file

__all__ = ["StoreCheckpoint", "CHECKPOINT_FILE_SIZE"]

CHECKPOINT_FILE_SIZE = 4096
_LAYOUT = struct.Struct(">qqq")


class StoreCheckpoint:
    """The checkpoint of one store; attributes are written to disk by :meth:`flush`."""

    def __init__(self, path: str) -> None:
        self.path = path
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, exist_ok=True)
        if os.path.exists(path):
            fd = os.open(path, os.O_RDWR)
        else:  # blocks reserved: a write into an unbacked page of the mapping would be a SIGBUS
            fd = create_reserved_file(path, CHECKPOINT_FILE_SIZE)
        try:
            if os.fstat(fd).st_size < CHECKPOINT_FILE_SIZE:
                os.ftruncate(fd, CHECKPOINT_FILE_SIZE)
                os.posix_fallocate(fd, 0, CHECKPOINT_FILE_SIZE)
            self._mm = mmap.mmap(fd, CHECKPOINT_FILE_SIZE)
        finally:
            os.close(fd)
        self._lock = threading.Lock()
        self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp = _LAYOUT.unpack_from(
            self._mm, 0
        )

    def flush(self) -> None:
        """Write the three timestamps and sync the page."""
        with self._lock:
            if self._mm.closed:
                return
            _LAYOUT.pack_into(self._mm, 0, self.physic_msg_timestamp, self.logics_msg_timestamp,
                              self.index_msg_timestamp)
        # fdatasync outside the lock: it releases the GIL (mmap.flush does not)
        try:
            sync_file(self.path)
        except FileNotFoundError:
            pass

    def shutdown(self) -> None:
        self.flush()
        with self._lock:
            self._mm.close()

    def get_min_timestamp(self) -> int:
        """min(physic, logics) − 3 s, floored at 0: where abnormal recovery may start."""
        return max(0, min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000)

    def get_min_timestamp_index(self) -> int:
        return min(self.get_min_timestamp(), self.index_msg_timestamp)

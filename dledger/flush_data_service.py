"""FlushDataService's fdatasync calls without an executor round trip.

DLedger flushes what was written every ``flushFileInterval`` ms in the background. Handing
each flush to the loop's thread pool costs more CPU than the sync itself: the pool's Python
thread needs the GIL to start and to finish, which the busy loop holds (a forced switch each
time), and its answer wakes the loop. Here each round is one :meth:`FileSyncer.request` from
the loop: every file of the queue holding bytes written since the last request is asked of an
:class:`~common.fsync_worker.FsyncWorker`, whose compiled thread syncs without the GIL. What
is synced, and when, is what the executor's flush of every written byte did.

A cut (truncation or reset of the log) rewrites bytes below what was asked before, which the
worker would take as already durable: :meth:`FileSyncer.request` then declines (False) and the
caller flushes that round the old way; the next request starts a fresh worker.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from common.fsync_worker import FsyncWorker
from common.mapped_file import MappedFile
from common.mapped_file_queue import MappedFileQueue

__all__ = ["FileSyncer"]

log = logging.getLogger(__name__)


class FileSyncer:
    """Background fdatasync of the files of one queue (``cuts()``: the store's count of cuts)."""

    def __init__(self, queue: MappedFileQueue, cuts: Callable[[], int]) -> None:
        self.queue = queue
        self._cuts = cuts
        self._seen_cuts = cuts()
        self.worker: FsyncWorker | None = None
        self._file: MappedFile | None = None
        self._fd = -1
        self._asked = -1
        self._logged_error = 0

    def request(self) -> bool:
        """Ask for everything written so far to be synced; False (nothing asked) after a cut or
        when the file asked last is gone: the caller flushes this round itself."""
        cuts = self._cuts()
        if cuts != self._seen_cuts:
            self._seen_cuts = cuts
            self.close()
            return False
        files = self.queue.mapped_files
        if not files:
            return True
        last = files[-1]
        if last is self._file:
            end = last.file_from_offset + last.wrote_position
            if end > self._asked:
                self.worker.ask(self._fd, end)
                self._asked = end
            self._check_error()
            return True
        # a new file since the last request: the ones after the last asked one, in order
        if self._file is None:
            # the first request: from the oldest file with bytes not synced yet
            start = len(files) - 1
            while start > 0 and files[start - 1].flushed_position < files[start - 1].wrote_position:
                start -= 1
        else:
            start = next((i + 1 for i, f in enumerate(files) if f is self._file), -1)
            if start < 0:
                self.close()  # the file asked last is gone (cleaned or cut): start over
                return False
        if self.worker is None:
            self.worker = FsyncWorker()
        for mf in files[start:]:
            fd = os.open(mf.path, os.O_RDONLY | os.O_CLOEXEC)
            end = mf.file_from_offset + mf.wrote_position
            self.worker.ask(fd, end)  # the worker keeps its own duplicate of fd
            if self._fd >= 0:
                os.close(self._fd)
            self._file, self._fd, self._asked = mf, fd, end
        self._check_error()
        return True

    def _check_error(self) -> None:
        err = self.worker.error
        if err and err != self._logged_error:
            log.error("dledger flush of %s failed: %s", self._file.path, os.strerror(err))
        self._logged_error = err

    @property
    def rounds(self) -> int:
        """fdatasync calls of the current worker so far."""
        return self.worker.rounds if self.worker is not None else 0

    def close(self) -> None:
        """Stop the worker (a round under way finishes) and close the file."""
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.close()
        if self._fd >= 0:
            os.close(self._fd)
        self._file, self._fd, self._asked = None, -1, -1

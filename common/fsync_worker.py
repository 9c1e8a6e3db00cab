"""The SYNC_FLUSH group-commit thread: fsync rounds back to back, off the event loop.

Two twins with one interface, as :mod:`common.speedups` has: this pure-Python
reference and ``common._fsync_worker`` (``common/_fsync_worker.c``), whose thread
never takes the GIL. The compiled one is used unless ``ROCKETMQ_PY_PURE=1`` is set
or it was not built; :data:`IS_COMPILED` says which.

Why a thread of its own that does not wait for the loop: a round makes durable
everything asked before it starts, and the next round starts as soon as it ends, so
the loop keeps appending while the disk syncs. The pure twin's thread needs the GIL
after each ``fdatasync``, which the loop holds while it runs writers; the compiled
one does not, so its rounds follow each other at the disk's pace.

Interface (loop thread unless said otherwise):

* ``FsyncWorker(ahead=0)`` starts the thread.
* ``ask(fd, end, base=-1)``: make the file open as ``fd`` durable up to the global offset
  ``end``. With ``base`` (the global offset of the file's first byte) and ``ahead`` > 0,
  after each round the worker also asks the kernel (``POSIX_FADV_WILLNEED``, at most
  256 KiB a round) to bring the next ``ahead`` bytes past ``end`` into the page cache:
  a hole reads as zeros, so the pages the writer is about to fill are allocated and
  zeroed on the worker's thread instead of in the writer's page faults, and nothing
  is written. The worker keeps its own duplicate of ``fd``. Asking with a new ``fd``
  queues that file after the current one: the current file is synced up to its last
  asked ``end`` and dropped, then the new one is synced. The caller may close its
  ``fd`` once it asked with the next file's.
* ``done``: the highest ``end`` made durable; ``rounds``: fdatasync calls so far;
  ``error``: errno of the last failed fdatasync (0 after a success; a failing disk
  is retried every 10 ms).
* ``fileno()``: an eventfd that turns readable after each round (read it to clear).
* ``hold(on)``: tests only: the next round waits while ``on`` (a hanging disk).
* ``close()``: stop the thread (a round in progress finishes) and close the descriptors.
"""

from __future__ import annotations

import os
import threading

__all__ = ["FsyncWorker", "PureFsyncWorker", "IS_COMPILED", "POPULATE_STEP", "MAX_SEGMENTS"]

#: Files waiting for a flush at once (the current one and those queued behind it); both twins
#: refuse a further file with RuntimeError. A store rolls to a new file only after the previous
#: one filled, so more than two waiting means the disk is far behind.
MAX_SEGMENTS = 16

POPULATE_STEP = 256 * 1024  # at most this much is asked into the page cache after one round


class PureFsyncWorker:
    """The pure-Python twin (the reference); see the module docstring for the interface."""

    def __init__(self, ahead: int = 0) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._ahead = max(0, ahead)
        # [our fd, asked fd, end, base, cached], current file first
        self._segments: list[list[int]] = []
        self._want = 0
        self._done = 0
        self._rounds = 0
        self._err = 0
        self._held = False
        self._stopping = False
        self._efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._thread = threading.Thread(target=self._run, name="group-commit", daemon=True)
        self._thread.start()

    def ask(self, fd: int, end: int, base: int = -1) -> None:
        if self._thread is None:
            raise RuntimeError("FsyncWorker is closed")
        with self._cond:
            segs = self._segments
            if segs and segs[-1][1] == fd:
                if end > segs[-1][2]:
                    segs[-1][2] = end
            else:
                if len(segs) == MAX_SEGMENTS:
                    raise RuntimeError("FsyncWorker: too many files waiting for a flush")
                segs.append([os.dup(fd), fd, end, base, 0])
            if end > self._want:
                self._want = end
            self._cond.notify()

    def hold(self, on: bool) -> None:
        with self._cond:
            self._held = bool(on)
            self._cond.notify()

    def fileno(self) -> int:
        return self._efd

    @property
    def done(self) -> int:
        with self._cond:
            return self._done

    @property
    def rounds(self) -> int:
        with self._cond:
            return self._rounds

    @property
    def error(self) -> int:
        with self._cond:
            return self._err

    def close(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        with self._cond:
            self._stopping = True
            self._cond.notify()
        thread.join()
        for seg in self._segments:
            os.close(seg[0])
        self._segments.clear()
        os.close(self._efd)
        self._efd = -1

    def _run(self) -> None:
        cond = self._cond
        with cond:
            while True:
                while not self._stopping and (self._done >= self._want or self._held or not self._segments):
                    cond.wait()
                if self._stopping:
                    return
                seg = self._segments[0]
                fd, end = seg[0], seg[2]
                pop_from = pop_len = 0
                cond.release()
                try:
                    os.fdatasync(fd)
                    err = 0
                except OSError as e:
                    err = e.errno or -1
                finally:
                    cond.acquire()
                self._rounds += 1
                self._err = err
                if not err:
                    self._done = max(self._done, end)
                    if self._ahead and seg[3] >= 0:
                        start = max(end - seg[3], seg[4])
                        stop = end - seg[3] + self._ahead
                        if start < stop:
                            pop_from, pop_len = start, min(stop - start, POPULATE_STEP)
                            seg[4] = start + pop_len
                    if len(self._segments) > 1 and self._segments[0][2] == end:
                        os.close(self._segments.pop(0)[0])  # this file is complete and durable
                        pop_len = 0  # the writer has moved on to the next file
                os.eventfd_write(self._efd, 1)
                if pop_len:
                    # pages the writer is about to fill, cached here instead of in its page faults
                    # (a hole reads as zeros: nothing is written, the file does not change)
                    cond.release()
                    try:
                        os.posix_fadvise(fd, pop_from, pop_len, os.POSIX_FADV_WILLNEED)
                    except OSError:
                        pass
                    finally:
                        cond.acquire()
                if err and not self._stopping:
                    cond.wait(0.01)  # a broken disk: retry shortly, no busy loop


def _compiled():
    if os.environ.get("ROCKETMQ_PY_PURE") == "1":
        return None
    try:
        from common._fsync_worker import FsyncWorker as compiled  # noqa: PLC0415 - optional compiled twin
    except ImportError:
        return None
    return compiled


_COMPILED = _compiled()
IS_COMPILED = _COMPILED is not None
FsyncWorker = _COMPILED or PureFsyncWorker

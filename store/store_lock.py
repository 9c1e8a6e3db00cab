"""The store directory's ``lock`` file (RocketMQ's ``DefaultMessageStore`` FileLock).

One process at a time may open a store: the second broker (or a tool writing to a live
store) is refused instead of corrupting the files both map.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os

__all__ = ["StoreLock"]

log = logging.getLogger(__name__)


class StoreLock:
    """An exclusive ``flock`` on ``lock_path`` (created in ``root``), held from :meth:`acquire` to
    :meth:`release`."""

    def __init__(self, root: str, lock_path: str) -> None:
        self.root = root
        self.lock_path = lock_path
        self._fd: int | None = None

    def acquire(self) -> bool:
        """Take the lock; False when another process holds it."""
        os.makedirs(self.root, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            log.error("store %s is locked by another process", self.root)
            return False
        with contextlib.suppress(OSError):  # the content is cosmetic (a full disk refuses it); the lock holds
            os.pwrite(fd, b"lock", 0)
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

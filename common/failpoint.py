"""Fault-suite failpoint: a log of how far each store file is known to be durable.

Off unless the environment names a log file in ``ROCKETMQ_PY_FAILPOINT_DURABLE_LOG``; then
:data:`record_durable` is a function and each completed fsync/fdatasync of a mapped file
appends one line ``<length> <path>`` to that log with a single ``write`` (so it survives the
process's SIGKILL, as it is in the page cache). The fault suite's power-loss harness kills the
broker, reads the log, and damages every byte past the last recorded length of each file.

Recording happens after the sync returned (or after the loop learned that the group-commit
worker's round did), so a recorded length is never more than what is durable: conservative.
Off, :data:`record_durable` is None and callers pay one global lookup per flush, not per message.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

__all__ = ["ENV", "record_durable"]

ENV = "ROCKETMQ_PY_FAILPOINT_DURABLE_LOG"


def _recorder(log_path: str) -> Callable[[str, int], None]:
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    lock = threading.Lock()  # flushes run on executor threads too; one line per write
    last: dict[str, int] = {}

    def record(path: str, length: int) -> None:
        with lock:
            if last.get(path, -1) >= length:
                return
            last[path] = length
            os.write(fd, f"{length} {os.path.abspath(path)}\n".encode())

    return record


_log = os.environ.get(ENV)
record_durable: Callable[[str, int], None] | None = _recorder(_log) if _log else None

"""Small helpers shared by every layer: Java String.hashCode, clocks, atomic file writes."""

from __future__ import annotations

import os
import time

__all__ = ["java_string_hash", "now_ms", "write_file_atomic", "read_file_with_bak"]


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode()``: 31-multiplier over UTF-16 code units, signed 32-bit."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch (what RocketMQ stores as timestamps)."""
    return time.time_ns() // 1_000_000


def write_file_atomic(path: str, data: str | bytes, *, keep_bak: bool = True) -> None:
    """Write ``path`` so a crash leaves either the old or the new content.

    As RocketMQ's MixAll.string2File: the previous content is kept as
    ``path.bak`` (when ``keep_bak``), the new one goes to ``path.tmp`` first,
    is fsynced, then renamed over ``path``.
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if keep_bak and os.path.exists(path):
        bak = path + ".bak"
        try:
            os.replace(path, bak)
        except OSError:
            pass
    os.replace(tmp, path)


def read_file_with_bak(path: str) -> str | None:
    """Read ``path``, falling back to ``path.bak`` when it is missing or empty."""
    for p in (path, path + ".bak"):
        try:
            with open(p, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            continue
        if text.strip():
            return text
    return None

"""Small helpers shared by every layer: Java String.hashCode, clocks, atomic file writes."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
from collections.abc import Iterable

from common.speedups import java_hash as _java_hash

__all__ = [
    "java_string_hash",
    "cancel_all",
    "tags_code",
    "now_ms",
    "time_millis_to_human_string2",
    "write_file_atomic",
    "read_file_with_bak",
    "cancel_and_wait",
]


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode()``: 31-multiplier over UTF-16 code units, signed 32-bit.

    Delegates to :func:`common.speedups.java_hash` (compiled when available).
    """
    return _java_hash(s)


@functools.lru_cache(maxsize=8192)
def tags_code(tags: str | None) -> int:
    """A message's ConsumeQueue tag code: the Java hash of its TAGS, 0 without tags (cached: the same
    few tags recur on every send)."""
    return _java_hash(tags) if tags else 0


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch (what RocketMQ stores as timestamps)."""
    return time.time_ns() // 1_000_000


def time_millis_to_human_string2(t: int) -> str:
    """UtilAll.timeMillisToHumanString2: ``yyyy-MM-dd HH:mm:ss,SSS`` in local time."""
    tm = time.localtime(t // 1000)
    return (
        f"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d} "
        f"{tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d},{t % 1000:03d}"
    )


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
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError:
        with contextlib.suppress(OSError):  # a short copy must not hold the space a full disk lacks
            os.unlink(tmp)
        raise
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


async def cancel_and_wait(task: asyncio.Task | None) -> None:
    """Cancel a background task and wait until it has ended (nothing for None): a service's stop."""
    if task is None:
        return
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass


async def cancel_all(tasks: Iterable[asyncio.Task | None]) -> None:
    """Cancel every task (None skipped), then wait for each to end; how one ended is not the
    stopper's business (a stop must run to its end even when a task had failed)."""
    live = [t for t in tasks if t is not None]
    for t in live:
        t.cancel()
    for t in live:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t

"""Simulated power loss over a killed broker's store, from the durable-length failpoint's log.

After SIGKILL the page cache still holds every byte the broker wrote; a power cut would not. The
broker ran with ``ROCKETMQ_PY_FAILPOINT_DURABLE_LOG`` (common/failpoint.py), so the log says how far
each file was synced. Past that point a file's bytes are uncertain and :func:`damage` treats them as
a power cut may leave them:

* ``zero``: nothing past the durable length reached the disk;
* ``tear``: the disk kept a prefix cut at a 4 KiB page boundary (a record across the cut is torn);
* ``garble``: the uncertain range holds garbage.

Damaged files are the CommitLog's and the ConsumeQueues' (the checkpoint, config files and index
files are left as they are). What remains after damage is, by definition, on disk: it is the
baseline that the next round's log adds to.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

__all__ = ["PAGE", "MODES", "read_durable_log", "store_files", "damage"]

PAGE = 4096
MODES = ("zero", "tear", "garble")


def read_durable_log(path: Path) -> dict[str, int]:
    """path -> highest durable length recorded (the log may end in a half line: ignored)."""
    out: dict[str, int] = {}
    try:
        text = path.read_text()
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        n, _, p = line.partition(" ")
        if not p or not n.isdigit():
            continue
        out[p] = max(out.get(p, 0), int(n))
    return out


def store_files(store: Path) -> list[Path]:
    files = sorted((store / "commitlog").glob("*"))
    files += sorted((store / "consumequeue").glob("*/*/*"))
    return [f for f in files if f.is_file()]


def _data_end(data: bytes | bytearray, start: int) -> int:
    """End of the last non-zero page at or after ``start`` (``start`` when all zeros)."""
    end = len(data)
    while end > start:
        page_start = max(start, (end - 1) // PAGE * PAGE)
        if any(data[page_start:end]):
            return end
        end = page_start
    return start


def damage(store: Path, durable: dict[str, int], mode: str, rng: random.Random) -> tuple[dict[str, int], int]:
    """Damage every store file past its durable length; returns (new baseline, bytes changed)."""
    baseline: dict[str, int] = {}
    changed = 0
    for f in store_files(store):
        key = str(f.resolve())
        keep = durable.get(key, 0)
        with open(f, "r+b") as fh:
            data = bytearray(fh.read())
            size = len(data)
            keep = min(keep, size)
            end = _data_end(data, keep)
            new_end = keep
            if end > keep:
                if mode == "zero":
                    data[keep:end] = bytes(end - keep)
                elif mode == "tear":
                    cuts = list(range((keep // PAGE + 1) * PAGE, end, PAGE))
                    cut = rng.choice(cuts) if cuts else keep
                    data[cut:end] = bytes(end - cut)
                    new_end = cut
                elif mode == "garble":
                    data[keep:end] = rng.randbytes(end - keep)
                    new_end = end
                else:
                    raise ValueError(mode)
                changed += end - new_end if mode != "garble" else end - keep
                fh.seek(0)
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        baseline[key] = new_end
    return baseline, changed

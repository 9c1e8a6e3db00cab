"""Small tmpfs mounts for full-disk tests (root only; callers skip otherwise)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

MiB = 1024 * 1024


class SmallDisks:
    """``mount(size_mib) -> Path``: a tmpfs of that size under ``base``; :meth:`unmount_all` at teardown.

    Skips the calling test with the reason when not root or when the mount fails."""

    def __init__(self, base: Path) -> None:
        self.base = Path(base)
        self.mounts: list[Path] = []

    def mount(self, size_mib: int) -> Path:
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root")
        d = self.base / f"disk{len(self.mounts)}"
        d.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(d)],
                           capture_output=True, text=True, check=False)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip() or r.returncode}")
        self.mounts.append(d)
        return d

    def unmount_all(self) -> None:
        for d in reversed(self.mounts):
            subprocess.run(["umount", "-l", str(d)], capture_output=True, check=False)
        self.mounts.clear()


def fill(path: Path, size: int | None = None) -> int:
    """Write a filler file of ``size`` real bytes (None: until the disk is full); return its size."""
    chunk = memoryview(b"\xa5" * MiB)
    written = 0
    with open(path, "wb", buffering=0) as f:
        while size is None or written < size:
            n = MiB if size is None else min(MiB, size - written)
            try:
                written += f.write(chunk[:n])  # a short write when the disk fills; the next one fails
            except OSError:
                if size is not None:
                    raise
                break
    return written

"""Shared fixtures. Every test has a hard timeout (pyproject: timeout)."""

from __future__ import annotations

import pytest

from tests.support import Proc


def pytest_report_header(config):
    """Say which twins of common.speedups and common.fsync_worker this run exercises (compiled C or pure Python)."""
    from common import fsync_worker, speedups

    def which(mod) -> str:
        return "compiled C twin" if mod.IS_COMPILED else "pure-Python twin"

    return f"common.speedups: {which(speedups)}; common.fsync_worker: {which(fsync_worker)}"


@pytest.fixture
def procs(tmp_path):
    """Start processes with ``procs.start(name, args, env=...)``; all are stopped at teardown."""

    class _Procs(list):
        def start(self, name, args, env=None):
            p = Proc(name, args, tmp_path, env)
            self.append(p)
            return p

    started = _Procs()
    yield started
    for p in reversed(started):
        try:
            p.stop()
        except Exception:
            p.kill()

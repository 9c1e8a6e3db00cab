"""Shared fixtures. Every test has a hard timeout (pyproject: timeout)."""

from __future__ import annotations

import pytest

from tests.support import GOLDEN_STORE, Proc


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


@pytest.fixture(scope="session")
def golden_store():
    """The RocketMQ 4.9.7 golden store's folder (read-only: copy before writing); skips when absent."""
    if not (GOLDEN_STORE / "manifest.jsonl").exists():
        pytest.skip(f"golden RocketMQ 4.9.7 store not available at {GOLDEN_STORE} (set ROCKETMQ_GOLDEN)")
    return GOLDEN_STORE

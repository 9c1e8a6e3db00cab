"""Test helpers: free loopback ports, real child processes from bin/, waiting on conditions.

Tests never sleep to synchronise: they wait on a condition with a deadline.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from embedded.cluster import free_port_block

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "bin"
#: The store written by the real RocketMQ 4.9.7 broker: shared/testdata beside the checkout, or the
#: folder $ROCKETMQ_GOLDEN names; tests that need it skip when it is absent (see the golden_store fixture).
GOLDEN_STORE = (
    Path(os.environ["ROCKETMQ_GOLDEN"]) if os.environ.get("ROCKETMQ_GOLDEN")
    else ROOT.parent / "shared" / "testdata" / "rocketmq-4.9.7-store"
)
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on loopback that is free right now, with its neighbours P-2..P+1 free too, below the
    kernel's ephemeral range (see embedded.cluster.free_port_block, the one implementation)."""
    return free_port_block()


def wait_until(pred: Callable[[], object], timeout: float = 10.0, interval: float = 0.01, what: str = "") -> object:
    """Poll ``pred`` until it returns a truthy value; raise AssertionError at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or pred}")
        time.sleep(interval)


async def async_wait_until(
    pred: Callable[[], object | Awaitable[object]], timeout: float = 10.0, interval: float = 0.01, what: str = ""
) -> object:
    """Async twin of :func:`wait_until`; ``pred`` may be a coroutine function."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if asyncio.iscoroutine(v):
            v = await v
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or pred}")
        await asyncio.sleep(interval)


def port_open(port: int, host: str = LOOPBACK) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


class Proc:
    """A child process started from bin/, its output captured to files in ``log_dir``."""

    def __init__(self, name: str, args: list[str], log_dir: Path, env: dict[str, str] | None = None):
        self.name = name
        self.log_path = Path(log_dir) / f"{name}.log"
        full_env = dict(os.environ)
        full_env["PYTHONUNBUFFERED"] = "1"
        full_env.setdefault("HOME", str(log_dir))
        if env:
            full_env.update(env)
        self._log = open(self.log_path, "ab")
        cmd = [str(BIN / args[0]), *args[1:]] if (BIN / args[0]).exists() else [sys.executable, *args]
        self.popen = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=full_env, cwd=str(ROOT))

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_port(self, port: int, timeout: float = 20.0) -> None:
        def ready():
            if self.popen.poll() is not None:
                raise AssertionError(f"{self.name} exited with {self.popen.returncode}:\n{self.output()}")
            return port_open(port)

        wait_until(ready, timeout, 0.02, f"{self.name} listening on {port}")

    def signal(self, sig: int) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM, wait, then SIGKILL; returns the exit code."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        self._log.close()
        return self.popen.returncode

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(5)

"""Fixtures: a real ``bin/mqnamesrv`` process on a free loopback port, configured by a -c file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import free_port


class NamesrvProc:
    """Starts (and restarts) bin/mqnamesrv with a properties file in tmp_path."""

    def __init__(self, procs, tmp_path: Path, **extra):
        self.procs = procs
        self.tmp_path = tmp_path
        self.port = free_port()
        self.props = {
            "listenPort": str(self.port),
            "bindAddress": "127.0.0.1",
            "kvConfigPath": str(tmp_path / "ns" / "kvConfig.json"),
            "configStorePath": str(tmp_path / "ns" / "namesrv.properties"),
            **{k: str(v) for k, v in extra.items()},
        }
        self.conf = tmp_path / "namesrv.conf"
        self.conf.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        self.proc = None
        self.starts = 0

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self):
        self.starts += 1
        self.proc = self.procs.start(f"namesrv{self.starts}", ["mqnamesrv", "-c", str(self.conf)])
        self.proc.wait_port(self.port)
        return self

    def stop(self) -> int:
        return self.proc.stop()


@pytest.fixture
def namesrv_factory(procs, tmp_path):
    def make(**extra) -> NamesrvProc:
        return NamesrvProc(procs, tmp_path, **extra).start()

    return make


@pytest.fixture
def namesrv(namesrv_factory) -> NamesrvProc:
    return namesrv_factory()

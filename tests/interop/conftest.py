"""Fixtures for the C++ client interop tests: our NameServer and Broker as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import free_port

DRIVER = Path(__file__).with_name("cpp_client_driver.py")


def driver_cmd(*args: str) -> list[str]:
    """The command line running the C++ client driver with ``args``."""
    return [sys.executable, str(DRIVER), *args]


def driver_env(home: Path) -> dict[str, str]:
    """The C++ client logs (and keeps broadcast offsets) under $HOME."""
    return dict(os.environ, HOME=str(home))


def run_driver(tmp_path: Path, *args: str, timeout: float = 90.0) -> dict:
    """Run the driver to completion and return its JSON document."""
    proc = subprocess.run(
        driver_cmd(*args), capture_output=True, text=True, timeout=timeout, env=driver_env(tmp_path)
    )
    assert proc.returncode == 0, f"driver failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def send_spec(tmp_path: Path, namesrv: str, spec: dict, timeout: float = 90.0) -> list[dict]:
    """Run ``driver send`` with ``spec`` and return its results."""
    return run_driver(tmp_path, "send", namesrv, json.dumps(spec), timeout=timeout)["results"]


class StreamingConsumer:
    """A ``driver consume --out`` child process: messages stream to a JSON-lines file."""

    def __init__(
        self, tmp_path: Path, name: str, namesrv: str, topic: str, group: str, *extra: str, timeout=90
    ):
        self.out = tmp_path / f"{name}.jsonl"
        self.stop_file = tmp_path / f"{name}.stop"
        self.out.write_text("")
        home = tmp_path / f"home-{name}"
        home.mkdir(exist_ok=True)
        self.popen = subprocess.Popen(
            driver_cmd(
                "consume",
                namesrv,
                topic,
                group,
                "0",
                str(timeout),
                "--out",
                str(self.out),
                "--stop-file",
                str(self.stop_file),
                *extra,
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=driver_env(home),
        )

    def records(self) -> list[dict]:
        lines = self.out.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def messages(self) -> list[dict]:
        """Successfully consumed deliveries so far."""
        return [r for r in self.records() if "body" in r and not r.get("failed")]

    def failed(self) -> list[dict]:
        return [r for r in self.records() if r.get("failed")]

    def started(self) -> bool:
        if self.popen.poll() is not None:
            raise AssertionError(f"consumer exited {self.popen.returncode}: {self.popen.stderr.read()}")
        return any(r.get("event") == "started" for r in self.records())

    def stop(self, timeout: float = 20.0) -> dict:
        self.stop_file.write_text("stop")
        out, err = self.popen.communicate(timeout=timeout)
        assert self.popen.returncode == 0, f"consumer failed ({self.popen.returncode}):\n{out}\n{err}"
        return json.loads(out.strip().splitlines()[-1])

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(5)


class Cluster:
    """A NameServer and a Broker started from bin/ on free loopback ports."""

    def __init__(self, procs, tmp_path: Path, extra_conf: list[str] | None = None):
        self.procs = procs
        self.tmp_path = tmp_path
        ns_port = free_port()
        self.broker_port = free_port()
        self.namesrv = f"127.0.0.1:{ns_port}"
        self.broker = f"127.0.0.1:{self.broker_port}"
        ns = procs.start("namesrv", ["mqnamesrv", "-n", str(ns_port)])
        ns.wait_port(ns_port)
        self.conf = tmp_path / "broker.conf"
        self.conf.write_text(
            "\n".join(
                [
                    "brokerClusterName=InteropCluster",
                    "brokerName=interop-broker",
                    "brokerId=0",
                    f"namesrvAddr={self.namesrv}",
                    f"listenPort={self.broker_port}",
                    "brokerIP1=127.0.0.1",
                    f"storePathRootDir={tmp_path / 'store'}",
                    "autoCreateTopicEnable=true",
                    "autoCreateSubscriptionGroup=true",
                    "flushDiskType=ASYNC_FLUSH",
                    "mappedFileSizeCommitLog=67108864",
                    *(extra_conf or []),
                ]
            )
            + "\n"
        )
        self.broker_proc = None
        self.start_broker()

    def start_broker(self) -> None:
        self.broker_proc = self.procs.start("broker", ["mqbroker", "-c", str(self.conf)])
        self.broker_proc.wait_port(self.broker_port)

    def restart_broker(self) -> None:
        """SIGTERM (a clean shutdown that persists offsets), then start on the same store."""
        assert self.broker_proc.stop() == 0, self.broker_proc.output()[-3000:]
        self.start_broker()


@pytest.fixture
def make_cluster(procs, tmp_path):
    """``make_cluster(extra_conf_lines)`` starts a NameServer and a Broker."""
    return lambda extra=None: Cluster(procs, tmp_path, extra)


@pytest.fixture
def cluster(make_cluster):
    c = make_cluster()
    return {"namesrv": c.namesrv, "broker_port": c.broker_port, "broker": c.broker_proc, "cluster": c}


@pytest.fixture
def consumers(tmp_path):
    """Start streaming consumer processes; all are killed at teardown."""
    started: list[StreamingConsumer] = []

    def start(name, namesrv, topic, group, *extra, timeout=90):
        c = StreamingConsumer(tmp_path, name, namesrv, topic, group, *extra, timeout=timeout)
        started.append(c)
        return c

    yield start
    for c in started:
        c.kill()


@pytest.fixture
def capture_for(tmp_path):
    """``capture_for(cluster)``: frame proxies in front of its Broker and NameServer.

    The NameServer proxy rewrites route answers to point at the broker proxy, so a
    client given the returned NameServer address sends all its broker traffic
    through the broker proxy. Frames are also logged to tmp_path/*-frames-N.jsonl. Returns ``(namesrv_addr_for_the_client, broker_proxy)``.
    """
    from tests.interop.frame_proxy import FrameProxy

    started = []

    def start(c: Cluster):
        n = len(started) // 2
        bp = FrameProxy(c.broker, log_path=tmp_path / f"broker-frames-{n}.jsonl").start()
        np_ = FrameProxy(
            c.namesrv, rewrite={c.broker: bp.addr}, log_path=tmp_path / f"namesrv-frames-{n}.jsonl"
        ).start()
        started.extend([np_, bp])
        return np_.addr, bp

    yield start
    for p in started:
        p.stop()


@pytest.fixture
def capture(cluster, capture_for):
    """:func:`capture_for` applied to the default ``cluster``."""
    return capture_for(cluster["cluster"])

"""Interop: the official RocketMQ C++ client (2.x) against our NameServer and Broker processes.

The client runs in a child process (cpp_client_driver.py). Skipped where the
binding (PyPI rocketmq-python-cvs, which ships librocketmq.so) is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import free_port

pytest.importorskip("rocketmq.client", reason="official C++ client binding not installed")

DRIVER = Path(__file__).with_name("cpp_client_driver.py")


def run_driver(tmp_path: Path, *args: str, timeout: float = 90.0) -> dict:
    env = dict(os.environ, HOME=str(tmp_path))  # the C++ client logs under $HOME/logs
    proc = subprocess.run(
        [sys.executable, str(DRIVER), *args], capture_output=True, text=True, timeout=timeout, env=env
    )
    assert proc.returncode == 0, f"driver failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def cluster(procs, tmp_path):
    """A NameServer and a Broker started from bin/ on free loopback ports."""
    ns_port = free_port()
    broker_port = free_port()
    ns = procs.start("namesrv", ["mqnamesrv", "-n", str(ns_port)])
    ns.wait_port(ns_port)
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "\n".join(
            [
                "brokerClusterName=InteropCluster",
                "brokerName=interop-broker",
                "brokerId=0",
                f"namesrvAddr=127.0.0.1:{ns_port}",
                f"listenPort={broker_port}",
                "brokerIP1=127.0.0.1",
                f"storePathRootDir={tmp_path / 'store'}",
                "autoCreateTopicEnable=true",
                "autoCreateSubscriptionGroup=true",
                "flushDiskType=ASYNC_FLUSH",
                "mappedFileSizeCommitLog=67108864",
            ]
        )
        + "\n"
    )
    broker = procs.start("broker", ["mqbroker", "-c", str(conf)])
    broker.wait_port(broker_port)
    return {"namesrv": f"127.0.0.1:{ns_port}", "broker_port": broker_port, "broker": broker}


def test_cpp_producer_then_push_consumer(cluster, tmp_path):
    ns = cluster["namesrv"]
    sent = run_driver(tmp_path, "produce", ns, "InteropTopic", "40", "--prefix", "a")
    assert len(sent["results"]) == 40
    assert all(r["status"] == 0 for r in sent["results"]), sent["results"]
    assert len({r["msg_id"] for r in sent["results"]}) == 40

    got = run_driver(tmp_path, "consume", ns, "InteropTopic", "interop-group", "40", "60")
    assert got["complete"], got
    bodies = {m["body"] for m in got["messages"]}
    assert bodies == {f"a-body-{i}" for i in range(40)}
    for m in got["messages"]:
        i = int(m["body"].rsplit("-", 1)[1])
        assert m["tags"] == "TagA"
        assert m["keys"] == f"a-key-{i}"
        assert m["seq"] == str(i)


def test_cpp_batch_send_and_tag_filter(cluster, tmp_path):
    ns = cluster["namesrv"]
    sent = run_driver(tmp_path, "produce", ns, "InteropBatch", "32", "--batch", "8", "--tag", "TagB", "--prefix", "b")
    assert sum(r["n"] for r in sent["results"]) == 32
    assert all(r["status"] == 0 for r in sent["results"]), sent["results"]
    run_driver(tmp_path, "produce", ns, "InteropBatch", "8", "--tag", "TagC", "--prefix", "c")

    got = run_driver(tmp_path, "consume", ns, "InteropBatch", "interop-tag-group", "8", "60", "--expr", "TagC")
    assert got["complete"], got
    assert {m["body"] for m in got["messages"]} == {f"c-body-{i}" for i in range(8)}
    assert all(m["tags"] == "TagC" for m in got["messages"])


"""Interop: the official RocketMQ C++ client (2.x) against our NameServer and Broker processes.

The client runs in a child process (cpp_client_driver.py). Skipped where the
binding (PyPI rocketmq-python-cvs, which ships librocketmq.so) is not installed.
"""

from __future__ import annotations

import pytest

pytest.importorskip("rocketmq.client", reason="official C++ client binding not installed")

from tests.interop.conftest import run_driver  # noqa: E402


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
    # The batch part only checks that send_batch is accepted: the 2.1.0 client's batch arrives as one
    # message (see test_cpp_producer.BATCH_CLIENT_BUG), so only the TagC messages are consumed here.
    ns = cluster["namesrv"]
    sent = run_driver(
        tmp_path, "produce", ns, "InteropBatch", "32", "--batch", "8", "--tag", "TagB", "--prefix", "b"
    )
    assert sum(r["n"] for r in sent["results"]) == 32
    assert all(r["status"] == 0 for r in sent["results"]), sent["results"]
    run_driver(tmp_path, "produce", ns, "InteropBatch", "8", "--tag", "TagC", "--prefix", "c")

    got = run_driver(
        tmp_path, "consume", ns, "InteropBatch", "interop-tag-group", "8", "60", "--expr", "TagC"
    )
    assert got["complete"], got
    assert {m["body"] for m in got["messages"]} == {f"c-body-{i}" for i in range(8)}
    assert all(m["tags"] == "TagC" for m in got["messages"])

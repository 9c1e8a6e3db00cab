"""Interop: the C++ client and our NameServer (address lists with a dead entry, unknown topics)."""

from __future__ import annotations

import pytest

pytest.importorskip("rocketmq.client", reason="official C++ client binding not installed")

from tests.interop import broker_probe  # noqa: E402
from tests.interop.conftest import run_driver, send_spec  # noqa: E402
from tests.support import free_port  # noqa: E402


def test_namesrv_list_with_a_dead_entry(cluster, tmp_path):
    ns_list = f"127.0.0.1:{free_port()};{cluster['namesrv']}"  # the first one is not listening
    msgs = [{"topic": "InteropNsList", "tags": "N", "body": f"ns-{i}"} for i in range(5)]
    results = send_spec(tmp_path, ns_list, {"messages": msgs})
    assert all(r.get("status") == 0 for r in results), results
    got = run_driver(tmp_path, "consume", ns_list, "InteropNsList", "nslist-group", "5", "40")
    assert got["complete"], got


def test_unknown_topic_without_auto_create_fails_cleanly(make_cluster, tmp_path):
    c = make_cluster(["autoCreateTopicEnable=false"])
    results = send_spec(
        tmp_path, c.namesrv, {"messages": [{"topic": "InteropNoSuchTopic", "tags": "N", "body": "x"}]}
    )
    assert "error" in results[0], results
    assert broker_probe.route(c.namesrv, "InteropNoSuchTopic") is None

"""Interop: a C++ push consumer keeps going across a restart of our Broker.

The consumer's committed offsets survive the restart (consumerOffset.json), the
client reconnects by itself and continues exactly where it left off; a new
consumer process started after the restart starts from the committed offsets.
"""

from __future__ import annotations

import pytest

pytest.importorskip("rocketmq.client", reason="official C++ client binding not installed")

from tests.interop import broker_probe  # noqa: E402
from tests.interop.conftest import send_spec  # noqa: E402
from tests.support import wait_until  # noqa: E402


def send_n(tmp_path, ns, topic, prefix, n):
    msgs = [{"topic": topic, "tags": "T", "keys": f"{prefix}-{i}", "body": f"{prefix}-{i}"} for i in range(n)]
    results = send_spec(tmp_path, ns, {"messages": msgs, "timeout_ms": 10000})
    assert all(r.get("status") == 0 for r in results), results
    return {m["body"] for m in msgs}


def test_push_consumer_continues_across_broker_restart(make_cluster, consumers, capture_for, tmp_path):
    c = make_cluster()
    ns_proxy, broker_proxy = capture_for(c)
    topic, group = "InteropRestart", "restart-group"
    first = send_n(tmp_path, c.namesrv, topic, "before", 12)
    a = consumers("a", ns_proxy, topic, group, timeout=120)
    wait_until(lambda: {m["body"] for m in a.messages()} >= first, 30, 0.1, "first batch consumed")
    wait_until(
        lambda: broker_probe.committed_total(c.broker, group, topic, 4) == 12, 30, 0.2, "offsets committed"
    )
    seen_before_restart = len(a.records())

    c.restart_broker()
    # The committed offsets came back from disk.
    assert broker_probe.committed_total(c.broker, group, topic, 4) == 12
    wait_until(lambda: broker_probe.read_queue_nums(c.namesrv, topic) == 4, 30, 0.2, "route registered again")

    second = send_n(tmp_path, c.namesrv, topic, "after", 8)
    # The client only re-pulls when its long-poll requests lost with the old connection time out
    # (about 30 s in the C++ client; a Java client fails them at once when the channel closes).
    wait_until(
        lambda: {m["body"] for m in a.messages()} >= second, 60, 0.1, "second batch consumed after restart"
    )
    wait_until(
        lambda: broker_probe.committed_total(c.broker, group, topic, 4) == 20,
        30,
        0.2,
        "new offsets committed",
    )
    ra = a.stop()
    after = [m["body"] for m in a.records()[seen_before_restart:] if "body" in m]
    assert not set(after) & first, "messages consumed before the restart were delivered again"
    assert {m["body"] for m in ra["messages"]} == first | second


def test_new_consumer_after_broker_restart_starts_at_committed_offset(make_cluster, consumers, tmp_path):
    c = make_cluster()
    topic, group = "InteropRestart2", "restart2-group"
    first = send_n(tmp_path, c.namesrv, topic, "before", 12)
    a = consumers("a", c.namesrv, topic, group)
    wait_until(lambda: {m["body"] for m in a.messages()} >= first, 30, 0.1, "first batch consumed")
    wait_until(
        lambda: broker_probe.committed_total(c.broker, group, topic, 4) == 12, 30, 0.2, "offsets committed"
    )
    a.stop()
    c.restart_broker()
    wait_until(lambda: broker_probe.read_queue_nums(c.namesrv, topic) == 4, 30, 0.2, "route registered again")
    second = send_n(tmp_path, c.namesrv, topic, "after", 8)
    b = consumers("b", c.namesrv, topic, group)
    wait_until(lambda: {m["body"] for m in b.messages()} >= second, 30, 0.1, "second batch consumed")
    rb = b.stop()
    assert not {m["body"] for m in rb["messages"]} & first

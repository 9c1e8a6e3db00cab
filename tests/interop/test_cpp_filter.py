"""Interop: tag filtering as the C++ client expresses it (push ``A || B``, non-ASCII tags, pull filters)."""

from __future__ import annotations

import pytest

pytest.importorskip("rocketmq.client", reason="official C++ client binding not installed")

from tests.interop import broker_probe  # noqa: E402
from tests.interop.conftest import run_driver, send_spec  # noqa: E402
from tests.support import wait_until  # noqa: E402


def send_tagged(tmp_path, ns, topic, tags: list[str], per_tag: int) -> None:
    msgs = [
        {"topic": topic, "tags": t, "keys": f"{t}-{i}", "body": f"{t}-{i}"}
        for i in range(per_tag)
        for t in tags
    ]
    results = send_spec(tmp_path, ns, {"messages": msgs})
    assert all(r.get("status") == 0 for r in results), results


def test_push_or_expression(cluster, tmp_path):
    ns = cluster["namesrv"]
    send_tagged(tmp_path, ns, "InteropOr", ["TagA", "TagB", "TagC"], 5)
    got = run_driver(tmp_path, "consume", ns, "InteropOr", "or-group", "10", "40", "--expr", "TagA || TagC")
    assert got["complete"], got
    assert {m["body"] for m in got["messages"]} == {f"{t}-{i}" for t in ("TagA", "TagC") for i in range(5)}


def test_push_non_ascii_tag(cluster, tmp_path):
    ns = cluster["namesrv"]
    send_tagged(tmp_path, ns, "InteropTagUtf8", ["标签", "Ärger", "plain"], 4)
    got = run_driver(
        tmp_path, "consume", ns, "InteropTagUtf8", "utf8-tag-group", "8", "40", "--expr", "标签 || Ärger"
    )
    assert got["complete"], got
    assert {m["body"] for m in got["messages"]} == {f"{t}-{i}" for t in ("标签", "Ärger") for i in range(4)}
    assert {m["tags"] for m in got["messages"]} == {"标签", "Ärger"}


def test_pull_with_tag_expression_skips_the_rest(cluster, tmp_path):
    ns = cluster["namesrv"]
    topic = "InteropPullTag"
    send_tagged(tmp_path, ns, topic, ["Keep", "Drop"], 6)
    out = run_driver(tmp_path, "pull", ns, topic, "pull-tag-group", "--expr", "Keep")
    got = [m for q in out["queues"] for m in q["messages"]]
    assert {m["body"] for m in got} == {f"Keep-{i}" for i in range(6)}
    broker = cluster["cluster"].broker
    for q in out["queues"]:
        # Every queue was walked to its end despite the filtered-out messages.
        assert q["pulls"][-1]["offset"] == broker_probe.max_offset(broker, topic, q["queue_id"]), q["pulls"]


def test_delay_level_above_the_max_is_clamped(cluster, tmp_path):
    ns = cluster["namesrv"]
    results = send_spec(
        tmp_path, ns, {"messages": [{"topic": "InteropDelayMax", "tags": "D", "delay": 40, "body": "d"}]}
    )
    assert results[0].get("status") == 0, results
    # Level 40 > 18 levels: parked in the last level's queue (queueId = level - 1 = 17).
    broker = cluster["cluster"].broker
    wait_until(
        lambda: broker_probe.max_offset(broker, "SCHEDULE_TOPIC_XXXX", 17) == 1,
        10,
        0.05,
        "parked at level 18",
    )
    assert broker_probe.total_max_offset(broker, "InteropDelayMax", 4) == 0

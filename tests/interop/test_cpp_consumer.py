"""Interop: the official C++ client's consumers against our Broker.

Clustering across two processes, broadcasting, orderly (LOCK_BATCH_MQ), the pull
consumer, resuming from committed offsets, retry through %RETRY% and the DLQ.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("rocketmq.client", reason="official C++ client binding not installed")

from tests.interop import broker_probe  # noqa: E402
from tests.interop.conftest import run_driver, send_spec  # noqa: E402
from tests.support import wait_until  # noqa: E402

# Retry levels shortened so a redelivery takes 1 s instead of 10 s (level 3 by default).
FAST_DELAYS = "messageDelayLevel=" + " ".join(["1s"] * 18)


def send_n(tmp_path, ns, topic, prefix, n, **extra):
    msgs = [
        {"topic": topic, "tags": "T", "keys": f"{prefix}-{i}", "body": f"{prefix}-{i}", **extra}
        for i in range(n)
    ]
    results = send_spec(tmp_path, ns, {"messages": msgs})
    assert all(r.get("status") == 0 for r in results), results
    return {m["body"] for m in msgs}


def bodies(msgs) -> set[str]:
    return {m["body"] for m in msgs}


def test_clustering_two_consumers_share_the_work(cluster, consumers, tmp_path):
    ns = cluster["namesrv"]
    broker = cluster["cluster"].broker
    topic, group = "InteropCluster2", "cluster2-group"
    sent = send_n(tmp_path, ns, topic, "warm", 4)  # creates the topic (4 queues)
    a = consumers("a", ns, topic, group)
    b = consumers("b", ns, topic, group)
    wait_until(lambda: a.started() and b.started(), 20, 0.05, "both consumers started")
    wait_until(
        lambda: len(broker_probe.consumer_ids(broker, group)) == 2, 20, 0.1, "two consumers in the group"
    )
    # Send rounds until both have consumed something (rebalance runs on the client: bounded rounds).
    for r in range(20):
        sent |= send_n(tmp_path, ns, topic, f"r{r}", 8)
        try:
            wait_until(lambda s=sent: bodies(a.messages()) & s and bodies(b.messages()) & s, 2, 0.05)
            break
        except AssertionError:
            continue
    wait_until(lambda: bodies(a.messages()) | bodies(b.messages()) >= sent, 30, 0.1, "every message consumed")
    ra, rb = a.stop(), b.stop()
    got_a, got_b = bodies(ra["messages"]), bodies(rb["messages"])
    assert got_a and got_b, (len(got_a), len(got_b))
    assert got_a | got_b == sent
    # Each queue is consumed by one member at a time: after the split, no message went to both.
    late = {m for m in sent if not m.startswith("warm")}
    assert len(got_a & got_b & late) <= 8  # at most one round in flight while the queues moved


def test_broadcasting_each_consumer_gets_all(cluster, consumers, tmp_path):
    ns = cluster["namesrv"]
    topic, group = "InteropBroadcast", "broadcast-group"
    send_n(tmp_path, ns, topic, "warm", 4)
    a = consumers("a", ns, topic, group, "--broadcast")
    b = consumers("b", ns, topic, group, "--broadcast")
    wait_until(lambda: a.started() and b.started(), 20, 0.05, "both consumers started")
    # Broadcast consumers start at the end of each queue: probe until both are pulling.
    for r in range(20):
        probe = send_n(tmp_path, ns, topic, f"probe{r}", 4)
        try:
            wait_until(lambda p=probe: bodies(a.messages()) & p and bodies(b.messages()) & p, 2, 0.05)
            break
        except AssertionError:
            continue
    sent = send_n(tmp_path, ns, topic, "bc", 20)
    wait_until(lambda: bodies(a.messages()) >= sent and bodies(b.messages()) >= sent, 30, 0.1, "both got all")
    a.stop()
    b.stop()


def test_orderly_push_consumer_keeps_queue_order(cluster, capture, tmp_path):
    ns_proxy, broker_proxy = capture
    ns = cluster["namesrv"]
    topic, group = "InteropOrderlyPush", "orderly-push-group"
    keys, per_key = 4, 10
    msgs = [
        {"topic": topic, "tags": "O", "keys": f"k{k}", "arg": k, "body": f"k{k}-{n}"}
        for n in range(per_key)
        for k in range(keys)
    ]
    results = send_spec(tmp_path, ns, {"mode": "orderly", "messages": msgs})
    assert all(r.get("status") == 0 for r in results), results
    got = run_driver(tmp_path, "consume", ns_proxy, topic, group, str(keys * per_key), "60", "--orderly")
    assert got["complete"], got
    for k in range(keys):
        seq = [m["body"] for m in got["messages"] if m["keys"] == f"k{k}"]
        assert seq == [f"k{k}-{n}" for n in range(per_key)], seq
    # The orderly consumer locked its queues on the broker (LOCK_BATCH_MQ, 41) and got them.
    locks = broker_proxy.requests(41)
    assert locks
    granted = set()
    for req in locks:
        resp = broker_proxy.response_to(req)
        assert resp is not None and resp["code"] == 0, resp
        body = json.loads(resp["body_head"]) if resp["body_len"] else {}
        granted |= {q["queueId"] for q in body.get("lockOKMQSet", [])}
    assert granted >= {k % 4 for k in range(keys)}


def test_pull_consumer_fetches_queues_and_pulls_with_offsets(cluster, tmp_path):
    ns = cluster["namesrv"]
    topic = "InteropPull"
    sent = send_n(tmp_path, ns, topic, "pull", 30)
    out = run_driver(tmp_path, "pull", ns, topic, "pull-group", "--max-num", "4")
    assert "error" not in out, out
    queues = out["queues"]
    assert {q["queue_id"] for q in queues} == set(range(4))
    assert {q["broker"] for q in queues} == {"interop-broker"}
    got = [m for q in queues for m in q["messages"]]
    assert bodies(got) == sent and len(got) == 30
    broker = cluster["cluster"].broker
    for q in queues:
        qmax = broker_probe.max_offset(broker, topic, q["queue_id"])
        # Pulled from 0 in steps of at most 4, offsets contiguous, ending with "no new message" at the max.
        offsets = [m["queue_offset"] for m in q["messages"]]
        assert offsets == list(range(qmax))
        found = [p for p in q["pulls"] if p["status"] == 0]
        assert all(p["size"] <= 4 and p["next"] == p["offset"] + p["size"] for p in found), q["pulls"]
        assert q["pulls"][-1]["status"] == 1 and q["pulls"][-1]["offset"] == qmax, q["pulls"]
        assert all(p["max"] == qmax and p["min"] == 0 for p in q["pulls"])
        # Far past the end: OFFSET_ILLEGAL (the broker's PULL_OFFSET_MOVED).
        assert q["beyond"]["status"] == 3, q["beyond"]




def test_pull_past_the_end_points_back_at_the_max_offset(cluster, tmp_path):
    ns = cluster["namesrv"]
    topic = "InteropPullPast"
    send_n(tmp_path, ns, topic, "past", 8)
    out = run_driver(tmp_path, "pull", ns, topic, "pull-past-group", "--max-num", "4")
    broker = cluster["cluster"].broker
    nonempty = [q for q in out["queues"] if broker_probe.max_offset(broker, topic, q["queue_id"]) > 0]
    assert nonempty
    for q in nonempty:
        qmax = broker_probe.max_offset(broker, topic, q["queue_id"])
        assert q["beyond"]["status"] == 3, q["beyond"]
        assert q["beyond"]["next"] == qmax, q["beyond"]


def test_consumer_restart_resumes_from_committed_offset(cluster, consumers, tmp_path):
    ns = cluster["namesrv"]
    broker = cluster["cluster"].broker
    topic, group = "InteropResume", "resume-group"
    first = send_n(tmp_path, ns, topic, "first", 12)
    a = consumers("a", ns, topic, group)
    wait_until(lambda: bodies(a.messages()) >= first, 30, 0.1, "first batch consumed")
    # The client commits through its pulls / periodic persist: wait until the broker has it.
    wait_until(
        lambda: broker_probe.committed_total(broker, group, topic, 4) == 12, 30, 0.2, "offsets committed"
    )
    a.stop()
    wait_until(lambda: not broker_probe.consumer_ids(broker, group), 30, 0.2, "first consumer gone")
    second = send_n(tmp_path, ns, topic, "second", 8)
    b = consumers("b", ns, topic, group)
    wait_until(lambda: bodies(b.messages()) >= second, 30, 0.1, "second batch consumed")
    rb = b.stop()
    assert not bodies(rb["messages"]) & first, "the restarted consumer got already committed messages"


def test_retry_comes_back_through_the_retry_topic(make_cluster, consumers, capture_for, tmp_path):
    c = make_cluster([FAST_DELAYS])
    ns_proxy, broker_proxy = capture_for(c)
    topic, group = "InteropRetry", "retry-group"
    sent = send_n(tmp_path, c.namesrv, topic, "retry", 3)
    a = consumers("a", ns_proxy, topic, group, "--fail-first")
    wait_until(lambda: bodies(a.messages()) >= sent, 40, 0.1, "every message redelivered and consumed")
    ra = a.stop()
    assert bodies(ra["failed"]) == sent
    for m in ra["messages"]:
        assert m["reconsume_times"] >= 1, m
        assert m["topic"] == topic  # the client restores the original topic from RETRY_TOPIC
        assert m["keys"].startswith("retry-")
    assert broker_probe.max_offset(c.broker, f"%RETRY%{group}", 0) >= 3
    # Each failure went back with CONSUMER_SEND_MSG_BACK (36), answered SUCCESS.
    backs = broker_proxy.requests(36)
    assert len(backs) >= 3
    assert all(broker_proxy.response_to(r)["code"] == 0 for r in backs)
    assert {r["ext"]["group"] for r in backs} == {group}


def test_dlq_after_max_reconsume_times(make_cluster, consumers, tmp_path):
    c = make_cluster([FAST_DELAYS])
    topic, group = "InteropDlq", "dlq-group"
    sent = send_n(tmp_path, c.namesrv, topic, "dlq", 2)
    # Always fail; the client allows 1 reconsume, so the 2nd failure goes to %DLQ%.
    a = consumers("a", c.namesrv, topic, group, "--fail-times", "1000", "--max-reconsume", "1")
    dlq = f"%DLQ%{group}"

    def dlq_count():
        try:
            return broker_probe.max_offset(c.broker, dlq, 0)
        except AssertionError:  # no DLQ topic yet
            return 0

    wait_until(lambda: dlq_count() >= 2, 40, 0.2, "both messages in the DLQ")
    ra = a.stop()
    assert bodies(ra["failed"]) == sent
    assert max(m["reconsume_times"] for m in ra["failed"]) == 1
    assert not ra["messages"]
    # The DLQ holds the original messages: pull them with the C++ pull consumer.
    out = run_driver(tmp_path, "pull", c.namesrv, dlq, "dlq-reader")
    got = [m for q in out["queues"] for m in q["messages"]]
    assert bodies(got) == sent


def test_two_orderly_consumers_hand_queues_over(cluster, consumers, tmp_path):
    """A second orderly consumer joins: queues move over (UNLOCK/LOCK_BATCH_MQ) and per-key order holds."""
    ns = cluster["namesrv"]
    broker = cluster["cluster"].broker
    topic, group = "InteropOrderly2", "orderly2-group"
    keys = 4

    def send_round(r: int, n: int = 3) -> list[str]:
        msgs = [
            {"topic": topic, "tags": "O", "keys": f"k{k}", "arg": k, "body": f"k{k}-{r:02d}-{i}"}
            for i in range(n)
            for k in range(keys)
        ]
        results = send_spec(tmp_path, ns, {"mode": "orderly", "messages": msgs})
        assert all(x.get("status") == 0 for x in results), results
        return [m["body"] for m in msgs]

    sent = send_round(0)
    a = consumers("a", ns, topic, group, "--orderly")
    wait_until(lambda: bodies(a.messages()) >= set(sent), 30, 0.1, "first consumer got round 0")
    b = consumers("b", ns, topic, group, "--orderly")
    wait_until(
        lambda: len(broker_probe.consumer_ids(broker, group)) == 2, 20, 0.1, "two consumers in the group"
    )
    for r in range(1, 21):
        sent += send_round(r)
        try:
            wait_until(lambda s=set(sent): bodies(b.messages()) & s, 2, 0.05)
            break
        except AssertionError:
            continue
    wait_until(
        lambda: bodies(a.messages()) | bodies(b.messages()) >= set(sent), 60, 0.1, "everything consumed"
    )
    ra, rb = a.stop(), b.stop()
    assert bodies(rb["messages"]), "the second orderly consumer never got a queue"
    # Per key, deliveries merged by receive time are in send order (duplicates allowed at the handover).
    merged = sorted(ra["messages"] + rb["messages"], key=lambda m: m["recv_ms"])
    for k in range(keys):
        seq = [m["body"] for m in merged if m["keys"] == f"k{k}"]
        first_seen = list(dict.fromkeys(seq))
        assert first_seen == [b for b in sent if b.startswith(f"k{k}-")], seq

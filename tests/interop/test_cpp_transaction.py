"""Interop: the C++ client's TransactionMQProducer (through its C API) against our Broker.

Local transactions that commit, roll back, and answer "unknown" so that the
broker's check (CHECK_TRANSACTION_STATE) decides; only committed messages reach
the topic's queues and its consumers.
"""

from __future__ import annotations

import json
import subprocess

import pytest

pytest.importorskip("rocketmq.client", reason="official C++ client binding not installed")

from tests.interop import broker_probe  # noqa: E402
from tests.interop.conftest import driver_cmd, driver_env, run_driver  # noqa: E402
from tests.support import wait_until  # noqa: E402

# A half message is checked once it is older than transactionTimeOut; the check pass runs every interval.
FAST_CHECK = ["transactionCheckInterval=500", "transactionTimeOut=1000"]


def test_transaction_commit_rollback_and_check(make_cluster, capture_for, tmp_path):
    # The C++ producer's first HEART_BEAT sometimes comes only with its 30 s timer; until then the broker
    # has no channel to check through (each such pass still counts toward transactionCheckMax, as in 4.9.7).
    c = make_cluster([*FAST_CHECK, "transactionCheckMax=200"])
    ns_proxy, broker_proxy = capture_for(c)
    topic = "InteropTx"
    plan = "commit,rollback,unknown:commit,unknown:rollback,commit"
    stop = tmp_path / "tx.stop"
    proc = subprocess.Popen(
        driver_cmd("transaction", ns_proxy, topic, plan, "--wait-checks", "60", "--stop-file", str(stop)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=driver_env(tmp_path),
    )
    try:
        # Both check answers (END_TRANSACTION with fromTransactionCheck=true) reached the broker.
        def answered_checks():
            return [
                e for e in broker_proxy.requests(37) if e["ext"].get("fromTransactionCheck") in ("1", "true")
            ]

        wait_until(lambda: len(answered_checks()) >= 2, 50, 0.1, "the producer answered both checks")
        queues = broker_probe.read_queue_nums(c.namesrv, topic)
        wait_until(
            lambda: broker_probe.total_max_offset(c.broker, topic, queues) == 3, 10, 0.1, "3 committed"
        )
    finally:
        stop.write_text("stop")
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    out = json.loads(stdout.strip().splitlines()[-1])
    assert all(s["rc"] == 0 and s["status"] == 0 for s in out["sends"]), out["sends"]
    assert sorted(out["executed"]) == [f"tx-{i}" for i in range(5)]
    assert out["all_checked"], out
    checked = {ch["keys"] for ch in out["checks"]}
    assert checked >= {"tx-2", "tx-3"}
    # Decided messages are never checked.
    assert not checked & {"tx-0", "tx-1", "tx-4"}, out["checks"]
    for ch in out["checks"]:
        assert ch["topic"] == topic  # the check carries the real topic back, not RMQ_SYS_TRANS_HALF_TOPIC
        assert ch["uniq"]

    # Wire: half messages are SEND_MESSAGE_V2 with TRAN_MSG; the local answers are END_TRANSACTION (37) oneways;
    # the broker's checks are CHECK_TRANSACTION_STATE (39) requests to the producer.
    ends = broker_proxy.requests(37)
    assert len(ends) >= 3
    checks = [f for f in broker_proxy.frames if f.get("code") == 39 and f["dir"] == "s2c"]
    assert len(checks) >= 2
    uniq_of = {ch["keys"]: ch["uniq"] for ch in out["checks"]}
    for f in checks:
        ext = f["ext"]
        # CHECK_TRANSACTION_STATE header as 4.9.7 builds it: msgId = transactionId = the producer's UNIQ_KEY.
        assert ext["msgId"] == ext["transactionId"], ext
        assert ext["msgId"] in uniq_of.values(), (ext, uniq_of)
        assert int(ext["commitLogOffset"]) >= 0 and int(ext["tranStateTableOffset"]) >= 0
        assert ext["offsetMsgId"]
    for e in ends:
        # The C++ client sends END_TRANSACTION as a two-way request (Java: oneway). We answer commit (8) and
        # rollback (12) with SUCCESS and, like 4.9.7, type 0 (its "unknown") with nothing at all.
        if not e["flag"] & 2:
            resp = broker_proxy.response_to(e)
            if e["ext"]["commitOrRollback"] == "0":
                assert resp is None, resp
            else:
                assert resp is not None and resp["code"] == 0, (e, resp)

    # Only the committed ones (tx-0, tx-2, tx-4) are in the topic.
    got = run_driver(tmp_path, "consume", c.namesrv, topic, "tx-consumer", "3", "30")
    assert got["complete"], got
    assert sorted(m["keys"] for m in got["messages"]) == ["tx-0", "tx-2", "tx-4"]
    assert broker_probe.total_max_offset(c.broker, topic, queues) == 3


def test_transaction_never_decided_is_discarded_after_check_max(make_cluster, tmp_path):
    c = make_cluster([*FAST_CHECK, "transactionCheckMax=2"])
    topic = "InteropTxUndecided"
    stop = tmp_path / "tx.stop"
    proc = subprocess.Popen(
        driver_cmd(
            "transaction",
            c.namesrv,
            topic,
            "unknown:unknown",
            "--wait-checks",
            "30",
            "--stop-file",
            str(stop),
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=driver_env(tmp_path),
    )

    def discarded():
        try:
            return broker_probe.max_offset(c.broker, "TRANS_CHECK_MAX_TIME_TOPIC", 0) >= 1
        except AssertionError:  # the topic is created on the first discard
            return False

    try:
        wait_until(discarded, 40, 0.2, "the half message discarded to TRANS_CHECK_MAX_TIME_TOPIC")
    finally:
        stop.write_text("stop")
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    out = json.loads(stdout.strip().splitlines()[-1])
    # Checked at most transactionCheckMax times (fewer when the producer's first heartbeat came late: a pass
    # without a channel still counts), always answered "unknown", then given up; never delivered.
    assert len(out["checks"]) <= 2, out["checks"]
    assert all(ch["keys"] == "tx-0" and ch["answer"] == "unknown" for ch in out["checks"]), out["checks"]
    queues = broker_probe.read_queue_nums(c.namesrv, topic)
    assert broker_probe.total_max_offset(c.broker, topic, queues) == 0

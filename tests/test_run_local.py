"""`make run`'s launcher: a NameServer and a Broker in the foreground, stopped together by Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys

from tests.support import ROOT, free_port, port_open, wait_until


def test_run_local_starts_both_and_sigint_stops_both(tmp_path):
    ns_port, broker_port = free_port(), free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=0\nlistenPort={broker_port}\n"
        f"brokerIP1=127.0.0.1\nstorePathRootDir={tmp_path / 'store'}\nmappedFileSizeCommitLog=16777216\n"
    )
    log = open(tmp_path / "run.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.run_local", "--namesrv-port", str(ns_port), "--broker-conf", str(conf)],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: port_open(ns_port) and port_open(broker_port), 30, 0.05, "namesrv and broker up")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        assert not port_open(ns_port) and not port_open(broker_port)
        assert (tmp_path / "store" / "abort").exists() is False  # the broker shut down cleanly
        assert "run: stopped" in (tmp_path / "run.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()

"""`make run`'s launcher: a NameServer and a Broker in one process (an EmbeddedCluster), stopped by Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request

from tests.support import ROOT, free_port, port_open, wait_until


def test_run_local_starts_both_and_sigint_stops_both(tmp_path):
    ns_port, broker_port, dash_port = free_port(), free_port(), free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=0\nlistenPort={broker_port}\n"
        f"brokerIP1=127.0.0.1\nstorePathRootDir={tmp_path / 'store'}\nmappedFileSizeCommitLog=16777216\n"
    )
    log = open(tmp_path / "run.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.run_local", "--namesrv-port", str(ns_port), "--broker-conf", str(conf),
         "--dashboard-port", str(dash_port)],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: port_open(ns_port) and port_open(broker_port), 30, 0.05, "namesrv and broker up")
        wait_until(lambda: f"run: dashboard on http://127.0.0.1:{dash_port}/" in (tmp_path / "run.log").read_text(),
                   30, 0.05, "the dashboard's URL printed")
        with urllib.request.urlopen(f"http://127.0.0.1:{dash_port}/api/cluster", timeout=10) as r:
            assert [b["brokerName"] for b in json.loads(r.read())["brokers"]] == ["broker-a"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        assert not port_open(ns_port) and not port_open(broker_port) and not port_open(dash_port)
        store = tmp_path / "store" / "broker-a-0"
        assert (store / "config").is_dir()  # the broker's store, below the configured root
        assert (store / "abort").exists() is False  # the broker shut down cleanly
        assert "run: stopped" in (tmp_path / "run.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()

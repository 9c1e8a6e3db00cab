"""Bad metrics configuration fails start-up with the key named; nothing else is touched."""

from __future__ import annotations

import socket
import subprocess

from tests.broker.test_lifecycle import run_cli
from tests.support import BIN, ROOT, free_port


def test_bad_metrics_label_and_type_name_the_key(tmp_path):
    conf = tmp_path / "bad.conf"
    for line, key, what in (("metricsLabel=env", "metricsLabel", "'env'"),
                            ("metricsLabel=a:b,1x:y", "metricsLabel", "'1x'"),
                            ("metricsLabel=cluster:mine", "metricsLabel", "cluster"),
                            ("metricsExporterType=GRAPHITE", "metricsExporterType", "GRAPHITE"),
                            ("metricsPromExporterPort=70000", "metricsPromExporterPort", "70000")):
        conf.write_text(line + "\n")
        r = run_cli("-c", str(conf), "-p")
        assert r.returncode != 0, line
        assert f"bad value for config key {key}" in r.stderr and what in r.stderr, r.stderr


def test_metrics_port_in_use_fails_start_up_clearly(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        mport = taken.getsockname()[1]
        conf = tmp_path / "b.conf"
        conf.write_text(
            f"brokerName=pin\nlistenPort={free_port()}\nbrokerIP1=127.0.0.1\nstorePathRootDir={tmp_path / 'store'}\n"
            f"metricsExporterType=PROM\nmetricsPromExporterHost=127.0.0.1\nmetricsPromExporterPort={mport}\n"
        )
        r = subprocess.run([str(BIN / "mqbroker"), "-c", str(conf)], capture_output=True, text=True, timeout=60,
                           cwd=str(ROOT))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "metricsPromExporterPort" in r.stderr and f"127.0.0.1:{mport}" in r.stderr, r.stderr
    assert "boot success" not in r.stdout

"""A real Prometheus (Debian's ``prometheus`` package) scrapes the broker and answers PromQL."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request

import pytest

from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.broker.helpers import BrokerProc, send
from tests.support import ROOT, async_wait_until, free_port

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None,
                                reason="the prometheus binary is not installed (Debian package prometheus)")
N = 10


def _api(port: int, path: str, **params: str) -> dict:
    url = f"http://127.0.0.1:{port}/api/v1/{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


@pytest.fixture
def prometheus(tmp_path):
    """Start Prometheus on loopback scraping ``targets`` every second: ``start(targets) -> api port``."""
    started: list[subprocess.Popen] = []

    def start(targets: list[str]) -> int:
        port = free_port()
        conf = tmp_path / "prometheus.yml"
        conf.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files:\n  - {ROOT / 'conf' / 'prometheus' / 'rocketmq-alerts.yml'}\n"
            "scrape_configs:\n  - job_name: rocketmq-broker\n    static_configs:\n"
            f"      - targets: {json.dumps(targets)}\n"
        )
        log = open(tmp_path / "prometheus.log", "wb")
        started.append(subprocess.Popen(
            [PROMETHEUS, f"--config.file={conf}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT, cwd=str(tmp_path)))
        return port

    yield start
    for p in started:
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


async def test_prometheus_scrapes_and_answers_promql(procs, tmp_path, prometheus):
    mport = free_port()
    b = BrokerProc(tmp_path, "pb", start_proc=procs.start, metricsExporterType="PROM",
                   metricsPromExporterHost="127.0.0.1", metricsPromExporterPort=mport)
    b.start()
    async with RemotingClient() as c:
        for _ in range(N):
            assert (await send(c, b.addr, "PromT", b"p", queue_id=0)).code == ResponseCode.SUCCESS
    api = prometheus([f"127.0.0.1:{mport}"])

    def answered():
        try:
            r = _api(api, "query", query='sum(rocketmq_messages_in_total{topic="PromT"})')
        except OSError:
            return None
        res = r["data"]["result"]
        return res if r["status"] == "success" and res and float(res[0]["value"][1]) >= N else None

    res = await async_wait_until(answered, 60, 0.25, what="Prometheus to scrape the broker and answer")
    assert float(res[0]["value"][1]) == N
    targets = _api(api, "targets")["data"]["activeTargets"]
    assert [t["health"] for t in targets] == ["up"]
    r = _api(api, "query", query='rocketmq_broker_info{cluster="TestCluster", node_id="pb"}')
    assert r["data"]["result"] and r["data"]["result"][0]["metric"]["role"] == "ASYNC_MASTER"
    rules = _api(api, "rules")["data"]["groups"]
    assert {"RocketMQDiskUsageHigh", "RocketMQDLedgerNoLeader"} <= {r["name"] for g in rules for r in g["rules"]}

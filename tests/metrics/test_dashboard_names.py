"""Every metric the Grafana dashboard and the alert rules query is one the broker serves.

(A family with no series yet, e.g. replicate latency of a group without followers, counts as
served when its HELP/TYPE lines are in the scrape.)

The served names come from real scrapes of a one-member DLedger broker (so the DLedger series
exist) after traffic that makes every family appear (sends, a delayed and a DLQ-bound message,
pulls and a commit). promtool, when installed, also checks the rules file.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
import yaml

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import BrokerProc, call, pull, send, wait_max_offset
from tests.broker.test_clients_and_admin import heartbeat
from tests.metrics.helpers import served_names
from tests.support import ROOT, async_wait_until, free_port

DASHBOARD = ROOT / "conf" / "grafana" / "rocketmq-overview.json"
RULES = ROOT / "conf" / "prometheus" / "rocketmq-alerts.yml"
_NAME = re.compile(r"\b((?:rocketmq|dledger)_[a-zA-Z0-9_]+)")


def _dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [v["query"] for v in dash["templating"]["list"] if v.get("type") == "query"]
    return exprs


def _rule_exprs() -> list[str]:
    doc = yaml.safe_load(RULES.read_text())
    return [r["expr"] for g in doc["groups"] for r in g["rules"]]


def test_queries_parse_and_name_something():
    exprs = _dashboard_exprs() + _rule_exprs()
    assert len(exprs) >= 20
    wanted = {m for e in exprs for m in _NAME.findall(e)}
    for must in ("rocketmq_messages_in_total", "rocketmq_consumer_lag_messages",
                 "rocketmq_consumer_lag_latency_milliseconds", "rocketmq_rpc_latency_milliseconds_bucket",
                 "rocketmq_storage_flush_behind_bytes", "rocketmq_storage_dispatch_behind_bytes",
                 "rocketmq_dledger_role", "rocketmq_dledger_term", "rocketmq_storage_disk_usage_ratio"):
        assert must in wanted, must


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian package prometheus) not installed")
def test_promtool_accepts_the_rules():
    r = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


async def test_every_queried_name_is_served(procs, tmp_path):
    mport, dport = free_port(), free_port()
    b = BrokerProc(tmp_path, "dn", start_proc=procs.start, enableDLegerCommitLog="true", dLegerGroup="dn",
                   dLegerPeers=f"n0-127.0.0.1:{dport}", dLegerSelfId="n0", metricsExporterType="PROM",
                   metricsPromExporterHost="127.0.0.1", metricsPromExporterPort=mport,
                   metricsRefreshIntervalMillis=200)
    b.start()
    async with RemotingClient() as c:
        async def sent():
            r = await send(c, b.addr, "NamesT", b"n", queue_id=0)
            return r.code == ResponseCode.SUCCESS

        await async_wait_until(sent, 30, 0.1, what="the one-member DLedger broker to take writes")
        assert (await send(c, b.addr, "NamesT", b"d", {"DELAY": "2"}, queue_id=0)).code == ResponseCode.SUCCESS
        r = await send(c, b.addr, "%RETRY%gNames", b"dead", queue_id=0, j=99)  # beyond retryMaxTimes: the DLQ
        assert r.code == ResponseCode.SUCCESS, r.remark
        await wait_max_offset(c, b.addr, "NamesT", 0, 1)
        await pull(c, b.addr, "gNames", "NamesT", 0, 0)
        assert (await call(c, b.addr, RequestCode.HEART_BEAT,
                           body=heartbeat("cidN", "gNames", ["NamesT"], producer_group="pgN"))).code == 0
        await call(c, b.addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": "gNames", "topic": "NamesT", "queueId": 0, "commitOffset": 1})

        wanted = {m for e in _dashboard_exprs() + _rule_exprs() for m in _NAME.findall(e)}

        def all_served():
            served = served_names(mport)
            missing = wanted - served
            return True if not missing else None

        try:
            await async_wait_until(all_served, 20, 0.2, what="every queried name in a scrape")
        except AssertionError:
            served = served_names(mport)
            raise AssertionError(f"queried but not served: {sorted(wanted - served)}") from None

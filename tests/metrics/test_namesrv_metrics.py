"""The NameServer's own endpoint: live brokers, route table sizes, request latency."""

from __future__ import annotations

import json
import socket
import subprocess

from tests.broker.helpers import BrokerProc
from tests.metrics.helpers import http_get, scrape, value
from tests.namesrv.conftest import NamesrvProc
from tests.support import BIN, ROOT, free_port, wait_until


def test_namesrv_scrape_follows_a_registering_broker(procs, tmp_path):
    mport = free_port()
    ns = NamesrvProc(procs, tmp_path, metricsExporterType="PROM", metricsPromExporterHost="127.0.0.1",
                     metricsPromExporterPort=mport, metricsLabel="dc:one").start()
    BrokerProc(tmp_path, "nb", start_proc=procs.start, namesrvAddr=ns.addr).start()

    def registered():
        s = scrape(mport)
        return s if value(s, "rocketmq_namesrv_brokers_alive") == 1 else None

    s = wait_until(registered, 20, 0.05, "the broker's registration to show")
    base = {"node_type": "nameserver", "dc": "one"}
    assert value(s, "rocketmq_namesrv_broker_number", **base) == 1
    assert value(s, "rocketmq_namesrv_cluster_number") == 1
    assert value(s, "rocketmq_namesrv_topic_number") >= 1
    assert value(s, "rocketmq_rpc_latency_milliseconds_count", request_code="register_broker",
                 response_code="success", **base) >= 1
    status, _ctype, text = http_get(mport, "/health")
    assert status == 200 and json.loads(text)["brokersAlive"] == 1


def test_namesrv_metrics_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        mport = taken.getsockname()[1]
        conf = tmp_path / "ns.conf"
        conf.write_text(f"listenPort={free_port()}\nbindAddress=127.0.0.1\nkvConfigPath={tmp_path / 'kv.json'}\n"
                        f"metricsExporterType=PROM\nmetricsPromExporterPort={mport}\n")
        r = subprocess.run([str(BIN / "mqnamesrv"), "-c", str(conf)], capture_output=True, text=True, timeout=60,
                           cwd=str(ROOT))
    assert r.returncode == 1 and "metricsPromExporterPort" in r.stderr, r.stderr
    conf.write_text("metricsLabel=novalue\n")
    r = subprocess.run([str(BIN / "mqnamesrv"), "-c", str(conf), "-p"], capture_output=True, text=True, timeout=60,
                       cwd=str(ROOT))
    assert r.returncode != 0 and "metricsLabel" in r.stderr, r.stderr

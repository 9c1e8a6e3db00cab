"""DLedger gauges: after the leader is killed, the new leader's role gauge is 2 and the term went up."""

from __future__ import annotations

import json

from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.dledger_broker.cluster import DLedgerCluster, send
from tests.metrics.helpers import http_get, scrape, value
from tests.support import async_wait_until, free_port


def _with_metrics(cluster: DLedgerCluster) -> list[int]:
    ports = []
    for conf in cluster.confs:
        p = free_port()
        ports.append(p)
        with conf.open("a") as f:
            f.write(f"metricsExporterType=PROM\nmetricsPromExporterHost=127.0.0.1\nmetricsPromExporterPort={p}\n"
                    "metricsRefreshIntervalMillis=200\n")
    return ports


def _roles(ports: list[int], alive: set[int]) -> dict[int, tuple[float, float]]:
    out = {}
    for i in alive:
        s = scrape(ports[i])
        out[i] = (value(s, "rocketmq_dledger_role"), value(s, "rocketmq_dledger_term"))
    return out


async def test_role_and_term_follow_a_leader_kill(procs, tmp_path):
    cluster = DLedgerCluster(procs, tmp_path)
    ports = _with_metrics(cluster)
    cluster.start()
    alive = {0, 1, 2}

    def one_leader():
        r = _roles(ports, alive)
        leaders = [i for i, (role, _t) in r.items() if role == 2]
        settled = len(leaders) == 1 and all(role == 0 for i, (role, _t) in r.items() if i != leaders[0])
        return (leaders[0], r) if settled else None

    leader, roles = await async_wait_until(one_leader, 30, 0.1, what="one DLedger leader, the others followers")
    term = roles[leader][1]
    status, _ct, text = http_get(ports[leader], "/health")
    h = json.loads(text)
    assert status == 200 and h["dledger"]["role"] == "LEADER" and h["dledger"]["term"] == term
    follower = next(i for i in alive if i != leader)
    status, _ct, text = http_get(ports[follower], "/health")
    assert status == 503 and json.loads(text)["dledger"]["role"] == "FOLLOWER"

    cluster.kill(leader)
    alive.discard(leader)
    new_leader, roles = await async_wait_until(one_leader, 30, 0.1, what="a new DLedger leader")
    assert new_leader != leader
    assert roles[new_leader][1] > term
    async with RemotingClient() as c:
        master = await cluster.wait_master(c)
        assert master == cluster.addr(new_leader)
        for i in range(5):
            r = await send(c, master, b"after-failover-%d" % i)
            assert r.code == ResponseCode.SUCCESS, r.remark

    def timed():
        s = scrape(ports[new_leader])
        return s if value(s, "dledger_replicate_entry_latency_milliseconds_count") else None

    s = await async_wait_until(timed, 15, 0.1, what="replicate latency observed")
    assert value(s, "rocketmq_dledger_commit_lag_entries") is not None
    assert value(s, "dledger_append_entry_latency_milliseconds_count") >= 1

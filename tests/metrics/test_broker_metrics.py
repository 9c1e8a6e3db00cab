"""The broker's Prometheus endpoint follows real traffic (real bin/mqbroker, loopback sockets)."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from prometheus_client.parser import text_string_to_metric_families

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import BrokerProc, call, messages, pull, send, wait_max_offset
from tests.metrics.helpers import http_get, scrape, value
from tests.support import async_wait_until, free_port

N = 20
CONSUMED = 8


@pytest.fixture
def metrics_broker(procs, tmp_path):
    port = free_port()
    b = BrokerProc(tmp_path, "mb", start_proc=procs.start, metricsExporterType="PROM",
                   metricsPromExporterHost="127.0.0.1", metricsPromExporterPort=port,
                   metricsLabel="env:test,zone:z1", metricsRefreshIntervalMillis=200)
    b.start()
    b.metrics_port = port
    return b


async def test_scrape_follows_sends_pulls_and_commits(metrics_broker):
    b = metrics_broker
    addr = b.addr
    async with RemotingClient() as c:
        for i in range(N):
            r = await send(c, addr, "MetT", b"x" * (100 + i), {"TAGS": "t"}, queue_id=0)
            assert r.code == ResponseCode.SUCCESS, r.remark
        r = await send(c, addr, "MetT", b"late", {"DELAY": "1"}, queue_id=0)  # a delay message
        assert r.code == ResponseCode.SUCCESS, r.remark
        await wait_max_offset(c, addr, "MetT", 0, N)
        p = await pull(c, addr, "gMet", "MetT", 0, 0, max_nums=CONSUMED)
        assert p.code == ResponseCode.SUCCESS and len(messages(p)) == CONSUMED
        r = await call(c, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                       {"consumerGroup": "gMet", "topic": "MetT", "queueId": 0, "commitOffset": CONSUMED})
        assert r.code == ResponseCode.SUCCESS

        async def settled():
            s = scrape(b.metrics_port)
            lag = value(s, "rocketmq_consumer_lag_messages", consumer_group="gMet", topic="MetT")
            return s if lag == N - CONSUMED else None

        s = await async_wait_until(settled, 15, what="the lag gauge to show the unconsumed rest")

    base = {"cluster": "TestCluster", "node_type": "broker", "node_id": "mb", "env": "test", "zone": "z1"}
    # exactly: the sends of a read are counted once, by the batcher (not again per answer)
    assert value(s, "rocketmq_messages_in_total", topic="MetT", message_type="normal", **base) == N
    assert value(s, "rocketmq_messages_in_total", topic="MetT", message_type="delay") == 1
    assert value(s, "rocketmq_throughput_in_total", topic="MetT", message_type="normal") == sum(
        100 + i for i in range(N))
    assert value(s, "rocketmq_message_size_bucket", topic="MetT", le="1024") >= N
    assert value(s, "rocketmq_message_size_count", topic="MetT") == N + 1
    assert value(s, "rocketmq_messages_out_total", topic="MetT", consumer_group="gMet") >= CONSUMED
    assert value(s, "rocketmq_throughput_out_total", topic="MetT", consumer_group="gMet") > 0
    # the rest is unconsumed: lag in messages, its age, what is in flight (pulled, not committed)
    assert value(s, "rocketmq_consumer_lag_messages", consumer_group="gMet", topic="MetT", is_retry="false") == 12
    assert value(s, "rocketmq_consumer_lag_latency_milliseconds", consumer_group="gMet", topic="MetT") >= 0
    assert value(s, "rocketmq_consumer_inflight_messages", consumer_group="gMet", topic="MetT") == 0
    assert value(s, "rocketmq_consumer_ready_messages", consumer_group="gMet", topic="MetT") == 12
    # rpc latency: every SEND_MESSAGE_V2 timed
    sends = value(s, "rocketmq_rpc_latency_milliseconds_count", request_code="send_message_v2",
                  response_code="success", protocol_type="remoting")
    assert sends >= N + 1
    assert value(s, "rocketmq_rpc_latency_milliseconds_bucket", request_code="send_message_v2", le="+Inf") == sends
    assert value(s, "rocketmq_topic_number", **base) >= 1
    assert value(s, "rocketmq_broker_info", version="V4_9_7", role="ASYNC_MASTER") == 1
    assert value(s, "rocketmq_storage_disk_usage_ratio") > 0
    assert value(s, "rocketmq_storage_size_bytes") > 0
    assert value(s, "rocketmq_storage_flush_behind_bytes") is not None
    assert value(s, "rocketmq_storage_dispatch_behind_bytes") is not None
    assert value(s, "rocketmq_storage_message_reserve_time_milliseconds") is not None
    # rocketmq-exporter's names, with that project's labels
    assert value(s, "rocketmq_group_diff", group="gMet", topic="MetT") == 12
    assert value(s, "rocketmq_consumer_offset", cluster="TestCluster", broker="mb", group="gMet", topic="MetT") == 8
    assert value(s, "rocketmq_producer_offset", cluster="TestCluster", broker="mb", topic="MetT") == N
    assert value(s, "rocketmq_broker_tps", cluster="TestCluster", broker="mb") is not None
    assert value(s, "rocketmq_group_get_latency_by_storetime", group="gMet", topic="MetT") >= 0
    # every series carries the base labels (the exporter-compatible names keep their own)
    for name, samples in s.items():
        if name.startswith(("rocketmq_broker_tps", "rocketmq_broker_qps", "rocketmq_producer_tps",
                            "rocketmq_producer_offset", "rocketmq_consumer_tps", "rocketmq_consumer_offset",
                            "rocketmq_group_", "python_", "process_")):
            continue
        for labels, _v in samples:
            assert {k: labels.get(k) for k in base} == base, (name, labels)


async def test_inflight_counts_pulled_but_uncommitted(metrics_broker):
    b = metrics_broker
    async with RemotingClient() as c:
        for _ in range(5):
            assert (await send(c, b.addr, "InfT", b"y", queue_id=0)).code == ResponseCode.SUCCESS
        await wait_max_offset(c, b.addr, "InfT", 0, 5)
        p = await pull(c, b.addr, "gInf", "InfT", 0, 0, max_nums=3)
        assert len(messages(p)) == 3

        async def settled():
            s = scrape(b.metrics_port)
            return s if value(s, "rocketmq_consumer_lag_messages", consumer_group="gInf", topic="InfT") == 5 else None

        s = await async_wait_until(settled, 15, what="lag of the never-committed group")
    assert value(s, "rocketmq_consumer_inflight_messages", consumer_group="gInf", topic="InfT") == 3
    assert value(s, "rocketmq_consumer_ready_messages", consumer_group="gInf", topic="InfT") == 2


def test_openmetrics_when_asked_and_health(metrics_broker):
    port = metrics_broker.metrics_port
    status, ctype, text = http_get(port, accept="application/openmetrics-text; version=1.0.0")
    assert status == 200 and ctype.startswith("application/openmetrics-text"), ctype
    assert text.rstrip().endswith("# EOF")
    status, ctype, text = http_get(port)
    assert status == 200 and ctype.startswith("text/plain")
    assert list(text_string_to_metric_families(text))
    status, ctype, text = http_get(port, "/health")
    assert status == 200 and ctype == "application/json"
    h = json.loads(text)
    assert h["role"] == "ASYNC_MASTER" and h["brokerId"] == 0 and h["writable"] is True
    assert 0 < h["diskRatio"] < 1
    assert http_get(port, "/nope")[0] == 404
    # bad requests get a 4xx and close that connection only; the endpoint keeps serving
    for raw, want in ((b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", b"405"),
                      (b"garbage\r\n\r\n", b"400"),
                      (b"GET /metrics HTTP/1.1\r\n" + b"X: " + b"y" * 9000 + b"\r\n\r\n", b"431")):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(raw)
            assert sock.recv(64).split(b" ")[1] == want, raw[:20]
    assert http_get(port)[0] == 200


def test_slave_health_is_503(procs, tmp_path):
    port = free_port()
    b = BrokerProc(tmp_path, "sl", start_proc=procs.start, brokerRole="SLAVE", brokerId=1,
                   metricsExporterType="PROM", metricsPromExporterHost="127.0.0.1", metricsPromExporterPort=port)
    b.start()
    status, _ctype, text = http_get(port, "/health")
    assert status == 503
    h = json.loads(text)
    assert h["role"] == "SLAVE" and h["writable"] is False and any("slave" in r for r in h["reasons"])


async def test_held_pull_is_labelled_long_polling(metrics_broker):
    b = metrics_broker
    async with RemotingClient() as c:
        # nothing to pull: the broker holds the request until the message below arrives
        held = asyncio.ensure_future(pull(c, b.addr, "gLp", "LpT", 0, 0, suspend_ms=5000, sys_flag=0x2 | 0x4,
                                          timeout=10))
        assert (await send(c, b.addr, "LpT", b"wake", queue_id=0)).code == ResponseCode.SUCCESS
        r = await held
        assert r.code in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND)

        async def counted():
            s = scrape(b.metrics_port)
            return s if value(s, "rocketmq_rpc_latency_milliseconds_count", request_code="pull_message",
                              is_long_polling="true") else None

        s = await async_wait_until(counted, 15, what="the held pull timed as long polling")
    assert value(s, "rocketmq_rpc_latency_milliseconds_count", request_code="send_message_v2",
                 is_long_polling="false") >= 1


async def test_sync_flush_sends_timed_once_each(procs, tmp_path):
    """Group-committed sends are answered late (after the flush): the send path times them, one count each."""
    port = free_port()
    b = BrokerProc(tmp_path, "sf", start_proc=procs.start, flushDiskType="SYNC_FLUSH", metricsExporterType="PROM",
                   metricsPromExporterHost="127.0.0.1", metricsPromExporterPort=port)
    b.start()
    async with RemotingClient() as c:
        rs = await asyncio.gather(*(send(c, b.addr, "SfT", b"z" * 10, queue_id=0) for _ in range(N)))
        assert all(r.code == ResponseCode.SUCCESS for r in rs)
        rs = await asyncio.gather(*(send(c, b.addr, "SfT", b"z", queue_id=99) for _ in range(3)))  # no such queue
        assert all(r.code != ResponseCode.SUCCESS for r in rs)
    s = scrape(port)  # rpc latency is recorded as answers leave: no refresh to wait for
    ok = dict(request_code="send_message_v2", response_code="success")
    assert value(s, "rocketmq_rpc_latency_milliseconds_count", **ok) == N
    assert value(s, "rocketmq_rpc_latency_milliseconds_bucket", le="+Inf", **ok) == N
    assert value(s, "rocketmq_rpc_latency_milliseconds_sum", **ok) > 0
    refused = [v for lab, v in s["rocketmq_rpc_latency_milliseconds_count"]
               if lab["request_code"] == "send_message_v2" and lab["response_code"] != "success"]
    assert sum(refused) == 3

"""The per-topic/per-group part of the exposition is rendered by the refresh, not by a scrape."""

from __future__ import annotations

from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS

from broker.config import BrokerConfig
from broker.metrics.lag_calculator import LagRow, LagSnapshot
from broker.metrics.snapshot_collector import SnapshotCollector, SnapshotExposition

#: what a scrape without an Accept header gets (the text format)
CONTENT_TYPE_LATEST = choose_encoder("")[1]


def _snapshot(lag: int) -> LagSnapshot:
    snap = LagSnapshot()
    snap.lags.append(LagRow(group="g1", topic="T1", is_retry=False, lag=lag, lag_latency_ms=5, inflight=0,
                            consumer_offset=1, consumer_tps=0.0, online=1, msg_model="CLUSTERING"))
    return snap


def test_the_text_format_is_rendered_by_the_refresh_before_any_scrape():
    exp = SnapshotExposition(SnapshotCollector({"cluster": "c"}, BrokerConfig(), "127.0.0.1"))
    assert exp.rendered_types == frozenset()
    exp.publish(_snapshot(7))
    # the first scrape in the default format finds it ready: a 20,000-series render never runs on a scrape
    assert exp.rendered_types == {CONTENT_TYPE_LATEST}
    body = exp.tail("", CONTENT_TYPE_LATEST)
    assert b'rocketmq_consumer_lag_messages{cluster="c",consumer_group="g1"' in body and b"} 7.0" in body
    # OpenMetrics is rendered on its first scrape, then by every refresh
    exp.tail("application/openmetrics-text; version=1.0.0", OPENMETRICS)
    exp.publish(_snapshot(9))
    assert exp.rendered_types == {CONTENT_TYPE_LATEST, OPENMETRICS}
    assert b"} 9.0" in exp.tail("", CONTENT_TYPE_LATEST)

"""failOnDataLoss: the planned start was removed from the CommitLog (retention), both ways.

Retention is forced the way the broker's cleaner would leave the store: a tiny
CommitLog, the broker stopped, its oldest CommitLog file removed, the broker
started again (the consume queue's min offset then follows the CommitLog's).
"""

from __future__ import annotations

import json
import os

import pytest

from client.message import Message
from connectors.spark.topic_metadata import TopicMetadata
from tests.client.cluster import Cluster
from tests.connectors.helpers import create_topic, send
from tests.support import wait_until


@pytest.fixture(scope="module")
def trimmed(tmp_path_factory):
    """(namesrv, topic, min offset, max offset) of a 1-queue topic whose first messages are gone."""
    c = Cluster(tmp_path_factory.mktemp("loss"), brokers=1, mappedFileSizeCommitLog=64 * 1024)
    try:
        ns, topic = c.namesrv_addr, "SparkLossTopic"
        create_topic(ns, topic, c.brokers, 1)
        send(ns, [Message(topic, bytes([65 + i % 26]) * 1024) for i in range(150)])
        broker = c.brokers[0]
        broker.stop()
        log_dir = os.path.join(broker.props["storePathRootDir"], "commitlog")
        files = sorted(os.listdir(log_dir))
        assert len(files) >= 3, files
        os.remove(os.path.join(log_dir, files[0]))
        broker.start()

        def moved():
            meta = TopicMetadata(ns)
            try:
                q = dict(meta.queues(topic))
                return meta.min_offsets(q), meta.max_offsets(q)
            except Exception:
                return None
            finally:
                meta.close()

        def ready():
            r = moved()
            return r if r and next(iter(r[0].values())) > 0 else None

        mins, maxs = wait_until(ready, 30, 0.2, "the queue's min offset to move past 0")
        k = next(iter(mins))
        yield ns, topic, k[1], mins[k], maxs[k]
    finally:
        c.stop()


def _read(spark, ns, topic, broker, **opts):
    r = spark.read.format("rocketmq").option("nameServer", ns).option("subscribe", topic) \
        .option("startingOffsets", json.dumps({topic: {broker: {"0": 0}}}))
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


def test_fail_on_data_loss_names_the_queue_and_both_offsets(spark, trimmed):
    ns, topic, broker, low, _high = trimmed
    with pytest.raises(Exception) as ei:
        _read(spark, ns, topic, broker).collect()
    text = str(ei.value)
    assert f"{topic}/{broker}/0" in text and "planned start offset 0" in text and f"min offset {low}" in text
    assert "failOnDataLoss" in text


def test_no_fail_on_data_loss_skips_to_the_min_offset(spark, trimmed):
    ns, topic, broker, low, high = trimmed
    rows = _read(spark, ns, topic, broker, failOnDataLoss="false").collect()
    assert sorted(r.queueOffset for r in rows) == list(range(low, high))
    assert all(r.body == bytes([65 + r.queueOffset % 26]) * 1024 for r in rows)

"""The "rocketmq" source and sink on a local[2] SparkSession against real NameServer and broker processes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from client.message import Message
from connectors.spark.topic_metadata import TopicMetadata
from tests.client.cluster import Cluster
from tests.connectors.helpers import consumer_offsets, create_topic, pull_all, send, unique
from tests.support import wait_until


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("spark-cluster"), brokers=2)
    yield c
    c.stop()


def read(spark, ns: str, **options):
    r = spark.read.format("rocketmq").option("nameServer", ns)
    for k, v in options.items():
        r = r.option(k, v if isinstance(v, str) else json.dumps(v))
    return r.load()


def _sent(topic: str, n: int, start: int = 0, **kw) -> list[Message]:
    return [Message(topic, f"body-{i}".encode(), tags=f"T{i % 3}", keys=[f"k{i}", "common"],
                    properties={"seq": str(i)}, **kw) for i in range(start, start + n)]


def test_batch_read_returns_exactly_what_was_sent(spark, cluster):
    ns = cluster.namesrv_addr
    topic = unique("SparkBatch")
    create_topic(ns, topic, cluster.brokers, 4)
    msgs = _sent(topic, 48)
    results = send(ns, msgs)
    rows = read(spark, ns, subscribe=topic).collect()
    assert len(rows) == 48
    got = {(r.broker, r.queueId, r.queueOffset): r for r in rows}
    assert len(got) == 48 and {r.broker for r in rows} == {"brokera", "brokerb"}
    for i, (m, res) in enumerate(zip(msgs, results, strict=True)):
        r = got[(res.message_queue.brokerName, res.message_queue.queueId, res.queue_offset)]
        assert (r.topic, r.body, r.tags, r.keys) == (topic, m.body, f"T{i % 3}", [f"k{i}", "common"])
        assert r.properties["seq"] == str(i) and r.msgId == res.msg_id and r.reconsumeTimes == 0
        assert r.storeTimestamp >= r.bornTimestamp.replace(microsecond=0) and r.bornHost.startswith("127.0.0.1:")

    # a tag expression keeps only its tags
    tagged = read(spark, ns, subscribe=topic, subExpression="T1 || T2").collect()
    assert sorted(r.body for r in tagged) == sorted(m.body for i, m in enumerate(msgs) if i % 3)

    # JSON starting/ending offsets: listed queues as given, the others from earliest to latest
    per_queue = {}
    for res in results:
        k = (res.message_queue.brokerName, res.message_queue.queueId)
        per_queue[k] = max(per_queue.get(k, 0), res.queue_offset + 1)
    (b1, q1), (b2, q2) = sorted(per_queue)[0], sorted(per_queue)[-1]
    starting = {topic: {b1: {str(q1): 1}}}
    ending = {topic: {b1: {str(q1): 3}, b2: {str(q2): 1}}}
    part = read(spark, ns, subscribe=topic, startingOffsets=starting, endingOffsets=ending).collect()
    offs: dict = {}
    for r in part:
        offs.setdefault((r.broker, r.queueId), []).append(r.queueOffset)
    assert sorted(offs[(b1, q1)]) == [1, 2] and sorted(offs[(b2, q2)]) == [0]
    others = {k: v for k, v in per_queue.items() if k not in ((b1, q1), (b2, q2))}
    assert {k: sorted(v) for k, v in offs.items() if k in others} == {k: list(range(n)) for k, n in others.items()}

    # minPartitions splits queue ranges; the rows stay the same
    df = read(spark, ns, subscribe=topic, minPartitions="16")
    assert df.rdd.getNumPartitions() >= 16
    assert sorted((r.broker, r.queueId, r.queueOffset) for r in df.collect()) == sorted(got)

    # the same messages, read from the running brokers' CommitLog files
    stores = [b.props["storePathRootDir"] for b in cluster.brokers]
    offline = spark.read.format("rocketmq-store").option("topic", topic).load(stores[0]).collect()
    offline += spark.read.format("rocketmq-store").option("topic", topic).load(stores[1]).collect()
    assert sorted(r.body for r in offline) == sorted(m.body for m in msgs)
    assert all(r.crcOk and r.topic == topic for r in offline)


def test_assign_and_subscribe_pattern(spark, cluster):
    ns = cluster.namesrv_addr
    base = unique("SparkPat")
    a, b, other = f"{base}_a", f"{base}_b", f"{base}_zz"
    for t in (a, b, other):
        create_topic(ns, t, cluster.brokers[:1], 4)
        send(ns, _sent(t, 8))
    rows = read(spark, ns, subscribePattern=f"{base}_[ab]").collect()
    assert sorted({r.topic for r in rows}) == [a, b] and len(rows) == 16

    rows = read(spark, ns, assign={a: {"brokera": [1, 2]}}).collect()
    assert {(r.topic, r.queueId) for r in rows} == {(a, 1), (a, 2)} and len(rows) == 4


def test_starting_timestamp(spark, cluster):
    ns = cluster.namesrv_addr
    topic = unique("SparkTs")
    create_topic(ns, topic, cluster.brokers, 2)
    send(ns, _sent(topic, 10))
    t = int(time.time() * 1000)
    wait_until(lambda: time.time() * 1000 > t + 20, 2, 0.005, "the clock to move past the first batch")
    later = _sent(topic, 6, start=100)
    send(ns, later)
    rows = read(spark, ns, subscribe=topic, startingTimestamp=str(t)).collect()
    assert sorted(r.body for r in rows) == sorted(m.body for m in later)


def _run_available_now(spark, ns, topic, ckpt: Path, **options):
    batches: list[tuple[int, list[str]]] = []

    def collect(df, batch_id):
        batches.append((batch_id, [r.msgId for r in df.select("msgId").collect()]))

    r = spark.readStream.format("rocketmq").option("nameServer", ns).option("subscribe", topic)
    for k, v in options.items():
        r = r.option(k, v)
    q = r.load().writeStream.foreachBatch(collect).option("checkpointLocation", str(ckpt)) \
        .trigger(availableNow=True).start()
    assert q.awaitTermination(180), "the AvailableNow query did not finish"
    assert q.exception() is None, q.exception()
    return [b for b in batches if b[1]]


def test_stream_available_now_resumes_exactly_and_commits_group(spark, cluster, tmp_path):
    ns = cluster.namesrv_addr
    topic = unique("SparkStream")
    group = unique("spark_job_group")
    create_topic(ns, topic, cluster.brokers, 2)
    first = send(ns, _sent(topic, 30))
    ckpt = tmp_path / "ckpt"
    from connectors.spark.stream_reader import ReadMaxRows

    # PySpark 4.0/4.1 pass Python sources no read limit: Spark's AvailableNow wrapper asks the latest
    # offset once, so a capped answer would end the run after one batch (docs/spark.md)
    split = ReadMaxRows is not None
    opts = {"startingOffsets": "earliest", "group": group, **({"maxOffsetsPerTrigger": "12"} if split else {})}
    run1 = _run_available_now(spark, ns, topic, ckpt, **opts)
    if split:
        assert len(run1) >= 3, f"maxOffsetsPerTrigger=12 should split 30 messages into 3+ batches: {run1}"
        assert all(len(ids) <= 12 for _, ids in run1)
    ids1 = [i for _, ids in run1 for i in ids]
    assert sorted(ids1) == sorted(r.msg_id for r in first)

    second = send(ns, _sent(topic, 7, start=50))
    run2 = _run_available_now(spark, ns, topic, ckpt, **opts)
    ids2 = [i for _, ids in run2 for i in ids]
    assert sorted(ids2) == sorted(r.msg_id for r in second)  # no gap, no duplicate
    assert min(b for b, _ in run2) > max(b for b, _ in run1)

    if not split:
        return  # 4.0/4.1: a batch's end reaches the group only when Spark plans another batch (docs/spark.md)
    # the job's progress is the group's: consumerProgress shows the end offsets
    meta = TopicMetadata(ns)
    try:
        maxs = meta.max_offsets(dict(meta.queues(topic)))
    finally:
        meta.close()
    want = {(k[1], k[2]): v for k, v in maxs.items()}
    wait_until(lambda: consumer_offsets(ns, group, topic) == want, 15, 0.1, f"the group offsets {want}")


def test_stream_picks_up_new_topics_and_new_queues(spark, cluster, tmp_path):
    ns = cluster.namesrv_addr
    base = unique("SparkNewT")
    create_topic(ns, f"{base}_1", cluster.brokers[:1], 2)
    send(ns, _sent(f"{base}_1", 5))
    ckpt = tmp_path / "ckpt"
    opt = {"subscribePattern": f"{base}_.*", "startingOffsets": "earliest"}

    def run():
        batches: list = []
        q = spark.readStream.format("rocketmq").option("nameServer", ns).options(**opt).load() \
            .writeStream.foreachBatch(lambda df, b: batches.append([r.topic for r in df.collect()])) \
            .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start()
        assert q.awaitTermination(180) and q.exception() is None
        return [t for b in batches for t in b]

    assert run() == [f"{base}_1"] * 5
    create_topic(ns, f"{base}_2", cluster.brokers[:1], 2)
    send(ns, _sent(f"{base}_2", 4))
    create_topic(ns, f"{base}_1", cluster.brokers[:1], 4)  # the topic expanded: queues 2 and 3 are new
    expanded = send(ns, _sent(f"{base}_1", 8))
    assert {r.message_queue.queueId for r in expanded} >= {2, 3}
    assert sorted(run()) == [f"{base}_1"] * 8 + [f"{base}_2"] * 4


def test_sink_batch_write_arrives_once_and_sharding_key_keeps_order(spark, cluster):
    ns = cluster.namesrv_addr
    topic = unique("SparkSink")
    create_topic(ns, topic, cluster.brokers, 4)
    rows = [(f"msg-{i}", f"tag{i % 2}", [f"key{i}"], {"seq": str(i)}, f"order-{i % 5}") for i in range(60)]
    df = spark.createDataFrame(rows, "body string, tags string, keys array<string>, "
                                     "properties map<string,string>, shardingKey string").repartition(2)
    df.write.format("rocketmq").option("nameServer", ns).option("topic", topic).mode("append").save()
    got = pull_all(ns, topic)
    assert sorted(m.body.decode() for _, m in got) == sorted(r[0] for r in rows)
    by_key: dict = {}
    for broker, m in sorted(got, key=lambda x: (x[0], x[1].queue_id, x[1].queue_offset)):
        assert m.properties["KEYS"] == f"key{m.properties['seq']}" and m.properties["TAGS"] in ("tag0", "tag1")
        key = f"order-{int(m.properties['seq']) % 5}"
        by_key.setdefault(key, []).append(((broker, m.queue_id), int(m.properties["seq"]), m.uniq_key))
    for key, items in by_key.items():
        assert len({q for q, _, _ in items}) == 1, f"{key} spread over queues"
        seqs = [s for _, s, _ in items]
        # within one Spark partition the rows keep their order; both partitions may feed one key
        assert len(seqs) == 12
    uniq = [u for items in by_key.values() for _, _, u in items]
    assert len(set(uniq)) == 60 and all(len(u) == 32 for u in uniq)

    # ordered per key: one partition in input order
    topic2 = unique("SparkSinkOrder")
    create_topic(ns, topic2, cluster.brokers, 4)
    ordered = spark.createDataFrame([(f"{i}", f"k{i % 3}") for i in range(45)], "value string, shardingKey string") \
        .coalesce(1)
    ordered.write.format("rocketmq").option("nameServer", ns).option("topic", topic2).mode("append").save()
    got2 = pull_all(ns, topic2)
    per_key: dict = {}
    for broker, m in sorted(got2, key=lambda x: (x[0], x[1].queue_id, x[1].queue_offset)):
        per_key.setdefault(int(m.body) % 3, []).append((broker, m.queue_id, int(m.body)))
    for k, items in per_key.items():
        assert len({(b, q) for b, q, _ in items}) == 1
        assert [v for _, _, v in items] == list(range(k, 45, 3))


def test_stream_sink_copies_a_topic_once(spark, cluster, tmp_path):
    ns = cluster.namesrv_addr
    src, dst = unique("SparkCopySrc"), unique("SparkCopyDst")
    create_topic(ns, src, cluster.brokers, 2)
    create_topic(ns, dst, cluster.brokers, 2)
    sent = send(ns, _sent(src, 25))
    q = spark.readStream.format("rocketmq").option("nameServer", ns).option("subscribe", src) \
        .option("startingOffsets", "earliest").load().select("body", "tags", "keys") \
        .writeStream.format("rocketmq").option("nameServer", ns).option("topic", dst) \
        .option("checkpointLocation", str(tmp_path / "ckpt")).trigger(availableNow=True).start()
    assert q.awaitTermination(180) and q.exception() is None
    got = pull_all(ns, dst)
    assert sorted(m.body for _, m in got) == sorted(f"body-{i}".encode() for i in range(25))
    assert len(sent) == 25 and all(m.properties.get("TAGS") for _, m in got)


@pytest.fixture(scope="module")
def bad_input_topic(cluster):
    topic = unique("SparkBadInput")
    create_topic(cluster.namesrv_addr, topic, cluster.brokers[:1], 1)
    send(cluster.namesrv_addr, _sent(topic, 1))
    return topic


@pytest.mark.parametrize(
    "options, words",
    [
        ({"subscribe": "NoSuchTopicForSpark"}, ["subscribe", "NoSuchTopicForSpark"]),
        ({"subscribe": "{topic}", "startingOffsets": '{"a": {'}, ["startingOffsets", "malformed JSON"]),
        ({"subscribe": "{topic}", "assign": '{"x": {"b": [0]}}'}, ["subscribe", "assign"]),
        ({"subscribe": "{topic}", "nameServer": "127.0.0.1:1"}, ["nameServer", "127.0.0.1:1"]),
        ({"subscribe": "{topic}", "endingOffsets": "earliest"}, ["endingOffsets"]),
    ],
)
def test_bad_input_fails_on_the_driver_naming_the_option(spark, cluster, bad_input_topic, options, words):
    ns = cluster.namesrv_addr
    topic = bad_input_topic
    opts = {"nameServer": ns, **{k: v.replace("{topic}", topic) for k, v in options.items()}}
    sc = spark.sparkContext
    group = unique("badinput")
    sc.setJobGroup(group, "bad input")
    try:
        with pytest.raises(Exception) as ei:
            spark.read.format("rocketmq").options(**opts).load().collect()
    finally:
        sc.setJobGroup("", "")
    text = str(ei.value)
    for w in words:
        assert w in text, f"{w!r} not in the error: {text[:2000]}"
    assert sc.statusTracker().getJobIdsForGroup(group) == [], "a job ran before the error"


def test_a_refused_send_fails_the_task_with_the_brokers_code_and_remark(spark, tmp_path):
    c = Cluster(tmp_path / "small", brokers=1, maxMessageSize=2048)
    try:
        ns, topic = c.namesrv_addr, "SparkTooBig"
        create_topic(ns, topic, c.brokers, 2)
        df = spark.createDataFrame([("x" * 4000,), ("y" * 4000,)], "body string").coalesce(1)
        with pytest.raises(Exception) as ei:
            df.write.format("rocketmq").option("nameServer", ns).option("topic", topic).mode("append").save()
        text = str(ei.value)
        assert "CODE: 13" in text and "msg body length limit 2048B" in text, text[:3000]
    finally:
        c.stop()


def test_sink_delay_time_level(spark, cluster):
    ns = cluster.namesrv_addr
    topic = unique("SparkDelay")
    create_topic(ns, topic, cluster.brokers[:1], 2)
    df = spark.createDataFrame([("late-1", 1), ("late-2", 1)], "body string, delayTimeLevel int").coalesce(1)
    df.write.format("rocketmq").option("nameServer", ns).option("topic", topic).mode("append").save()
    got = wait_until(lambda: (lambda ms: ms if len(ms) == 2 else None)(pull_all(ns, topic)), 30, 0.2,
                     "the delayed messages to be delivered")
    assert sorted(m.body for _, m in got) == [b"late-1", b"late-2"]
    assert all(m.properties.get("DELAY") == "1" for _, m in got)

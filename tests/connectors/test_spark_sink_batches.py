"""The sink's byte-size batch split against a real broker whose maxMessageSize is small (8 KiB).

A batch body holds whole entries of exactly ``20 + len(body) + 2 + len(properties)``
bytes; the sink's rows carry only their UNIQ_KEY property (41 bytes), so a row of
``n`` body bytes makes an entry of ``n + 63``. Bodies are sized so that batches
land exactly on the limits (and one byte past them), then the stored messages
show where the sink cut: the producer sends consecutive batches to different
queues (round robin over 4), so a batch is a run of consecutive rows stored at
consecutive offsets of one queue.
"""

from __future__ import annotations

import pytest

from tests.client.cluster import Cluster
from tests.connectors.helpers import create_topic, pull_all, unique

MAX = 8192  # the broker's maxMessageSize: a batch body of exactly this is stored, one byte more refused
OVERHEAD = 20 + 2 + len("UNIQ_KEY\x01") + 32


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("spark-sink-batches"), brokers=1, maxMessageSize=MAX)
    yield c
    c.stop()


def _bodies(entry_sizes: list[int]) -> list[str]:
    out = []
    for i, size in enumerate(entry_sizes):
        n = size - OVERHEAD
        assert n >= 6
        out.append(f"{i:06d}".ljust(n, "x"))
    return out


def _expected_batches(entry_sizes: list[int], target: int) -> list[list[int]]:
    """Greedy cut: a batch takes rows while its size stays <= target; a bigger row goes alone."""
    batches: list[list[int]] = []
    cur: list[int] = []
    size = 0
    for i, s in enumerate(entry_sizes):
        if cur and size + s > target:
            batches.append(cur)
            cur, size = [], 0
        cur.append(i)
        size += s
        if size > target:  # alone
            batches.append(cur)
            cur, size = [], 0
    if cur:
        batches.append(cur)
    return batches


def _stored_batches(ns: str, topic: str) -> tuple[list[list[int]], list]:
    got = pull_all(ns, topic)
    runs: list[list[int]] = []
    for q in sorted({m.queue_id for _, m in got}):
        prev = None
        for m in sorted((m for _, m in got if m.queue_id == q), key=lambda m: m.queue_offset):
            row = int(m.body[:6])
            if prev is not None and row == prev[0] + 1 and m.queue_offset == prev[1] + 1:
                runs[-1].append(row)
            else:
                runs.append([row])
            prev = (row, m.queue_offset)
    return sorted(runs), got


def _write(spark, ns: str, topic: str, rows: list, schema: str, **options) -> None:
    w = spark.createDataFrame(rows, schema).coalesce(1).write.format("rocketmq").option("nameServer", ns) \
        .option("topic", topic).option("maxMessageSize", str(MAX))
    for k, v in options.items():
        w = w.option(k, str(v))
    w.mode("append").save()


# entry sizes: exact fits, one byte over, a row alone over the 4 KiB target, a row of exactly the broker's max
SIZES = [2048, 2048,  # 4096 exactly
         1365, 1365, 1366,  # 4096 exactly
         4097,  # over the target by one: alone
         100, 3996,  # 4096 exactly
         100, 3997,  # 4097: cut after the 100
         MAX,  # exactly maxMessageSize: alone, stored
         70, 70, 70, 4000,  # 4210: cut before the 4000
         3000, 1000, 96]  # 4096 exactly, the task's last rows


def test_batches_are_cut_at_exactly_the_byte_target_and_a_big_row_goes_alone(spark, small):
    ns = small.namesrv_addr
    topic = unique("SparkSinkCut")
    create_topic(ns, topic, small.brokers, 4)
    bodies = _bodies(SIZES)
    _write(spark, ns, topic, [(b,) for b in bodies], "body string", sendBatchBytes=4096)
    batches, got = _stored_batches(ns, topic)
    assert sorted(m.body.decode() for _, m in got) == bodies  # each row exactly once
    assert batches == _expected_batches(SIZES, 4096)
    assert [10] in batches and [5] in batches


def test_the_batch_target_is_capped_by_max_message_size_exactly(spark, small):
    # default sendBatchBytes (256 KiB) capped by maxMessageSize: batches of exactly 8192 bytes pass the broker
    ns = small.namesrv_addr
    topic = unique("SparkSinkCap")
    create_topic(ns, topic, small.brokers, 4)
    sizes = [4096, 4096, 2730, 2731, 2731, 100, 8092, 100, 8093, 5000]
    bodies = _bodies(sizes)
    _write(spark, ns, topic, [(b,) for b in bodies], "body string")
    batches, got = _stored_batches(ns, topic)
    assert sorted(m.body.decode() for _, m in got) == bodies
    assert batches == _expected_batches(sizes, MAX) == [[0, 1], [2, 3, 4], [5, 6], [7], [8], [9]]


def test_sharding_keys_keep_their_order_across_batch_cuts(spark, small):
    ns = small.namesrv_addr
    topic = unique("SparkSinkCutOrder")
    create_topic(ns, topic, small.brokers, 4)
    sizes = [(1500 + 997 * i) % 5000 + 100 for i in range(60)]
    bodies = _bodies(sizes)
    rows = [(b, f"key-{i % 3}") for i, b in enumerate(bodies)]
    _write(spark, ns, topic, rows, "body string, shardingKey string", sendBatchBytes=4096)
    got = pull_all(ns, topic)
    assert sorted(m.body.decode() for _, m in got) == bodies
    for k in range(3):
        mine = sorted((m for _, m in got if int(m.body[:6]) % 3 == k), key=lambda m: m.queue_offset)
        assert len({m.queue_id for m in mine}) == 1, f"key-{k} spread over queues"
        assert [int(m.body[:6]) for m in mine] == list(range(k, 60, 3))


def test_a_row_over_max_message_size_fails_the_task_naming_it(spark, small):
    ns = small.namesrv_addr
    topic = unique("SparkSinkTooBig")
    create_topic(ns, topic, small.brokers, 4)
    bodies = _bodies([100, 200, MAX + 1, 100])
    with pytest.raises(Exception) as ei:
        _write(spark, ns, topic, [(b,) for b in bodies], "body string")
    text = str(ei.value)
    assert f"row 2: its message takes {MAX + 1} bytes encoded, more than maxMessageSize {MAX}" in text, text[:3000]


def test_rows_go_to_the_topic_of_their_topic_column_else_the_option(spark, small):
    ns = small.namesrv_addr
    a, b = unique("SparkSinkTopicA"), unique("SparkSinkTopicB")
    for t in (a, b):
        create_topic(ns, t, small.brokers, 2)
    bodies = _bodies([2000 + 10 * i for i in range(30)])
    rows = [(body, (a, b, None)[i % 3]) for i, body in enumerate(bodies)]
    _write(spark, ns, a, rows, "body string, topic string", sendBatchBytes=4096)
    assert sorted(m.body.decode() for _, m in pull_all(ns, a)) == [r[0] for r in rows if r[1] != b]
    assert sorted(m.body.decode() for _, m in pull_all(ns, b)) == [r[0] for r in rows if r[1] == b]

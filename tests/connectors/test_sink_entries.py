"""The sink's rows -> batch entries, without Spark: Arrow record batches and Rows give the same entries."""

from __future__ import annotations

import pytest

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
types = pytest.importorskip("pyspark.sql.types", reason="pyspark is not installed")

from common.message import decode_batch_body  # noqa: E402
from connectors.spark.errors import ConnectorError  # noqa: E402
from connectors.spark.sink import uniq_key_prefix  # noqa: E402
from connectors.spark.sink_entries import ROW_CHUNK, SinkColumns, encode_entries  # noqa: E402

SCHEMA = types.StructType([
    types.StructField("Value", types.StringType()),
    types.StructField("topic", types.StringType()),
    types.StructField("tags", types.StringType()),
    types.StructField("keys", types.ArrayType(types.StringType())),
    types.StructField("properties", types.MapType(types.StringType(), types.StringType())),
    types.StructField("shardingKey", types.StringType()),
    types.StructField("delayTimeLevel", types.IntegerType()),
])
ROWS = [
    ("a", None, "TagA", ["k1", "", "k2"], {"color": "red", "UNIQ_KEY": "mine"}, "s1", None),
    ("b", "Other", None, None, None, None, 3),
    ("c", None, "", [], {}, None, 0),
]


class _Msg:
    def __init__(self, topic, body, properties, delay):
        self.topic, self.body, self.properties, self.delay_time_level = topic, body, properties, delay


def row_messages(items, cols, default_topic, prefix):
    """(message, sharding key) per row, decoded back from the encoded entries."""
    out = []
    for ch in encode_entries(items, cols, default_topic, prefix):
        n = len(ch.entries)
        body = b"".join(ch.entries.to_pylist())
        entries = decode_batch_body(body)
        assert len(entries) == n and ch.uniq.to_pylist() == [e.properties["UNIQ_KEY"] for e in entries]
        topics = ch.topics or [ch.topic] * n
        shards = ch.shards or [None] * n
        delays = ch.delays or [0] * n
        out.extend((_Msg(t, e.body, e.properties, d), s) for t, e, s, d in zip(topics, entries, shards, delays, strict=True))
    return out


def _view(out):
    return [(m.topic, m.body, dict(m.properties), m.delay_time_level, shard) for m, shard in out]


def test_arrow_batches_and_rows_give_the_same_messages_with_positional_uniq_keys():
    prefix = uniq_key_prefix("job", 7)
    cols = SinkColumns(SCHEMA)
    arrow_schema = pa.schema([("Value", pa.string()), ("topic", pa.string()), ("tags", pa.string()),
                              ("keys", pa.list_(pa.string())), ("properties", pa.map_(pa.string(), pa.string())),
                              ("shardingKey", pa.string()), ("delayTimeLevel", pa.int32())])
    columns = list(zip(*ROWS, strict=True))
    columns[4] = [None if p is None else list(p.items()) for p in columns[4]]  # Arrow maps: (key, value) pairs
    batch = pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, arrow_schema, strict=True)],
                                       schema=arrow_schema)
    rows = [types.Row(*r) for r in ROWS]
    # two batches: row positions continue across them
    from_arrow = _view(row_messages([batch, batch], cols, "Default", prefix))
    from_rows = _view(row_messages(rows + rows, cols, "Default", prefix))
    assert from_arrow == from_rows
    topic, body, props, delay, shard = from_arrow[0]
    assert (topic, body, delay, shard) == ("Default", b"a", 0, "s1")
    assert props == {"color": "red", "TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": f"{prefix}{0:012X}"}
    assert from_arrow[1][0] == "Other" and from_arrow[1][3] == 3 and from_arrow[1][2]["DELAY"] == "3"
    assert from_arrow[2][2] == {"UNIQ_KEY": f"{prefix}{2:012X}"}  # empty tags/keys are left out
    assert [p["UNIQ_KEY"] for _, _, p, _, _ in from_arrow] == [f"{prefix}{i:012X}" for i in range(6)]


def test_rows_beyond_one_chunk_keep_counting_and_binary_bodies_pass_through():
    schema = types.StructType([types.StructField("body", types.BinaryType())])
    n = ROW_CHUNK + 3
    out = list(row_messages(([bytearray(b"%d" % i)] for i in range(n)), SinkColumns(schema), "T", "P" * 20))
    assert len(out) == n and out[-1][0].body == str(n - 1).encode()
    assert out[-1][0].properties["UNIQ_KEY"] == f"{'P' * 20}{n - 1:012X}"


@pytest.mark.parametrize("row, words", [
    ((None, "T"), "row 1: body is null"),
    (("x", None), "row 1: topic column is null and no topic option is set"),
])
def test_bad_rows_name_the_row(row, words):
    schema = types.StructType([types.StructField("body", types.StringType()),
                               types.StructField("topic", types.StringType())])
    with pytest.raises(ConnectorError, match=words):
        list(row_messages([("ok", "T"), row], SinkColumns(schema), None, "P" * 20))


@pytest.mark.parametrize("row, words", [
    ((b"",), "row 0: the message body length is zero"),
    (("x", {"k": "a\x02b"}), "row 0: property 'k' contains a separator character"),
    (("x", None, "Tag\x01A"), "row 0: property 'TAGS' contains a separator character"),
    (("x", {"k": "v" * 40000}), "row 0: the properties take 400[0-9]{2} bytes, more than 32767"),
])
def test_entries_the_batch_sender_will_not_check_are_refused_here(row, words):
    schema = types.StructType([types.StructField("body", types.BinaryType()),
                               types.StructField("properties", types.MapType(types.StringType(), types.StringType())),
                               types.StructField("tags", types.StringType())])
    row = (*row, *([None] * (3 - len(row))))
    with pytest.raises(ConnectorError, match=words) as ei:
        list(row_messages([row], SinkColumns(schema), "T", "P" * 20))
    assert ei.value.code == 13  # MESSAGE_ILLEGAL, as the producer's own checks answer

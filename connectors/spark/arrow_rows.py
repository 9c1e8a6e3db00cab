"""Rows as Arrow record batches: the tasks' fast path to Spark.

PySpark converts tuples from a Python data source to Arrow value by value
through its generic converters; building each column once per batch with
pyarrow is several times cheaper per message. The batch schema must equal
what Spark derives from the source's schema (it checks), so it is derived
the same way, from a StructType built here without the JVM.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from common.message import MessageConst, MessageExt

__all__ = ["ArrowBatcher", "BATCH_ROWS", "topic_arrow_schema"]

BATCH_ROWS = 4096


def _struct(store: bool):
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        IntegerType,
        LongType,
        MapType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    s, i, long_, ts = StringType(), IntegerType(), LongType(), TimestampType()
    fields = [("topic", s), ("broker", s), ("queueId", i), ("queueOffset", long_), ("msgId", s), ("tags", s),
              ("keys", ArrayType(s)), ("body", BinaryType()), ("bornTimestamp", ts), ("storeTimestamp", ts),
              ("bornHost", s), ("reconsumeTimes", i), ("properties", MapType(s, s))]
    if store:
        fields += [("physicalOffset", long_), ("sysFlag", i), ("bodyCRC", i), ("crcOk", BooleanType())]
    return StructType([StructField(n, t, True) for n, t in fields])


def topic_arrow_schema(store: bool = False):
    """The Arrow schema Spark derives from the topic (or, with ``store``, the store) schema."""
    import inspect

    from pyspark.sql.pandas.types import to_arrow_schema

    # PySpark >= 4.1 takes the session time zone (timestamps UTC-aware with "UTC");
    # 4.0 has no such argument and always makes them UTC-aware
    if "timezone" in inspect.signature(to_arrow_schema).parameters:
        return to_arrow_schema(_struct(store), timezone="UTC")
    return to_arrow_schema(_struct(store))


def _host(h: tuple[str, int]) -> str:
    ip, port = h
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


class ArrowBatcher:
    """Turns (message, extras) streams into record batches of at most ``rows`` rows."""

    def __init__(self, store: bool = False, rows: int = BATCH_ROWS):
        import pyarrow as pa

        self.pa = pa
        self.schema = topic_arrow_schema(store)
        self.store = store
        self.rows = rows

    def batches(self, items: Iterable[tuple[MessageExt, str | None, bool, int]]) -> Iterator:
        """``items``: (message, broker, crc ok, stored crc); the last two are used by the store schema only."""
        chunk: list = []
        for it in items:
            chunk.append(it)
            if len(chunk) >= self.rows:
                yield self._batch(chunk)
                chunk = []
        if chunk:
            yield self._batch(chunk)

    def _batch(self, chunk: list):
        pa = self.pa
        tags_key, keys_key, uniq_key, sep = MessageConst.TAGS, MessageConst.KEYS, MessageConst.UNIQ_KEY, " "
        topic, broker, qid, qoff, msg_id, tags, keys, body = [], [], [], [], [], [], [], []
        born, stored, host, recon, props = [], [], [], [], []
        for m, b, _ok, _crc in chunk:
            p = m.properties
            topic.append(m.topic)
            broker.append(b)
            qid.append(m.queue_id)
            qoff.append(m.queue_offset)
            msg_id.append(p.get(uniq_key) or m.msg_id)
            tags.append(p.get(tags_key))
            k = p.get(keys_key)
            keys.append(None if k is None else [x for x in k.split(sep) if x])
            body.append(m.body)
            born.append(m.born_timestamp * 1000)
            stored.append(m.store_timestamp * 1000)
            host.append(_host(m.born_host))
            recon.append(m.reconsume_times)
            props.append(p)
        cols = [topic, broker, qid, qoff, msg_id, tags, keys, body, born, stored, host, recon, props]
        if self.store:
            cols += [[m.commit_log_offset for m, *_ in chunk], [m.sys_flag for m, *_ in chunk],
                     [c for *_, c in chunk], [ok for _m, _b, ok, _c in chunk]]
        arrays = [pa.array(col, type=f.type) for col, f in zip(cols, self.schema, strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

"""The sink's rows as messages, converted column by column.

Spark hands a sink task Arrow record batches (or Rows on runtimes without
Arrow writers). Each column the sink uses is turned into a Python list once
per batch (a string body is first cast to binary in Arrow, which costs no
copy, so bodies arrive as bytes), and the rows are then zipped together:
no per-row lookups by column name, no per-row type checks beyond a body
that is not already bytes. Every message gets its deterministic UNIQ_KEY
here: the task's 20-digit prefix and the row's 12-digit position.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import count, islice, repeat

from client.message import Message
from common.message import MessageConst
from connectors.spark.errors import ConnectorError
from remoting import ResponseCode

__all__ = ["SinkColumns", "row_messages", "ROW_CHUNK"]

# Rows (not Arrow batches) are transposed into columns this many at a time
ROW_CHUNK = 4096


class SinkColumns:
    """Positions of the sink's columns in the rows or batches of one task (resolved once)."""

    __slots__ = ("body", "topic", "tags", "keys", "props", "sharding", "delay")

    def __init__(self, schema):
        pos = {f.name.lower(): i for i, f in enumerate(schema.fields)}
        self.body: int = pos.get("body", pos.get("value"))
        self.topic: int | None = pos.get("topic")
        self.tags: int | None = pos.get("tags")
        self.keys: int | None = pos.get("keys")
        self.props: int | None = pos.get("properties")
        self.sharding: int | None = pos.get("shardingkey")
        self.delay: int | None = pos.get("delaytimelevel")


def row_messages(items: Iterable, cols: SinkColumns, default_topic: str | None,
                 key_prefix: str) -> Iterator[tuple[Message, str | None]]:
    """(message, sharding key) of every row of ``items`` (Arrow record batches or Rows), in order."""
    import pyarrow as pa

    start = 0
    it = iter(items)
    for item in it:
        if isinstance(item, pa.RecordBatch):
            n = item.num_rows
            yield from _convert(_arrow_columns(item, cols), cols, start, default_topic, key_prefix)
        else:
            chunk = [item, *islice(it, ROW_CHUNK - 1)]
            n = len(chunk)
            yield from _convert(_row_columns(chunk, cols), cols, start, default_topic, key_prefix)
        start += n


def _arrow_columns(batch, cols: SinkColumns) -> list:
    import pyarrow as pa

    out = []
    for i in (cols.body, cols.topic, cols.tags, cols.keys, cols.props, cols.sharding, cols.delay):
        if i is None:
            out.append(None)
            continue
        col = batch.column(i)
        if i == cols.body and (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            col = col.cast(pa.large_binary() if pa.types.is_large_string(col.type) else pa.binary())
        out.append(col.to_pylist())
    return out


def _row_columns(rows: list, cols: SinkColumns) -> list:
    return [None if i is None else [r[i] for r in rows]
            for i in (cols.body, cols.topic, cols.tags, cols.keys, cols.props, cols.sharding, cols.delay)]


def _convert(columns: list, cols: SinkColumns, start: int, default_topic: str | None,
             key_prefix: str) -> Iterator[tuple[Message, str | None]]:
    bodies, topics, tags, keys, props, shards, delays = (repeat(None) if c is None else c for c in columns)
    uniq = MessageConst.UNIQ_KEY
    for i, body, topic, tag, key, prop, shard, delay in zip(count(start), bodies, topics, tags, keys, props, shards,
                                                          delays):
        if body.__class__ is not bytes:
            if body is None:
                raise ConnectorError(f"row {i}: body is null", ResponseCode.MESSAGE_ILLEGAL)
            body = body.encode() if isinstance(body, str) else bytes(body)
        if not body:
            raise ConnectorError(f"row {i}: the message body length is zero", ResponseCode.MESSAGE_ILLEGAL)
        topic = topic or default_topic
        if not topic:
            raise ConnectorError(f"row {i}: topic column is null and no topic option is set")
        if prop:  # a dict from a Row, (key, value) pairs from Arrow
            p = {str(k): str(v) for k, v in (prop.items() if isinstance(prop, dict) else prop) if v is not None}
            p[uniq] = f"{key_prefix}{i:012X}"
        else:
            p = {uniq: f"{key_prefix}{i:012X}"}
        if key is not None and key.__class__ is not str:
            key = " ".join(k for k in key if k)
        msg = Message(topic, body, tag or None, key or None, properties=p, delay_time_level=int(delay) if delay else 0)
        if prop or tag or key:  # the batch sender does not check entries again: separators end a property
            _check_separators(i, msg.properties)
        yield msg, shard


def _check_separators(row: int, props: dict[str, str]) -> None:
    for k, v in props.items():
        kv = f"{k}{v}"
        if "\x01" in kv or "\x02" in kv:
            raise ConnectorError(f"row {row}: property {k!r} contains a separator character (\\x01 or \\x02)",
                                 ResponseCode.MESSAGE_ILLEGAL)

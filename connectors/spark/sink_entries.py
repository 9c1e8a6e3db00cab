"""The sink's rows encoded as SEND_BATCH_MESSAGE entries, a chunk of rows at a time, in Arrow.

A batch body is the entries of its messages back to back (``encode_batch_body``'s
layout: total size, magic, body CRC and flag (0 here), body length, body,
properties length, properties). Here the entries of a whole chunk (a Spark
Arrow batch, or ``ROW_CHUNK`` Rows) are made by one ``binary_join_element_wise``
of Arrow columns: the entry heads, the bodies (never turned into Python
objects) and the properties. A batch to send is then a slice of the result's
data buffer (see :mod:`connectors.spark.entry_batcher`): the bodies are copied
once, by Arrow, and a row costs Python only its head and its UNIQ_KEY (plus its
properties text when the rows carry tags, keys, properties or a delay).

Every message gets its deterministic UNIQ_KEY here: the task's 20-digit prefix
and the row's 12-digit position. Entries the broker would refuse and the
producer does not check again in a batch (null or empty body, a separator
character in a property, properties over 32767 bytes) fail the task here,
naming the row.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice, repeat

from common.message import MessageConst
from connectors.spark.errors import ConnectorError
from remoting import ResponseCode

__all__ = ["SinkColumns", "EntryChunk", "encode_entries", "ROW_CHUNK", "ENTRY_HEAD"]

# Rows (not Arrow batches) are transposed into columns this many at a time
ROW_CHUNK = 4096
ENTRY_HEAD = 20  # TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLENGTH
_HEAD = struct.Struct(">iiiii")
_PLEN = struct.Struct(">h")
_MAX_PROPERTIES = 32767  # a short on the wire, as Java's MessageDecoder writes it
_UNIQ = MessageConst.UNIQ_KEY
_TAGS, _KEYS, _DELAY = MessageConst.TAGS, MessageConst.KEYS, MessageConst.DELAY
_ILLEGAL = ResponseCode.MESSAGE_ILLEGAL


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

    @property
    def plain(self) -> bool:
        """True when the rows carry nothing but bodies (and topics, sharding keys): no per-row properties."""
        return self.tags is None and self.keys is None and self.props is None and self.delay is None


@dataclass(slots=True)
class EntryChunk:
    """The encoded entries of ``len(entries)`` consecutive rows, the first being row ``start`` of the task."""

    start: int
    entries: object  # pyarrow LargeBinaryArray: one SEND_BATCH_MESSAGE entry per row
    uniq: object  # pyarrow StringArray: each row's UNIQ_KEY
    topic: str | None  # the topic of every row, or None when they differ (see topics)
    topics: list[str] | None
    shards: list[str | None] | None  # sharding keys, None when no row has one
    delays: list[int] | None  # delay levels (0: none), None when no row has one


def encode_entries(items: Iterable, cols: SinkColumns, default_topic: str | None,
                   key_prefix: str) -> Iterator[EntryChunk]:
    """The entries of every row of ``items`` (Arrow record batches or Rows), in order, chunk by chunk."""
    import pyarrow as pa

    enc = _Encoder(pa, cols, default_topic, key_prefix)
    start = 0
    it = iter(items)
    for item in it:
        if isinstance(item, pa.RecordBatch):
            if not item.num_rows:
                continue
            chunk = enc.encode(enc.arrow_columns(item), start)
        else:
            rows = [item, *islice(it, ROW_CHUNK - 1)]
            chunk = enc.encode(enc.row_columns(rows), start)
        start += len(chunk.entries)
        yield chunk


class _Encoder:
    def __init__(self, pa, cols: SinkColumns, default_topic: str | None, key_prefix: str):
        import pyarrow.compute as pc

        self.pa, self.pc = pa, pc
        self.cols = cols
        self.default_topic = default_topic
        self.key_prefix = key_prefix
        self.sep = pa.scalar(b"", pa.large_binary())
        self.prefix = pa.scalar(key_prefix.encode(), pa.large_binary())
        uniq_len = len(_UNIQ) + 1 + len(key_prefix) + 12
        # the properties of a row with nothing but its UNIQ_KEY: length, name, separator; the key follows
        self.plain_tail = pa.scalar(_PLEN.pack(uniq_len) + f"{_UNIQ}\x01".encode(), pa.large_binary())
        self.plain_extra = ENTRY_HEAD + 2 + uniq_len

    def arrow_columns(self, batch) -> list:
        """Body as a large_binary Arrow array; the other columns the sink uses as Python lists."""
        pa, cols = self.pa, self.cols
        body = batch.column(cols.body)
        body = body if body.type == pa.large_binary() else body.cast(pa.large_binary())
        return [body, *(None if i is None else batch.column(i).to_pylist()
                        for i in (cols.topic, cols.tags, cols.keys, cols.props, cols.sharding, cols.delay))]

    def row_columns(self, rows: list) -> list:
        cols = self.cols
        body = self.pa.array([r[cols.body] for r in rows], self.pa.large_binary())
        return [body, *(None if i is None else [r[i] for r in rows]
                        for i in (cols.topic, cols.tags, cols.keys, cols.props, cols.sharding, cols.delay))]

    def encode(self, columns: list, start: int) -> EntryChunk:
        pa, pc = self.pa, self.pc
        body, topics, tags, keys, props, shards, delays = columns
        n = len(body)
        if body.null_count:
            raise ConnectorError(f"row {start + body.is_null().to_pylist().index(True)}: body is null", _ILLEGAL)
        lens = pc.binary_length(body).to_pylist()
        if 0 in lens:
            raise ConnectorError(f"row {start + lens.index(0)}: the message body length is zero", _ILLEGAL)
        hexes = pa.array([f"{i:012X}" for i in range(start, start + n)], pa.large_binary())
        uniq = pc.binary_join_element_wise(self.prefix, hexes, self.sep)
        topic, topics = self._topics(topics, start, n)
        if shards is not None and not any(shards):
            shards = None
        if delays is not None:
            delays = [int(d) if d else 0 for d in delays]
            if not any(delays):
                delays = None
        pack = _HEAD.pack
        if tags is None and keys is None and props is None and delays is None:
            extra = self.plain_extra
            heads = pa.array([pack(extra + ln, 0, 0, 0, ln) for ln in lens], pa.large_binary())
            entries = pc.binary_join_element_wise(heads, body, self.plain_tail, uniq, self.sep)
        else:
            tails = self._tails(start, n, uniq.cast(pa.large_string()).to_pylist(), tags, keys, props, delays)
            heads = pa.array([pack(ENTRY_HEAD + ln + len(t), 0, 0, 0, ln) for ln, t in zip(lens, tails, strict=True)],
                             pa.large_binary())
            entries = pc.binary_join_element_wise(heads, body, pa.array(tails, pa.large_binary()), self.sep)
        return EntryChunk(start, entries, uniq.cast(pa.large_string()), topic, topics, shards, delays)

    def _topics(self, topics: list | None, start: int, n: int) -> tuple[str | None, list[str] | None]:
        default = self.default_topic
        if topics is None:
            return default, None
        distinct = set(topics)
        if len(distinct) == 1:
            only = next(iter(distinct)) or default
            if not only:
                raise ConnectorError(f"row {start}: topic column is null and no topic option is set")
            return only, None
        out = [t or default for t in topics]
        if None in out:
            raise ConnectorError(f"row {start + out.index(None)}: topic column is null and no topic option is set")
        return None, out

    @staticmethod
    def _tails(start: int, n: int, uniq: list[str], tags, keys, props, delays) -> list[bytes]:
        """Each row's properties length and text (user properties, TAGS, KEYS, DELAY, UNIQ_KEY)."""
        tails = []
        none = repeat(None)
        pack = _PLEN.pack
        for i, u, tag, key, prop, delay in zip(range(start, start + n), uniq, tags or none, keys or none,
                                                props or none, delays or none, strict=False):
            parts = []
            if prop:  # a dict from a Row, (key, value) pairs from Arrow
                for k, v in (prop.items() if isinstance(prop, dict) else prop):
                    if v is not None and k != _UNIQ:
                        parts.append(f"{k}\x01{v}")
            if tag:
                parts.append(f"{_TAGS}\x01{tag}")
            if key:
                key = key if key.__class__ is str else " ".join(k for k in key if k)
                if key:
                    parts.append(f"{_KEYS}\x01{key}")
            checked = len(parts)
            if delay:
                parts.append(f"{_DELAY}\x01{delay}")
            parts.append(f"{_UNIQ}\x01{u}")
            text = "\x02".join(parts)
            if checked and (text.count("\x01") != len(parts) or text.count("\x02") != len(parts) - 1):
                _refuse_separator(i, prop, tag, key)
            data = text.encode()
            if len(data) > _MAX_PROPERTIES:
                raise ConnectorError(f"row {i}: the properties take {len(data)} bytes, more than {_MAX_PROPERTIES}",
                                     _ILLEGAL)
            tails.append(pack(len(data)) + data)
        return tails


def _refuse_separator(row: int, prop, tag: str | None, key: str | None) -> None:
    pairs = list(prop.items() if isinstance(prop, dict) else prop or ())
    for k, v in [*pairs, (_TAGS, tag or ""), (_KEYS, key or "")]:
        kv = f"{k}{v}"
        if "\x01" in kv or "\x02" in kv:
            raise ConnectorError(f"row {row}: property {k!r} contains a separator character (\\x01 or \\x02)",
                                 _ILLEGAL)
    raise AssertionError("unreachable: a separator was counted")  # pragma: no cover

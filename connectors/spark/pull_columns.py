"""PullColumns: pull answers straight into Arrow columns, without a message object per record.

A source task's work per message is decoding its record and handing it to
Spark. Going through MessageExt and then through rows costs an object, two
host tuples and a generator step per message; here each record's fields are
unpacked once (the record codec's ``decode_record``) and appended to the
column lists of the batch being built, and a record batch is made once
``rows`` messages are in. Born hosts are formatted once per distinct address.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator

from common.message import MessageConst, MessageSysFlag, bytes_to_host, create_offset_msg_id
from common.record_codec import RecordDecodeError, decode_record, parse_properties
from connectors.spark.arrow_rows import BATCH_ROWS, topic_arrow_schema
from connectors.spark.errors import ConnectorError

__all__ = ["PullColumns"]

_COMPRESSED = MessageSysFlag.COMPRESSED
_TYPE_MASK = MessageSysFlag.COMPRESSION_TYPE_MASK
_ZLIB_TYPES = (0, MessageSysFlag.COMPRESSION_ZLIB)


def _inflate(body: bytes, sys_flag: int) -> bytes:
    """As the client's decompress_body: zlib bodies inflated, others (LZ4/ZSTD, corrupt) left as stored."""
    if sys_flag & _TYPE_MASK not in _ZLIB_TYPES:
        return body
    try:
        return zlib.decompress(body)
    except zlib.error:
        return body


class PullColumns:
    """Turns one queue's pull answers (:meth:`RangePuller.answers`) into record batches of the topic schema."""

    def __init__(self, broker: str, queue_name: str, tags: set[str] | None, rows: int = BATCH_ROWS):
        import pyarrow as pa

        self.pa = pa
        self.schema = topic_arrow_schema()
        self.broker = broker
        self.queue_name = queue_name
        self.tags = tags
        self.rows = rows
        self._hosts: dict[tuple[bytes, int], str] = {}
        self._reset()

    def _reset(self) -> None:
        self.n = 0
        self.topic: list = []
        self.qid: list = []
        self.qoff: list = []
        self.msg_id: list = []
        self.tag: list = []
        self.keys: list = []
        self.body: list = []
        self.born: list = []
        self.stored: list = []
        self.host: list = []
        self.recon: list = []
        self.props: list = []

    def batches(self, answers: Iterable[tuple[bytes, int, int]]) -> Iterator:
        for buf, lo, hi in answers:
            self._add(buf, lo, hi)
            if self.n >= self.rows:
                yield self._flush()
        if self.n:
            yield self._flush()

    def _add(self, buf: bytes, lo: int, hi: int) -> None:
        mv = memoryview(buf)
        size = len(buf)
        pos = 0
        tags_key, keys_key, uniq_key = MessageConst.TAGS, MessageConst.KEYS, MessageConst.UNIQ_KEY
        wanted = self.tags
        hosts = self._hosts
        topic_a, qid_a, qoff_a, id_a, tag_a = (self.topic.append, self.qid.append, self.qoff.append,
                                               self.msg_id.append, self.tag.append)
        keys_a, body_a, born_a, stored_a = self.keys.append, self.body.append, self.born.append, self.stored.append
        host_a, recon_a, props_a = self.host.append, self.recon.append, self.props.append
        added = 0
        while pos + 8 <= size:
            try:
                (total, _magic, _crc, qid, _flag, qoff, poff, sys_flag, born_ts, born_addr, born_port, store_ts,
                 store_addr, store_port, reconsume, _prep, body_start, body_len, topic, props_start,
                 plen) = decode_record(buf, pos)
            except RecordDecodeError as e:
                raise ConnectorError(f"queue {self.queue_name}: a pulled record does not decode: {e}") from None
            pos += total
            if qoff < lo:
                continue
            if qoff >= hi:
                break
            props = parse_properties(str(mv[props_start:props_start + plen], "utf-8", "replace")) if plen else {}
            tag = props.get(tags_key)
            if wanted is not None and tag not in wanted:
                continue
            body = buf[body_start:body_start + body_len]
            if sys_flag & _COMPRESSED:
                body = _inflate(body, sys_flag)
            topic_a(topic)
            qid_a(qid)
            qoff_a(qoff)
            uniq = props.get(uniq_key)
            id_a(uniq or create_offset_msg_id(bytes_to_host(store_addr, store_port), poff))
            tag_a(tag)
            k = props.get(keys_key)
            keys_a(None if k is None else [x for x in k.split(" ") if x])
            body_a(body)
            born_a(born_ts * 1000)
            stored_a(store_ts * 1000)
            hk = (born_addr, born_port)
            h = hosts.get(hk)
            if h is None:
                ip, port = bytes_to_host(born_addr, born_port)
                h = hosts[hk] = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
            host_a(h)
            recon_a(reconsume)
            props_a(props)
            added += 1
        self.n += added

    def _flush(self):
        pa = self.pa
        broker = pa.array([self.broker] * self.n, pa.string())
        cols = [self.topic, broker, self.qid, self.qoff, self.msg_id, self.tag, self.keys, self.body, self.born,
                self.stored, self.host, self.recon, self.props]
        arrays = [c if isinstance(c, pa.Array) else pa.array(c, type=f.type)
                  for c, f in zip(cols, self.schema, strict=True)]
        self._reset()
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

"""PullColumns: pull answers straight into Arrow columns, without a message object per record.

A source task's work per message is decoding its record and handing it to
Spark. Going through MessageExt and then through rows costs an object, two
host tuples and a generator step per message; here each record is parsed
once by the store's record parser (``common.speedups.parse_record``, the
compiled twin where built), the two fields it leaves out (born host,
reconsume times) are unpacked at their fixed places, and the values are
appended to the column lists of the batch being built; a record batch is made
once ``rows`` messages are in. Born hosts are formatted once per address, and
the properties map is split out of the raw texts by Arrow, a batch at a time.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator

from common.message import MessageSysFlag, bytes_to_host, create_offset_msg_id
from common.record_codec import (
    BORNHOST_V6,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    STOREHOSTADDRESS_V6,
    parse_properties,
)
from common.speedups import parse_record
from connectors.spark.arrow_rows import BATCH_ROWS, topic_arrow_schema
from connectors.spark.errors import ConnectorError

__all__ = ["PullColumns"]

_COMPRESSED = MessageSysFlag.COMPRESSED
_TYPE_MASK = MessageSysFlag.COMPRESSION_TYPE_MASK
_ZLIB_TYPES = (0, MessageSysFlag.COMPRESSION_ZLIB)
_MESSAGE_MAGICS = (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2)
_HOST_AT = 48  # TOTALSIZE .. BORNTIMESTAMP, then the born host
_HOST4 = struct.Struct(">4si")
_HOST16 = struct.Struct(">16si")
_I32 = struct.Struct(">i")
_RECONSUME_BEFORE_BODY = 16  # RECONSUMETIMES (4), PREPARED_TX_OFFSET (8), BODYLENGTH (4)


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
        import pyarrow.compute as pc

        self.pa, self.pc = pa, pc
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
        if buf.__class__ is not bytes:  # slices of it key the host cache: they must be hashable
            buf = bytes(buf)
        size = len(buf)
        pos = 0
        wanted = self.tags
        hosts = self._hosts
        topic_a, qid_a, qoff_a, id_a, tag_a = (self.topic.append, self.qid.append, self.qoff.append,
                                               self.msg_id.append, self.tag.append)
        keys_a, body_a, born_a, stored_a = self.keys.append, self.body.append, self.born.append, self.stored.append
        host_a, recon_a, props_a = self.host.append, self.recon.append, self.props.append
        added = 0
        last_hk, last_h = b"", ""
        while pos + 8 <= size:
            rec = parse_record(buf, pos)
            if rec is None or rec[1] not in _MESSAGE_MAGICS:
                raise ConnectorError(f"queue {self.queue_name}: a pulled record at byte {pos} does not decode")
            (total, _magic, _crc, qid, _flag, qoff, poff, sys_flag, born_ts, store_ts, _prep, body_start, body_len,
             topic, props_start, plen, tag, keys, uniq, _delay) = rec
            here = pos
            pos += total
            if qoff < lo:
                continue
            if qoff >= hi:
                break
            if wanted is not None and tag not in wanted:
                continue
            body = buf[body_start:body_start + body_len]
            if sys_flag & _COMPRESSED:
                body = _inflate(body, sys_flag)
            topic_a(topic)
            qid_a(qid)
            qoff_a(qoff)
            id_a(uniq or self._offset_msg_id(buf, here, sys_flag, poff))
            tag_a(tag)
            keys_a(None if keys is None else [x for x in keys.split(" ") if x])
            body_a(body)
            born_a(born_ts * 1000)
            stored_a(store_ts * 1000)
            hl = 20 if sys_flag & BORNHOST_V6 else 8
            if len(last_hk) != hl or not buf.startswith(last_hk, here + _HOST_AT):  # most come from one host
                last_hk = buf[here + _HOST_AT:here + _HOST_AT + hl]
                last_h = hosts.get(last_hk)
                if last_h is None:
                    ip, port = bytes_to_host(*(_HOST16 if hl == 20 else _HOST4).unpack(last_hk))
                    last_h = hosts[last_hk] = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
            host_a(last_h)
            recon_a(_I32.unpack_from(buf, body_start - _RECONSUME_BEFORE_BODY)[0])
            props_a(buf[props_start:props_start + plen])
            added += 1
        self.n += added

    @staticmethod
    def _offset_msg_id(buf: bytes, pos: int, sys_flag: int, phys_offset: int) -> str:
        """The broker's offset message id (store host, physical offset): for records without a UNIQ_KEY."""
        at = pos + _HOST_AT + (20 if sys_flag & BORNHOST_V6 else 8) + 8
        host = (_HOST16 if sys_flag & STOREHOSTADDRESS_V6 else _HOST4).unpack_from(buf, at)
        return create_offset_msg_id(bytes_to_host(*host), phys_offset)

    def _props_map(self, raw: list[bytes]):
        """The properties column from the records' raw properties texts, split by Arrow.

        Texts that are not all well-formed (UTF-8, every item ``key\\x01value`` with neither empty)
        are parsed one by one as the client parses them (bad items skipped).
        """
        pa, pc = self.pa, self.pc
        map_type = self.schema.field("properties").type
        try:
            text = pa.array(raw, pa.binary()).cast(pa.string())
        except pa.ArrowInvalid:
            text = None
        if text is not None:
            items = pc.split_pattern(text, "\x02")
            flat = items.flatten()
            at = pc.find_substring(flat, "\x01")
            if len(flat) and pc.min(at).as_py() >= 1 and \
                    pc.all(pc.less(at, pc.subtract(pc.binary_length(flat), 1))).as_py():
                kv = pc.split_pattern(flat, "\x01", max_splits=1)
                return pa.MapArray.from_arrays(items.offsets, pc.list_element(kv, 0), pc.list_element(kv, 1),
                                               type=map_type)
        return pa.array([parse_properties(str(r, "utf-8", "replace")) for r in raw], map_type)

    def _flush(self):
        pa = self.pa
        broker = pa.array([self.broker] * self.n, pa.string())
        cols = [self.topic, broker, self.qid, self.qoff, self.msg_id, self.tag, self.keys, self.body, self.born,
                self.stored, self.host, self.recon, self._props_map(self.props)]
        arrays = [c if isinstance(c, pa.Array) else pa.array(c, type=f.type)
                  for c, f in zip(cols, self.schema, strict=True)]
        self._reset()
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

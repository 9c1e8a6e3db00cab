"""CommitLog: the append-only record log (spec message-and-store-format.md §2, §8).

Writes RocketMQ 4.9 v1 records straight into the last mapped file with
precompiled ``struct.Struct.pack_into``; reads v1 and the 5.x v2 (long topic)
records. Queue offsets come from the in-memory ``topic-queueId → next offset``
table; PREPARED and ROLLBACK records get queue offset 0 and do not advance it.

Crash safety: a record is written body/topic/properties first and its header
(TOTALSIZE + MAGIC) last, and recovery zeroes the bytes after the last valid
record, so a process killed mid-append leaves either a whole record or bytes
that do not parse as one. Recovery additionally rejects records whose topic or
properties contain NUL bytes (the signature of a tail cut short).

The store talks to the CommitLog only through the methods documented as
"interface" below, so a DLedger-backed log can replace it.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections import deque
from collections.abc import Callable

from common import speedups
from common.mapped_file import CreateGuard, MappedFile, MappedFileQueue
from common.message import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    PROPERTY_SEPARATOR,
    MessageConst,
    MessageExtBatch,
    MessageExtBrokerInner,
    MessageSysFlag,
    host_to_bytes,
    string_to_properties,
)
from common.util import java_string_hash, now_ms
from store.config import FlushDiskType, MessageStoreConfig
from store.dispatch import DispatchRequest
from store.message_store import (
    AppendMessageResult,
    AppendMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)

__all__ = [
    "CommitLog",
    "RECORD_V1",  # noqa: F822 - built on first access (module __getattr__)
    "RECORD_V2",  # noqa: F822
    "END_FILE_MIN_BLANK_LENGTH",
    "SCHEDULE_TOPIC",
    "TagsCodeCalculator",
    "record_length",
]

log = logging.getLogger(__name__)

END_FILE_MIN_BLANK_LENGTH = 8
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
MAX_TOPIC_BYTES = 127
MAX_PROPERTIES_BYTES = 32767

_BORN_V6 = MessageSysFlag.BORNHOST_V6
_STORE_V6 = MessageSysFlag.STOREHOSTADDRESS_V6
_TX_MASK = MessageSysFlag.TRANSACTION_MASK
_TX_PREPARED = MessageSysFlag.TRANSACTION_PREPARED_TYPE
_TX_ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
_NOT_V6 = ~(_BORN_V6 | _STORE_V6)
_APPEND_OK = AppendMessageStatus.PUT_OK
PREPARED_DISPATCH_CAPACITY = 65536
# the compiled record parser; the pure twin is slower than the inlined Python below, so not used
_parse_record = speedups.parse_record if speedups.IS_COMPILED else None
# the compiled batch encoder when it exists (the pure twin is no faster than CommitLog._encode_batch)
_encode_records = getattr(speedups, "encode_records", None) if speedups.IS_COMPILED else None
# the compiled TAGS/KEYS/UNIQ_KEY/DELAY finder (also the NUL check) of a single put's properties
_dispatch_props = speedups.dispatch_props if speedups.IS_COMPILED else None
# compiled: a batch's stored properties texts and dispatch fields in one call, its msgIds in another
_batch_properties = speedups.batch_properties if speedups.IS_COMPILED else None
_msg_ids = speedups.msg_ids if speedups.IS_COMPILED else None
# compiled: a single put's record (CRC included) in one call
_write_record = speedups.write_record if speedups.IS_COMPILED else None
# compiled: the prepared requests of a batch of a plain topic built without running __init__ per record
_dispatch_requests = speedups.dispatch_requests if speedups.IS_COMPILED else None
_new_request = speedups.new_dispatch_request if speedups.IS_COMPILED else None

# -- the record, declared once with construct (documentation + cross-check) ----
# Built on first access (module __getattr__): importing construct costs start-up ~15 ms.

_LAYOUTS: dict[str, object] = {}


def _build_layouts() -> None:
    import construct as cs

    def host(flag_bit: int):
        return cs.Struct(
            "address" / cs.IfThenElse(lambda ctx: ctx._.sysFlag & flag_bit, cs.Bytes(16), cs.Bytes(4)),
            "port" / cs.Int32sb,
        )

    def record(topic_len):
        return cs.Struct(
            "totalSize" / cs.Int32sb,
            "magicCode" / cs.Int32sb,
            "bodyCRC" / cs.Int32sb,
            "queueId" / cs.Int32sb,
            "flag" / cs.Int32sb,
            "queueOffset" / cs.Int64sb,
            "physicalOffset" / cs.Int64sb,
            "sysFlag" / cs.Int32sb,
            "bornTimestamp" / cs.Int64sb,
            "bornHost" / host(_BORN_V6),
            "storeTimestamp" / cs.Int64sb,
            "storeHost" / host(_STORE_V6),
            "reconsumeTimes" / cs.Int32sb,
            "preparedTransactionOffset" / cs.Int64sb,
            "body" / cs.Prefixed(cs.Int32sb, cs.GreedyBytes),
            "topic" / cs.PascalString(topic_len, "utf8"),
            "properties" / cs.Prefixed(cs.Int16ub, cs.GreedyBytes),
        )

    _LAYOUTS["RECORD_V1"] = record(cs.Int8ub)  # magic 0xDAA320A7: 1-byte topic length
    _LAYOUTS["RECORD_V2"] = record(cs.Int16sb)  # magic 0xDAA320AB (5.x): 2-byte topic length


def __getattr__(name: str):
    """``RECORD_V1`` / ``RECORD_V2``: the CommitLog record as construct Structs, built on first access."""
    if name in ("RECORD_V1", "RECORD_V2"):
        if not _LAYOUTS:
            _build_layouts()
        return _LAYOUTS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- the hot-path structs -----------------------------------------------------

_HEAD_FMT = ">iiiiiqqiq"  # TOTALSIZE MAGIC BODYCRC QUEUEID FLAG QUEUEOFFSET PHYSOFFSET SYSFLAG BORNTS
_HEADERS = {
    (bv6, sv6): struct.Struct(
        _HEAD_FMT + ("16s" if bv6 else "4s") + "iq" + ("16s" if sv6 else "4s") + "iiqi"
    )
    for bv6 in (False, True)
    for sv6 in (False, True)
}
_HDR44 = _HEADERS[(False, False)]
# the IPv4/IPv4 header reduced to TOTAL MAGIC CRC QID QOFF PHYS SYSFLAG STORETS PREPARED BODYLEN (dispatch)
_DISPATCH44 = struct.Struct(">iiii4xqqi8x4x4xq4x4x4xqi")
assert _DISPATCH44.size == _HDR44.size
# ... and to TOTAL MAGIC CRC QID PHYS SYSFLAG BODYLEN (recovery's validation walk)
_RECOVER44 = struct.Struct(">iiii4x8xqi8x4x4x8x4x4x4x8xi")
assert _RECOVER44.size == _HDR44.size
_BLANK = struct.Struct(">ii")
_I16 = struct.Struct(">h")
_BATCH_HEAD = struct.Struct(">iiiii")  # client batch entry: totalSize magic bodyCRC flag bodyLen
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_MIN_RECORD = 91


def record_length(body_len: int, topic_len: int, props_len: int, born_v6: bool = False, store_v6: bool = False) -> int:
    """TOTALSIZE of a v1 record."""
    return _MIN_RECORD + body_len + topic_len + props_len + (12 if born_v6 else 0) + (12 if store_v6 else 0)


class TagsCodeCalculator:
    """The consume-queue tag code of a record: Java hash of TAGS, or the delivery time in SCHEDULE_TOPIC_XXXX."""

    __slots__ = ("_cache", "_delays")

    def __init__(self, delay_levels_ms: list[int]) -> None:
        self._cache: dict[str, int] = {}
        self._delays = delay_levels_ms

    def tags_hash(self, tags: str) -> int:
        h = self._cache.get(tags)
        if h is None:
            h = java_string_hash(tags)
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[tags] = h
        return h

    def __call__(self, topic: str, props: dict[str, str], store_timestamp: int) -> int:
        return self.of(topic, props.get(MessageConst.TAGS), props.get(MessageConst.DELAY), store_timestamp)

    def of(self, topic: str, tags: str | None, delay: str | None, store_timestamp: int) -> int:
        """The tag code from the TAGS and DELAY property values (None or "" when absent)."""
        if delay and topic == SCHEDULE_TOPIC:
            try:
                level = int(delay)
            except ValueError:
                level = 0
            if level > 0 and self._delays:
                level = min(level, len(self._delays))
                return store_timestamp + self._delays[level - 1]
        if tags:
            return self.tags_hash(tags)
        return 0


def _prop(s: str, name: str, sep: str = PROPERTY_SEPARATOR) -> str | None:
    """The value of property ``name`` (given as ``"NAME\x01"``) in a properties string, without
    parsing the rest; same result as ``string_to_properties(s).get(NAME)`` (last entry wins,
    an empty value counts as absent)."""
    i = s.rfind(name)
    while i > 0 and s[i - 1] != sep:
        i = s.rfind(name, 0, i)
    if i < 0:
        return None
    j = s.find(sep, i)
    v = s[i + len(name) : j] if j >= 0 else s[i + len(name) :]
    return v or None


_KEYS_NAME = MessageConst.KEYS + "\x01"
_UNIQ_NAME = MessageConst.UNIQ_KEY + "\x01"
_TAGS_NAME = MessageConst.TAGS + "\x01"


_INVALID = DispatchRequest(success=False, msg_size=-1)
_BLANK_REQ = DispatchRequest(success=True, msg_size=0)


class CommitLog:
    """The CommitLog of one store directory.

    Interface used by the store: ``load``, ``put_message``, ``put_messages``,
    ``get_min_offset``, ``get_max_offset``, ``get_message``, ``get_data``,
    ``roll_next_file``, ``pickup_store_timestamp``, ``check_message_and_return_size``,
    ``recover_normally``, ``recover_abnormally``, ``append_data``, ``flush``,
    ``put_message_list``, ``prepared`` (optional: see :meth:`enable_prepared_dispatch`),
    ``flush_until``, ``flushed_where``, ``store_timestamp``, ``file_size``,
    ``shutdown``, ``destroy``, ``topic_queue_table`` (plug another one in with
    ``DefaultMessageStore(commit_log_factory=...)``).
    """

    def __init__(self, config: MessageStoreConfig, tags_code: TagsCodeCalculator | None = None, *,
                 guard: CreateGuard | None = None) -> None:
        self.config = config
        # every file's blocks are reserved when it is created; ``guard`` may refuse a new file (disk nearly full)
        self.mapped_file_queue = MappedFileQueue(config.commit_log_dir, config.mappedFileSizeCommitLog, guard=guard)
        self.file_size = config.mappedFileSizeCommitLog
        self.topic_queue_table: dict[str, int] = {}
        self.tags_code = tags_code or TagsCodeCalculator(config.delay_levels_ms())
        # read-only view of the calculator's tag hash cache for the put path (misses go through tags_hash)
        cache = getattr(self.tags_code, "_cache", None)
        self._tags_cache: dict[str, int] = cache if isinstance(cache, dict) else {}
        self._addr_cache: dict[str, bytes] = {}
        self._prefix_cache: dict[tuple[str, int], str] = {}
        self._topic_cache: dict[str, bytes] = {}
        self._key_cache: dict[str, dict[int, str]] = {}
        # Prepared dispatch: the DispatchRequests of the records appended here, oldest first,
        # for the ReputMessageService to take instead of parsing the records back. None until
        # enable_prepared_dispatch() (the store does it when its reput consumes them); bounded:
        # once full, the reput parses the records that did not fit.
        self.prepared: deque[DispatchRequest] | None = None
        self.prepared_capacity = PREPARED_DISPATCH_CAPACITY
        self.begin_time_in_lock = 0
        # fill the page cache ahead of the writer (MappedFile.warm_ahead); not under SYNC_FLUSH, where
        # every group commit would also write the zeros ahead to disk
        self._warm = config.flushDiskType is not FlushDiskType.SYNC_FLUSH

    # -- lifecycle ------------------------------------------------------------

    def load(self) -> bool:
        return self.mapped_file_queue.load()

    def shutdown(self) -> None:
        self.mapped_file_queue.shutdown()

    def destroy(self) -> None:
        self.mapped_file_queue.destroy()
        if self.prepared:
            self.prepared.clear()

    # -- offsets ----------------------------------------------------------------

    def get_min_offset(self) -> int:
        first = self.mapped_file_queue.get_first_mapped_file()
        if first is None:
            return -1
        return first.file_from_offset

    def runtime_extra(self) -> dict[str, str]:
        """Keys this CommitLog adds to the broker's runtime info (the DLedger one: its role, term, lag)."""
        return {}

    def get_max_offset(self) -> int:
        return self.mapped_file_queue.get_max_offset()

    @property
    def flushed_where(self) -> int:
        return self.mapped_file_queue.flushed_where

    @property
    def store_timestamp(self) -> int:
        """Store time of the last record known to be flushed (the checkpoint's physicMsgTimestamp)."""
        return self.mapped_file_queue.store_timestamp

    def flush_until(self, target: int) -> int:
        """Blocking: flush until the flushed offset reaches ``target``; return the flushed offset."""
        from store.flush_service import flush_until

        return flush_until(self, target)

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_size - offset % self.file_size

    # -- helpers ----------------------------------------------------------------

    def _addr(self, host: str) -> bytes:
        b = self._addr_cache.get(host)
        if b is None:
            b = host_to_bytes((host, 0))
            if len(self._addr_cache) > 10000:
                self._addr_cache.clear()
            self._addr_cache[host] = b
        return b

    def _msg_id_prefix(self, store_host: tuple[str, int]) -> str:
        prefix = self._prefix_cache.get(store_host)
        if prefix is None:
            prefix = (host_to_bytes(store_host) + _I32.pack(store_host[1])).hex().upper()
            if len(self._prefix_cache) > 10_000:
                self._prefix_cache.clear()
            self._prefix_cache[store_host] = prefix
        return prefix

    def _msg_id(self, store_host: tuple[str, int], phys: int) -> str:
        return f"{self._msg_id_prefix(store_host)}{phys:016X}"

    def _last_file_for(self, total: int) -> MappedFile | None:
        """The file to append ``total`` bytes to; writes the BLANK record and rolls when needed."""
        files = self.mapped_file_queue.mapped_files
        if files:
            mf = files[-1]
            end = mf.wrote_position + total
            if end + END_FILE_MIN_BLANK_LENGTH <= mf.file_size:  # the usual case: room in the last file
                if end > mf.warmed_to and self._warm:
                    mf.warm_ahead(end)
                return mf
        q = self.mapped_file_queue
        mf = q.get_last_mapped_file_or_create(0)
        if mf is None:
            return None
        remaining = mf.file_size - mf.wrote_position
        if total + END_FILE_MIN_BLANK_LENGTH > remaining:
            _BLANK.pack_into(mf.mm, mf.wrote_position, remaining, BLANK_MAGIC_CODE)
            mf.wrote_position = mf.committed_position = mf.file_size
            mf = q.get_last_mapped_file_or_create(0)
        if mf is not None and self._warm:
            mf.warm_ahead(mf.wrote_position + total)
        return mf

    def _no_file(self) -> PutMessageResult:
        """The answer when no file can take the record: a full disk refuses the put (the store
        is marked disk-full by the guard); any other failure is RocketMQ's CREATE_MAPEDFILE_FAILED."""
        if self.mapped_file_queue.create_refused_disk_full:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, None,
                                    "the broker's disk is full: no room for a new commit log file")
        return PutMessageResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED, None, "create mapped file failed")

    def _topic_bytes(self, topic: str) -> bytes | None:
        """The encoded topic, cached; None when its length is not 1..127 bytes."""
        b = topic.encode("utf-8")
        if not 0 < len(b) <= MAX_TOPIC_BYTES:
            return None
        if len(self._topic_cache) > 10_000:
            self._topic_cache.clear()
        self._topic_cache[topic] = b
        return b

    def _queue_key(self, topic: str, queue_id: int) -> str:
        """``topic-queueId``, the key of :attr:`topic_queue_table` (cached per topic and queue)."""
        per_topic = self._key_cache.get(topic)
        if per_topic is None:
            if len(self._key_cache) > 10_000:
                self._key_cache.clear()
            per_topic = self._key_cache[topic] = {}
        key = per_topic[queue_id] = f"{topic}-{queue_id}"
        return key

    # -- prepared dispatch ---------------------------------------------------------

    def enable_prepared_dispatch(self, capacity: int = PREPARED_DISPATCH_CAPACITY) -> None:
        """Let appends leave their DispatchRequest for the reput (see :attr:`prepared`)."""
        self.prepared = deque()
        self.prepared_capacity = capacity

    def dispatch_fields(self, topic: str, props_s: str, store_ts: int) -> tuple[int, str, str | None]:
        """(tags code, KEYS, UNIQ_KEY) of a record, from its stored properties string.

        Without the compiled parser this is where both the append (prepared requests)
        and the parse compute them; with it, both take TAGS/KEYS/UNIQ_KEY/DELAY from
        ``speedups.parse_record`` (same values) and the tag code from
        :meth:`TagsCodeCalculator.of`. Either way the two dispatch paths agree.
        """
        if not props_s:
            return 0, "", None
        if topic == SCHEDULE_TOPIC:
            tags_code = self.tags_code(topic, string_to_properties(props_s), store_ts)
        else:
            tags = _prop(props_s, _TAGS_NAME)
            tags_code = self.tags_code.tags_hash(tags) if tags else 0
        return tags_code, _prop(props_s, _KEYS_NAME) or "", _prop(props_s, _UNIQ_NAME)

    # -- append -------------------------------------------------------------------

    def put_message_list(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]:
        """Append each message as :meth:`put_message` would, with one store timestamp for all.

        Each message gets its own result; an illegal one fails alone. A subclass that
        overrides :meth:`put_message` (DLedger) gets one call of it per message.
        """
        if type(self).put_message is not CommitLog.put_message:
            return [self.put_message(m) for m in msgs]
        now = now_ms()
        put = self.put_message
        return [put(m, now) for m in msgs]

    def put_message(self, msg: MessageExtBrokerInner, now: int = 0) -> PutMessageResult:
        """Append one record; stamps store time (``now``, default the clock), physical and queue
        offset into ``msg``."""
        if not now:
            now = now_ms()
        body = msg.body
        body_len = len(body)
        if body_len > self.config.maxMessageSize:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None,
                                    f"message body size {body_len} exceeds maxMessageSize")
        topic = msg.topic
        topic_b = self._topic_cache.get(topic) or self._topic_bytes(topic)
        if topic_b is None:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "topic length must be 1..127 bytes")
        topic_len = len(topic_b)
        props_s = msg.properties_string
        if not props_s and msg.properties:
            props_b = msg.properties_bytes()
            props_s = msg.properties_string
        else:
            props_b = props_s.encode("utf-8")
        props_len = len(props_b)
        if props_len > MAX_PROPERTIES_BYTES:
            return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, None,
                                    f"properties size {props_len} exceeds 32767")
        if _dispatch_props is not None:
            # compiled: the dispatch fields and the NUL check in one scan of the string
            fields = _dispatch_props(props_s)
            if fields is None:
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "properties contain NUL")
        else:
            fields = None
            if b"\x00" in props_b:
                # recovery treats NUL in properties as the trace of a torn record
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "properties contain NUL")
        born = msg.born_host
        store = msg.store_host
        addrs = self._addr_cache
        born_a = addrs.get(born[0]) or self._addr(born[0])
        store_a = addrs.get(store[0]) or self._addr(store[0])
        sys_flag = msg.sys_flag
        if len(born_a) == 4 and len(store_a) == 4:
            sys_flag &= _NOT_V6
            hdr = _HDR44
            total = _MIN_RECORD + body_len + topic_len + props_len
        else:
            bv6 = len(born_a) == 16
            sv6 = len(store_a) == 16
            sys_flag = (sys_flag | _BORN_V6) if bv6 else (sys_flag & ~_BORN_V6)
            sys_flag = (sys_flag | _STORE_V6) if sv6 else (sys_flag & ~_STORE_V6)
            hdr = _HEADERS[(bv6, sv6)]
            total = _MIN_RECORD + body_len + topic_len + props_len + (12 if bv6 else 0) + (12 if sv6 else 0)
        if total + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "message larger than a commit-log file")
        # _last_file_for's usual case inlined: room in the last file, already warmed that far
        files = self.mapped_file_queue.mapped_files
        mf = files[-1] if files else None
        if (mf is None or mf.wrote_position + total + END_FILE_MIN_BLANK_LENGTH > mf.file_size
                or (mf.wrote_position + total > mf.warmed_to and self._warm)):
            mf = self._last_file_for(total)
            if mf is None:
                return self._no_file()
        tx = sys_flag & _TX_MASK
        qid = msg.queue_id
        per_topic = self._key_cache.get(topic)
        key = per_topic.get(qid) if per_topic is not None else None
        if key is None:
            key = self._queue_key(topic, qid)
        counts = tx != _TX_PREPARED and tx != _TX_ROLLBACK
        qoff = self.topic_queue_table.get(key, 0) if counts else 0
        mm = mf.mm
        pos = mf.wrote_position
        phys = mf.file_from_offset + pos
        prepared = msg.prepared_transaction_offset
        if _write_record is not None:
            # the same bytes, CRC included, in one compiled call
            _write_record(mm, pos, body, topic_b, props_b, qid, msg.flag, qoff, phys, sys_flag, msg.born_timestamp,
                          born_a, born[1], now, store_a, store[1], msg.reconsume_times, prepared, msg.body_crc)
        else:
            crc = msg.body_crc
            if crc < 0:
                crc = zlib.crc32(body) & 0x7FFFFFFF
            p = pos + hdr.size
            # payload first, header (TOTALSIZE/MAGIC) last: a torn append never looks whole
            mm[p : p + body_len] = body
            p += body_len
            mm[p] = topic_len
            p += 1
            mm[p : p + topic_len] = topic_b
            p += topic_len
            _I16.pack_into(mm, p, props_len)
            if props_len:
                mm[p + 2 : p + 2 + props_len] = props_b
            hdr.pack_into(
                mm, pos, total, MESSAGE_MAGIC_CODE, crc, qid, msg.flag, qoff, phys, sys_flag,
                msg.born_timestamp, born_a, born[1], now, store_a, store[1],
                msg.reconsume_times, prepared, body_len,
            )
        mf.wrote_position = mf.committed_position = pos + total
        mf.store_timestamp = now
        if counts:
            self.topic_queue_table[key] = qoff + 1
        msg.store_timestamp = now
        msg.queue_offset = qoff
        msg.commit_log_offset = phys
        msg.sys_flag = sys_flag
        queue = self.prepared
        if queue is not None and len(queue) < self.prepared_capacity:
            if fields is not None:
                # (the same values parse_record finds in the record just written)
                tags, keys, uniq, delay = fields
                if delay is not None and topic == SCHEDULE_TOPIC:
                    tags_code = self.tags_code.of(topic, tags, delay, now)
                elif tags:
                    tags_code = self._tags_cache.get(tags)
                    if tags_code is None:
                        tags_code = self.tags_code.tags_hash(tags)
                else:
                    tags_code = 0
                if keys is None:
                    keys = ""
                queue.append(_new_request(DispatchRequest, topic, qid, phys, total, tags_code, now, qoff, keys, uniq,
                                          sys_flag, prepared, props_s))
            else:
                tags_code, keys, uniq = self.dispatch_fields(topic, props_s, now)
                queue.append(DispatchRequest(topic, qid, phys, total, tags_code, now, qoff, keys, uniq, sys_flag,
                                             prepared, None, True, None, props_s))
        prefix = self._prefix_cache.get(store) or self._msg_id_prefix(store)
        return PutMessageResult(
            PutMessageStatus.PUT_OK,
            AppendMessageResult(_APPEND_OK, phys, total, "", now, qoff, 1, 0, prefix),
        )

    @staticmethod
    def _split_batch(body: bytes) -> list[tuple[int, int, int, int, int]] | str:
        """(body start, body length, properties start, properties length, flag) per entry, or an error text."""
        mv = memoryview(body)
        n = len(mv)
        out = []
        pos = 0
        unpack = _BATCH_HEAD.unpack_from
        while pos < n:
            if pos + 22 > n:
                return f"truncated batch entry at {pos}"
            total, _magic, _crc, flag, blen = unpack(mv, pos)
            p = pos + 20
            if blen < 0 or p + blen + 2 > n:
                return f"bad body length in batch entry at {pos}"
            bstart = p
            p += blen
            plen = _I16.unpack_from(mv, p)[0] & 0xFFFF
            p += 2
            if p + plen > n or total != p + plen - pos:
                return f"bad size in batch entry at {pos}"
            out.append((bstart, blen, p, plen, flag))
            pos = p + plen
        return out

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """Append every message of a client batch body as consecutive records in one file."""
        tx = batch.sys_flag & _TX_MASK
        if tx != MessageSysFlag.TRANSACTION_NOT_TYPE:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "batch messages cannot be transactional")
        src = batch.body
        if len(src) > self.config.maxMessageSize:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "batch body exceeds maxMessageSize")
        if not isinstance(src, bytes):
            src = bytes(src)
        items = _split_batch(src)
        if isinstance(items, str):
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, f"bad batch body: {items}")
        if not items:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "empty batch")
        topic = batch.topic
        topic_b = self._topic_cache.get(topic) or self._topic_bytes(topic)
        if topic_b is None:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "topic length must be 1..127 bytes")
        topic_len = len(topic_b)
        batch_props = batch.properties_bytes()
        if b"\x00" in batch_props:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "properties contain NUL")
        bp_len = len(batch_props)
        tail_len = bp_len + 1 if bp_len else 0
        born, store = batch.born_host, batch.store_host
        born_a, store_a = self._addr(born[0]), self._addr(store[0])
        bv6, sv6 = len(born_a) == 16, len(store_a) == 16
        sys_flag = batch.sys_flag
        sys_flag = (sys_flag | _BORN_V6) if bv6 else (sys_flag & ~_BORN_V6)
        sys_flag = (sys_flag | _STORE_V6) if sv6 else (sys_flag & ~_STORE_V6)
        fixed = _MIN_RECORD + topic_len + (12 if bv6 else 0) + (12 if sv6 else 0)
        # the stored properties of each entry (prepared dispatch needs them as text too)
        queue = self.prepared
        prepare = queue is not None and len(queue) + len(items) <= self.prepared_capacity
        props_texts: list[str] = []
        fields = None
        if _batch_properties is not None:
            fields, var_bytes = _batch_properties(src, items, batch_props)
            if type(fields) is int:
                status = PutMessageStatus.MESSAGE_ILLEGAL if fields == 1 else PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
                return PutMessageResult(status, None, var_bytes)
            total_all = fixed * len(items) + var_bytes
        else:
            total_all = 0
            batch_tail = (PROPERTY_SEPARATOR + batch.properties_string) if bp_len else ""
            for _bstart, blen, pstart, plen, _flag in items:
                if plen:
                    # stored bytes must parse back: UTF-8, and no NUL (the recovery's torn-record signature)
                    if src.find(b"\x00", pstart, pstart + plen) >= 0:
                        return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "batch properties contain NUL")
                    try:
                        text = str(src[pstart : pstart + plen], "utf-8")
                    except UnicodeDecodeError:
                        return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "batch properties not UTF-8")
                    full_plen = plen + tail_len
                    if prepare:
                        props_texts.append(text + batch_tail)
                else:
                    full_plen = bp_len
                    if prepare:
                        props_texts.append(batch.properties_string)
                if full_plen > MAX_PROPERTIES_BYTES:
                    return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, None,
                                            "properties of a batch message exceed 32767 bytes")
                total_all += fixed + blen + full_plen
        if total_all + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "batch larger than a commit-log file")
        mf = self._last_file_for(total_all)
        if mf is None:
            return self._no_file()
        qid = batch.queue_id
        per_topic = self._key_cache.get(topic)
        key = per_topic.get(qid) if per_topic is not None else None
        if key is None:
            key = self._queue_key(topic, qid)
        first_qoff = self.topic_queue_table.get(key, 0)
        mm = mf.mm
        start = mf.wrote_position
        base = mf.file_from_offset
        now = now_ms()
        if _encode_records is not None:
            end, positions = _encode_records(
                mm, start, src, items, batch_props, topic_b, qid, first_qoff, base, sys_flag,
                batch.born_timestamp, born_a, born[1], now, store_a, store[1], batch.reconsume_times,
                batch.prepared_transaction_offset)
        else:
            end, positions = self._encode_batch(mm, start, src, items, batch_props, topic_b, qid, first_qoff, base,
                                                sys_flag, batch, born_a, born[1], now, store_a, store[1])
        n = len(positions)
        mf.wrote_position = mf.committed_position = end
        mf.store_timestamp = now
        self.topic_queue_table[key] = first_qoff + n
        batch.store_timestamp = now
        batch.queue_offset = first_qoff
        batch.commit_log_offset = base + start
        batch.sys_flag = sys_flag
        if prepare:
            prep_off = batch.prepared_transaction_offset
            of = self.tags_code.of
            tags_hash = self.tags_code.tags_hash
            plain = topic != SCHEDULE_TOPIC
            if fields is not None and plain and _dispatch_requests is not None:
                reqs = _dispatch_requests(DispatchRequest, topic, qid, base, positions, end, now, first_qoff,
                                          sys_flag, prep_off, fields)
            else:
                positions.append(end)
                reqs = []
                if fields is not None:
                    for i in range(n):
                        pos = positions[i]
                        props_s, tags, keys, uniq, delay = fields[i]
                        if plain:
                            tags_code = tags_hash(tags) if tags else 0
                        else:
                            tags_code = of(topic, tags, delay, now)
                        reqs.append(DispatchRequest(topic, qid, base + pos, positions[i + 1] - pos, tags_code, now,
                                                    first_qoff + i, keys or "", uniq, sys_flag, prep_off, None, True,
                                                    None, props_s))
                for i in range(n if fields is None else 0):
                    pos = positions[i]
                    props_s = props_texts[i]
                    f = _parse_record(mm, pos) if _parse_record is not None else None
                    if f is not None:
                        if plain:
                            tags = f[16]
                            tags_code = tags_hash(tags) if tags else 0
                        else:
                            tags_code = of(topic, f[16], f[19], now)
                        keys = f[17] or ""
                        uniq = f[18]
                    else:
                        tags_code, keys, uniq = self.dispatch_fields(topic, props_s, now)
                    reqs.append(DispatchRequest(topic, qid, base + pos, positions[i + 1] - pos, tags_code, now,
                                                first_qoff + i, keys, uniq, sys_flag, prep_off, None, True, None,
                                                props_s))
                positions.pop()
            queue.extend(reqs)
        prefix = self._prefix_cache.get(store) or self._msg_id_prefix(store)
        if _msg_ids is not None:
            ids = _msg_ids(prefix, base, positions)
        else:
            ids = ",".join([f"{prefix}{base + p:016X}" for p in positions])
        return PutMessageResult(
            PutMessageStatus.PUT_OK,
            AppendMessageResult(_APPEND_OK, base + start, end - start, ids, now, first_qoff, n),
        )

    @staticmethod
    def _encode_batch(mm, start: int, src: bytes, items, batch_props: bytes, topic_b: bytes, qid: int,
                      first_qoff: int, base: int, sys_flag: int, batch: MessageExtBatch, born_a: bytes,
                      born_port: int, now: int, store_a: bytes, store_port: int) -> tuple[int, list[int]]:
        """Write the records of a batch from ``start``: payloads first, then the headers last to first."""
        hdr = _HEADERS[(len(born_a) == 16, len(store_a) == 16)]
        hsize = hdr.size
        topic_len = len(topic_b)
        tail_props = (PROPERTY_SEPARATOR.encode() + batch_props) if batch_props else b""
        mv = memoryview(src)
        headers = []
        pos = start
        qoff = first_qoff
        crc32 = zlib.crc32
        for bstart, blen, pstart, plen, flag in items:
            p = pos + hsize
            body = mv[bstart : bstart + blen]
            mm[p : p + blen] = body
            p += blen
            mm[p] = topic_len
            mm[p + 1 : p + 1 + topic_len] = topic_b
            p += 1 + topic_len
            if plen:
                full_plen = plen + len(tail_props)
                _I16.pack_into(mm, p, full_plen)
                mm[p + 2 : p + 2 + plen] = mv[pstart : pstart + plen]
                mm[p + 2 + plen : p + 2 + full_plen] = tail_props
            else:
                full_plen = len(batch_props)
                _I16.pack_into(mm, p, full_plen)
                mm[p + 2 : p + 2 + full_plen] = batch_props
            size = p + 2 + full_plen - pos
            headers.append((pos, size, crc32(body) & 0x7FFFFFFF, flag, qoff, blen))
            pos += size
            qoff += 1
        born_ts, reconsume, prepared = batch.born_timestamp, batch.reconsume_times, batch.prepared_transaction_offset
        for hpos, size, crc, flag, q, bl in reversed(headers):
            hdr.pack_into(mm, hpos, size, MESSAGE_MAGIC_CODE, crc, qid, flag, q, base + hpos, sys_flag,
                          born_ts, born_a, born_port, now, store_a, store_port, reconsume, prepared, bl)
        mv.release()
        return pos, [h[0] for h in headers]

    def append_data(self, start_offset: int, data: bytes | memoryview) -> bool:
        """Append raw CommitLog bytes at ``start_offset`` (replication); False unless it is the end."""
        if start_offset != self.get_max_offset():
            return False
        q = self.mapped_file_queue
        mv = memoryview(data)
        offset = start_offset
        while len(mv):
            mf = q.get_last_mapped_file_or_create(offset)
            if mf is None:
                return False
            if mf.file_from_offset + mf.wrote_position != offset:
                log.error("append_data: offset %d does not continue file %s", offset, mf.file_name)
                return False
            n = min(len(mv), mf.remaining())
            if self._warm and mf.wrote_position + n > mf.warmed_to:
                mf.warm_ahead(mf.wrote_position + n)
            mf.append(mv[:n])
            mv = mv[n:]
            offset += n
        return True

    # -- read ---------------------------------------------------------------------

    def get_message(self, offset: int, size: int) -> memoryview | None:
        """``size`` bytes at ``offset`` (one record), or None when not readable."""
        # never fall back to the first file (RocketMQ does for offset 0): the record must be in its own file
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        return mf.select(offset % self.file_size, size)

    def get_data(self, offset: int, return_first_on_not_found: bool = False) -> memoryview | None:
        """Everything readable from ``offset`` to the end of its file."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset, return_first_on_not_found)
        if mf is None:
            return None
        return mf.select(offset % self.file_size)

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        """STORETIMESTAMP of the record at ``offset``; -1 when not readable."""
        if offset < self.get_min_offset():
            return -1
        mv = self.get_message(offset, size)
        if mv is None or len(mv) < 76:
            return -1
        sys_flag = _I32.unpack_from(mv, 36)[0]
        return _I64.unpack_from(mv, 56 if not sys_flag & _BORN_V6 else 68)[0]

    # -- parsing for dispatch and recovery -------------------------------------------

    def check_message_and_return_size(self, mv, pos: int, base_offset: int, check_crc: bool = False,
                                      strict: bool = False) -> DispatchRequest:
        """Parse the record at ``pos`` of ``mv`` (a file view; ``base_offset`` = the file's start).

        Returns a DispatchRequest; ``msg_size`` 0 for BLANK, ``success`` False when
        the bytes are not a valid record. ``strict`` (recovery) also rejects NUL
        bytes in topic/properties, the trace of a record cut short.
        """
        if _parse_record is not None:
            return self._check_compiled(mv, pos, base_offset, check_crc, strict)
        n = len(mv)
        try:
            # the common IPv4/IPv4 layout in one unpack of just the fields dispatch needs
            total, magic, crc, qid, qoff, phys, sys_flag, store_ts, prepared, body_len = _DISPATCH44.unpack_from(
                mv, pos)
        except struct.error:
            if pos + 8 > n:
                return _INVALID
            total, magic = _BLANK.unpack_from(mv, pos)
            return _BLANK_REQ if magic == BLANK_MAGIC_CODE else _INVALID
        if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
            return _BLANK_REQ if magic == BLANK_MAGIC_CODE else _INVALID
        if total < _MIN_RECORD or pos + total > n:
            return _INVALID
        try:
            if sys_flag & (_BORN_V6 | _STORE_V6):
                hdr = _HEADERS[(bool(sys_flag & _BORN_V6), bool(sys_flag & _STORE_V6))]
                f = hdr.unpack_from(mv, pos)
                p = pos + hdr.size
                # TOTAL MAGIC CRC QID FLAG QOFF PHYS SYSFLAG BORNTS BORNADDR BORNPORT STORETS STOREADDR
                # STOREPORT RECONSUME PREPARED BODYLEN
                store_ts, prepared, body_len = f[11], f[15], f[16]
            else:
                p = pos + 88
            end = pos + total
            if body_len < 0 or p + body_len > end:
                return _INVALID
            if check_crc and (zlib.crc32(mv[p : p + body_len]) & 0x7FFFFFFF) != crc:
                log.warning("body CRC mismatch at %d", base_offset + pos)
                return _INVALID
            p += body_len
            if magic == MESSAGE_MAGIC_CODE:
                tlen = mv[p]
                p += 1
            else:
                tlen = _I16.unpack_from(mv, p)[0]
                p += 2
            topic_raw = mv[p : p + tlen]
            p += tlen
            plen = _I16.unpack_from(mv, p)[0] & 0xFFFF
            p += 2
            if p + plen != end or tlen <= 0:
                return _INVALID
            props_raw = mv[p:end]
            if strict and (b"\x00" in topic_raw.tobytes() or b"\x00" in props_raw.tobytes()):
                return _INVALID
            topic = str(topic_raw, "utf-8")
            # never fail on property bytes written elsewhere: dispatch must go on
            props_s = str(props_raw, "utf-8", "replace") if plen else ""
        except (struct.error, IndexError, UnicodeDecodeError):
            return _INVALID
        tags_code, keys, uniq = self.dispatch_fields(topic, props_s, store_ts)
        return DispatchRequest(topic, qid, phys, total, tags_code, store_ts, qoff, keys, uniq, sys_flag, prepared,
                               None, True, None, props_s)

    def _check_compiled(self, mv, pos: int, base_offset: int, check_crc: bool, strict: bool) -> DispatchRequest:
        """check_message_and_return_size with the compiled record parser (same results)."""
        f = _parse_record(mv, pos, strict)
        if f is None:
            return _INVALID
        if f[1] == BLANK_MAGIC_CODE:
            return _BLANK_REQ
        if check_crc:
            b = f[11]
            if (zlib.crc32(mv[b : b + f[12]]) & 0x7FFFFFFF) != f[2]:
                log.warning("body CRC mismatch at %d", base_offset + pos)
                return _INVALID
        plen = f[15]
        if plen:
            ps = f[14]
            props_s = str(mv[ps : ps + plen], "utf-8", "replace")
        else:
            props_s = ""
        topic = f[13]
        store_ts = f[9]
        return DispatchRequest(topic, f[3], f[6], f[0], self.tags_code.of(topic, f[16], f[19], store_ts), store_ts,
                               f[5], f[17] or "", f[18], f[7], f[10], None, True, None, props_s)

    # -- recovery -------------------------------------------------------------------------

    def _walk(self, start_index: int, check_crc: bool, on_record: Callable[[DispatchRequest], None] | None,
              needs_dispatch: Callable[[str, int, int, int, int], bool] | None = None) -> int:
        """Walk records from file ``start_index``; return the offset after the last valid record.

        Every record is validated (lengths, magic, its own offset, optional body
        CRC, no NUL in topic or properties). ``on_record`` receives the records
        ``needs_dispatch(topic, queue_id, offset, size, sys_flag)`` accepts (all
        when it is None). The loop is inlined and allocates nothing per record
        but the topic lookup: it bounds how fast a crashed store comes back.
        """
        files = self.mapped_file_queue.mapped_files
        if on_record is None and speedups.IS_COMPILED:
            return self._walk_compiled(start_index, check_crc)
        index = start_index
        mf = files[index]
        mm = mf.mm
        mv = memoryview(mm)
        n = len(mv)
        base = mf.file_from_offset
        pos = 0
        unpack = _RECOVER44.unpack_from
        crc32 = zlib.crc32
        find = mm.find
        topics: dict[bytes, str] = {}
        magic_v1 = MESSAGE_MAGIC_CODE
        while True:
            try:
                total, magic, crc, qid, phys, sys_flag, body_len = unpack(mv, pos)
            except struct.error:  # fewer than 88 bytes left: only a BLANK record can be there
                magic = _BLANK.unpack_from(mv, pos)[1] if pos + 8 <= n else 0
                total = 0
            if magic == BLANK_MAGIC_CODE:
                index += 1
                if index >= len(files):
                    log.info("recover: last file %s ends with BLANK", mf.file_name)
                    pos = mf.file_size
                    break
                mv.release()
                mf = files[index]
                mm = mf.mm
                mv = memoryview(mm)
                n = len(mv)
                find = mm.find
                base = mf.file_from_offset
                pos = 0
                continue
            if (magic != magic_v1 and magic != MESSAGE_MAGIC_CODE_V2) or total < _MIN_RECORD or pos + total > n:
                break
            p = pos + 88
            if sys_flag & (_BORN_V6 | _STORE_V6):
                hdr = _HEADERS[(bool(sys_flag & _BORN_V6), bool(sys_flag & _STORE_V6))]
                f = hdr.unpack_from(mv, pos)
                p = pos + hdr.size
                body_len = f[16]
            end = pos + total
            if body_len < 0 or p + body_len > end:
                break
            if check_crc and (crc32(mv[p : p + body_len]) & 0x7FFFFFFF) != crc:
                log.warning("body CRC mismatch at %d", base + pos)
                break
            p += body_len
            if magic == magic_v1:
                tlen = mv[p]
                p += 1
            else:
                tlen = _I16.unpack_from(mv, p)[0]
                p += 2
            tstart = p
            p += tlen
            if p + 2 > end:
                break
            plen = _I16.unpack_from(mv, p)[0] & 0xFFFF
            if tlen <= 0 or p + 2 + plen != end or find(b"\x00", tstart, p) >= 0 or (
                    plen and find(b"\x00", p + 2, end) >= 0):
                break
            if phys != base + pos:
                log.warning("record at %d claims another offset; stopping", base + pos)
                break
            raw = mm[tstart:p]
            topic = topics.get(raw)
            if topic is None:
                try:
                    topic = str(raw, "utf-8")
                except UnicodeDecodeError:
                    break
                if len(topics) > 10_000:
                    topics.clear()
                topics[raw] = topic
            if on_record is not None:
                if needs_dispatch is None or needs_dispatch(topic, qid, phys, total, sys_flag):
                    req = self.check_message_and_return_size(mv, pos, base, False)
                    if not req.success:
                        break
                    on_record(req)
            pos = end
        mv.release()
        return base + pos

    def _walk_compiled(self, start_index: int, check_crc: bool) -> int:
        """:meth:`_walk` without a callback, one compiled call per file (speedups.walk_records)."""
        files = self.mapped_file_queue.mapped_files
        walk = speedups.walk_records
        for index in range(start_index, len(files)):
            mf = files[index]
            pos, _count, blank = walk(mf.mm, 0, mf.file_from_offset, check_crc)
            if not blank:
                if pos < mf.file_size:
                    log.info("recover: last valid record of %s ends at %d", mf.file_name, pos)
                return mf.file_from_offset + pos
        log.info("recover: last file %s ends with BLANK", files[-1].file_name)
        return files[-1].file_from_offset + files[-1].file_size

    def _finish_recover(self, process_offset: int) -> None:
        q = self.mapped_file_queue
        if self.prepared:
            self.prepared.clear()  # the log may have been cut: offsets can be written again
        self._zero_tail(process_offset)
        q.flushed_where = q.committed_where = process_offset
        q.truncate_dirty_files(process_offset)
        last = q.get_last_mapped_file()
        if last is not None:
            last.flushed_position = last.wrote_position

    def _zero_tail(self, offset: int) -> None:
        """Zero the garbage after ``offset`` in its file (a torn record), so it never parses later."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return
        start = offset % self.file_size
        limit = min(mf.file_size, start + self.config.maxMessageSize + 64 * 1024 + 4096)
        mm = mf.mm
        p = start
        zero_page = bytes(4096)
        while p < limit:
            e = min(limit, (p // 4096 + 1) * 4096)
            if mm[p:e].count(0) != e - p:
                mm[p:e] = zero_page[: e - p]
            elif p > start and e - p == 4096:
                break  # a whole zero page: past the garbage
            p = e

    def recover_normally(self, max_phy_offset_of_cq: int, truncate_cq: Callable[[int], None],
                         destroy_cq: Callable[[], None]) -> int:
        """Normal recovery: check the last 3 files; cut after the last valid record. Returns the end offset."""
        files = self.mapped_file_queue.mapped_files
        if not files:
            self.mapped_file_queue.flushed_where = self.mapped_file_queue.committed_where = 0
            destroy_cq()
            return 0
        start = max(0, len(files) - 3)
        process_offset = self._walk(start, self.config.checkCRCOnRecover, None)
        self._finish_recover(process_offset)
        if max_phy_offset_of_cq > process_offset:
            log.warning("consume queues point past the commit log end %d: truncating", process_offset)
            truncate_cq(process_offset)
        return process_offset

    def _matched_recover_start(self, mf: MappedFile, min_timestamp: int) -> bool:
        mv = mf.mm
        magic = _I32.unpack_from(mv, 4)[0]
        if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
            return False
        sys_flag = _I32.unpack_from(mv, 36)[0]
        store_ts = _I64.unpack_from(mv, 68 if sys_flag & _BORN_V6 else 56)[0]
        return store_ts != 0 and store_ts <= min_timestamp

    def recover_abnormally(self, max_phy_offset_of_cq: int, min_timestamp: int,
                           dispatch: Callable[[DispatchRequest], None],
                           truncate_cq: Callable[[int], None], destroy_cq: Callable[[], None],
                           needs_dispatch: Callable[[str, int, int, int, int], bool] | None = None) -> int:
        """Abnormal recovery: re-dispatch every valid record from the last file older than the checkpoint."""
        files = self.mapped_file_queue.mapped_files
        if not files:
            self.mapped_file_queue.flushed_where = self.mapped_file_queue.committed_where = 0
            destroy_cq()
            return 0
        start = 0
        for i in range(len(files) - 1, -1, -1):
            if self._matched_recover_start(files[i], min_timestamp):
                start = i
                log.info("abnormal recovery starts at %s", files[i].file_name)
                break
        process_offset = self._walk(start, self.config.checkCRCOnRecover, dispatch, needs_dispatch)
        self._finish_recover(process_offset)
        if max_phy_offset_of_cq > process_offset:
            log.warning("consume queues point past the commit log end %d: truncating", process_offset)
            truncate_cq(process_offset)
        return process_offset

    # -- flush / delete ----------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> bool:
        return self.mapped_file_queue.flush(least_pages)

    def delete_expired_file(self, expired_ms: int, delete_interval_ms: int, interval_forcibly_ms: int,
                            clean_immediately: bool) -> int:
        return self.mapped_file_queue.delete_expired_file_by_time(
            expired_ms, delete_interval_ms, interval_forcibly_ms, clean_immediately)


# the compiled batch splitter when built (same results as CommitLog._split_batch)
_split_batch = speedups.split_batch if speedups.IS_COMPILED else CommitLog._split_batch

"""RocketMQ message model (spec message-and-store-format.md §2-§5).

Pure functions and small slotted classes, no I/O. The record bytes themselves are
read and written by :mod:`common.record_codec`; :func:`decode_message` turns a record
into a :class:`MessageExt` for whoever reads one (pull consumers, admin tools, the
store's lookups).
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from common import record_codec, speedups
from common.errors import RecordDecodeError
from common.record_codec import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2
from common.util import tags_code

__all__ = [
    "MessageConst",
    "MessageSysFlag",
    "MESSAGE_MAGIC_CODE",
    "MESSAGE_MAGIC_CODE_V2",
    "BLANK_MAGIC_CODE",
    "NAME_VALUE_SEPARATOR",
    "PROPERTY_SEPARATOR",
    "properties_to_string",
    "string_to_properties",
    "MessageExt",
    "MessageDecodeError",
    "decode_message",
    "decode_messages",
    "BatchEntry",
    "encode_batch_body",
    "decode_batch_body",
    "create_offset_msg_id",
    "decode_offset_msg_id",
    "host_to_bytes",
    "bytes_to_host",
    "is_ipv6_host",
    "body_crc",
    "MessageExtBrokerInner",
    "MessageExtBatch",
]

NAME_VALUE_SEPARATOR = "\x01"
PROPERTY_SEPARATOR = "\x02"


class MessageConst:
    """Property keys (RocketMQ MessageConst, 4.9.7 plus the 5.x ones the spec lists)."""

    KEYS = "KEYS"
    TAGS = "TAGS"
    WAIT = "WAIT"
    WAIT_STORE_MSG_OK = "WAIT"
    DELAY = "DELAY"
    DELAY_TIME_LEVEL = "DELAY"
    RETRY_TOPIC = "RETRY_TOPIC"
    REAL_TOPIC = "REAL_TOPIC"
    REAL_QID = "REAL_QID"
    REAL_QUEUE_ID = "REAL_QID"
    TRANSACTION_PREPARED = "TRAN_MSG"
    PRODUCER_GROUP = "PGROUP"
    MIN_OFFSET = "MIN_OFFSET"
    MAX_OFFSET = "MAX_OFFSET"
    BUYER_ID = "BUYER_ID"
    ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
    TRANSFER_FLAG = "TRANSFER_FLAG"
    CORRECTION_FLAG = "CORRECTION_FLAG"
    MQ2_FLAG = "MQ2_FLAG"
    RECONSUME_TIME = "RECONSUME_TIME"
    MSG_REGION = "MSG_REGION"
    TRACE_SWITCH = "TRACE_ON"
    UNIQ_KEY = "UNIQ_KEY"
    UNIQ_CLIENT_MESSAGE_ID_KEYIDX = "UNIQ_KEY"
    MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
    CONSUME_START_TIMESTAMP = "CONSUME_START_TIME"
    CONSUME_START_TIME = "CONSUME_START_TIME"
    TRANSACTION_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
    TRAN_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
    TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    INSTANCE_ID = "INSTANCE_ID"
    CORRELATION_ID = "CORRELATION_ID"
    MESSAGE_REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
    REPLY_TO_CLIENT = "REPLY_TO_CLIENT"
    MESSAGE_TTL = "TTL"
    TTL = "TTL"
    REPLY_MESSAGE_ARRIVE_TIME = "ARRIVE_TIME"
    ARRIVE_TIME = "ARRIVE_TIME"
    PUSH_REPLY_TIME = "PUSH_REPLY_TIME"
    CLUSTER = "CLUSTER"
    MESSAGE_TYPE = "MSG_TYPE"
    MSG_TYPE = "MSG_TYPE"
    INNER_MULTI_DISPATCH = "INNER_MULTI_DISPATCH"
    INNER_MULTI_QUEUE_OFFSET = "INNER_MULTI_QUEUE_OFFSET"
    # 5.x
    TRANSACTION_ID = "__transactionId__"
    POP_CK = "POP_CK"
    POP_CK_OFFSET = "POP_CK_OFFSET"
    FIRST_POP_TIME = "1ST_POP_TIME"
    SHARDING_KEY = "__SHARDINGKEY"
    TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
    TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
    TIMER_ENQUEUE_MS = "TIMER_ENQUEUE_MS"
    TIMER_DEQUEUE_MS = "TIMER_DEQUEUE_MS"
    TIMER_ROLL_TIMES = "TIMER_ROLL_TIMES"
    TIMER_OUT_MS = "TIMER_OUT_MS"
    TIMER_DEL_UNIQKEY = "TIMER_DEL_UNIQKEY"
    TIMER_DELAY_LEVEL = "TIMER_DELAY_LEVEL"
    TIMER_DELAY_MS = "TIMER_DELAY_MS"
    BORN_HOST = "__BORNHOST"
    BORN_TIMESTAMP = "BORN_TIMESTAMP"
    DLQ_ORIGIN_TOPIC = "DLQ_ORIGIN_TOPIC"
    DLQ_ORIGIN_MESSAGE_ID = "DLQ_ORIGIN_MESSAGE_ID"
    TRACE_CONTEXT = "TRACE_CONTEXT"
    INNER_NUM = "INNER_NUM"
    INNER_BASE = "INNER_BASE"
    CRC32 = "__CRC32#"
    TRANSIENT_PREFIX = "__RMQ.TRANSIENT."

    KEY_SEPARATOR = " "


class MessageSysFlag:
    """Bits of the record's SYSFLAG (spec §3)."""

    COMPRESSED = 0x1
    MULTI_TAGS = 0x2
    TRANSACTION_NOT_TYPE = 0
    TRANSACTION_PREPARED_TYPE = 0x4
    TRANSACTION_COMMIT_TYPE = 0x8
    TRANSACTION_ROLLBACK_TYPE = 0xC
    TRANSACTION_MASK = 0xC
    BORNHOST_V6 = 0x10
    STOREHOSTADDRESS_V6 = 0x20
    NEED_UNWRAP = 0x40
    INNER_BATCH = 0x80
    COMPRESSION_TYPE_MASK = 0x700
    COMPRESSION_LZ4 = 0x100
    COMPRESSION_ZSTD = 0x200
    COMPRESSION_ZLIB = 0x300

    @staticmethod
    def get_transaction_value(flag: int) -> int:
        """The transaction type bits of ``flag`` (one of the TRANSACTION_*_TYPE values)."""
        return flag & 0xC

    @staticmethod
    def reset_transaction_value(flag: int, type_: int) -> int:
        """``flag`` with its transaction type replaced by ``type_``."""
        return (flag & ~0xC) | type_

    @staticmethod
    def clear_compressed_flag(flag: int) -> int:
        return flag & ~0x1


# --------------------------------------------------------------------------
# Properties string


#: ``k\x01v\x02k\x01v`` without a trailing separator; None values skipped.
properties_to_string = record_codec.properties_to_string
#: Parse a properties string the way RocketMQ does (entries need a non-empty key and value); the
#: compiled twin where built (every single send parses its properties: 1.3 µs in Python).
string_to_properties = speedups.parse_properties


# --------------------------------------------------------------------------
# Hosts and message ids


def is_ipv6_host(host: tuple[str, int]) -> bool:
    return ":" in host[0]


def host_to_bytes(host: tuple[str, int]) -> bytes:
    """Address bytes (4 or 16) of a host tuple, without the port."""
    addr = host[0]
    if ":" in addr:
        return socket.inet_pton(socket.AF_INET6, addr.strip("[]"))
    return socket.inet_aton(addr)


def bytes_to_host(addr: bytes | memoryview, port: int) -> tuple[str, int]:
    if len(addr) == 4:
        return (socket.inet_ntoa(bytes(addr)), port)
    return (ipaddress.IPv6Address(bytes(addr)).compressed, port)


def create_offset_msg_id(host: tuple[str, int], phys_offset: int) -> str:
    """Offset message id: address ‖ int32 port ‖ int64 offset, upper-case hex (spec §5.1)."""
    return (host_to_bytes(host) + struct.pack(">iq", host[1], phys_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[tuple[str, int], int]:
    """Inverse of :func:`create_offset_msg_id`; ValueError for a malformed id."""
    if len(msg_id) not in (32, 56):
        raise ValueError(f"bad offset msgId length {len(msg_id)}: {msg_id!r}")
    raw = bytes.fromhex(msg_id)
    alen = 4 if len(raw) == 16 else 16
    port, off = struct.unpack_from(">iq", raw, alen)
    return bytes_to_host(raw[:alen], port), off


def body_crc(body: bytes | memoryview) -> int:
    """BODYCRC as stored: CRC32 & 0x7FFFFFFF."""
    return zlib.crc32(body) & 0x7FFFFFFF


# --------------------------------------------------------------------------
# Decoded record


#: The name this module has always raised; the one record-decode error of the project.
MessageDecodeError = RecordDecodeError


@dataclass(slots=True)
class MessageExt:
    """A decoded CommitLog record."""

    topic: str = ""
    queue_id: int = 0
    flag: int = 0
    queue_offset: int = 0
    commit_log_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[str, int] = ("0.0.0.0", 0)
    store_timestamp: int = 0
    store_host: tuple[str, int] = ("0.0.0.0", 0)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    body: bytes = b""
    properties: dict[str, str] = field(default_factory=dict)
    body_crc: int = 0
    store_size: int = 0
    magic: int = MESSAGE_MAGIC_CODE
    properties_string: str = ""

    @property
    def msg_id(self) -> str:
        """Offset message id (store host + commit-log offset)."""
        return create_offset_msg_id(self.store_host, self.commit_log_offset)

    @property
    def tags(self) -> str | None:
        return self.properties.get(MessageConst.TAGS)

    @property
    def keys(self) -> str | None:
        return self.properties.get(MessageConst.KEYS)

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(MessageConst.UNIQ_KEY)


_I16 = struct.Struct(">h")


def decode_message(buf, offset: int = 0, *, read_body: bool = True) -> MessageExt:
    """Decode one record starting at ``offset`` of ``buf`` (bytes, bytearray, memoryview, mmap).

    Accepts v1 and v2 (5.x long-topic) magic. Raises MessageDecodeError when
    the magic or the lengths do not make a record. The body is returned as
    stored (still compressed when COMPRESSED is set).
    """
    try:
        (total, magic, crc, qid, flag, qoff, poff, sysflag, born_ts, born_a, born_port, store_ts, store_a, store_port,
         reconsume, prepared, body_start, body_len, topic, props_start, plen) = record_codec.decode_record(buf, offset)
    except RecordDecodeError as e:
        raise MessageDecodeError(f"{e} at {offset}") from None
    mv = memoryview(buf)
    try:
        props_str = str(mv[props_start : props_start + plen], "utf-8") if plen else ""
    except UnicodeDecodeError:
        raise MessageDecodeError(f"properties not UTF-8 at {offset}") from None
    return MessageExt(
        topic=topic,
        queue_id=qid,
        flag=flag,
        queue_offset=qoff,
        commit_log_offset=poff,
        sys_flag=sysflag,
        born_timestamp=born_ts,
        born_host=bytes_to_host(born_a, born_port),
        store_timestamp=store_ts,
        store_host=bytes_to_host(store_a, store_port),
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
        body=bytes(mv[body_start : body_start + body_len]) if read_body else b"",
        properties=string_to_properties(props_str),
        body_crc=crc,
        store_size=total,
        magic=magic,
        properties_string=props_str,
    )


def decode_messages(buf, *, read_body: bool = True) -> list[MessageExt]:
    """Decode concatenated records (e.g. a pull response body)."""
    out: list[MessageExt] = []
    mv = memoryview(buf)
    pos = 0
    n = len(mv)
    while pos + 8 <= n:
        m = decode_message(mv, pos, read_body=read_body)
        out.append(m)
        pos += m.store_size
    return out


# --------------------------------------------------------------------------
# Client batch body (remoting-protocol.md §13.3)


@dataclass(slots=True)
class BatchEntry:
    """One message of a client batch body."""

    body: bytes
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    properties_string: str = ""


_BATCH_HEAD = struct.Struct(">iiiii")  # totalSize magic bodyCRC flag bodyLen


def encode_batch_body(messages: Iterable) -> bytes:
    """Encode messages (objects with ``body``, ``flag``, ``properties``) as a client batch body."""
    parts: list[bytes] = []
    for m in messages:
        props = getattr(m, "properties", None) or {}
        pbytes = properties_to_string(props).encode("utf-8")
        body = bytes(m.body)
        total = 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(pbytes)
        parts.append(_BATCH_HEAD.pack(total, 0, 0, getattr(m, "flag", 0) or 0, len(body)))
        parts.append(body)
        parts.append(_I16.pack(len(pbytes)))
        parts.append(pbytes)
    return b"".join(parts)


def decode_batch_body(body: bytes | memoryview) -> list[BatchEntry]:
    """Split a client batch body; MessageDecodeError when it is malformed."""
    items = record_codec.split_batch(body)
    if isinstance(items, str):
        raise MessageDecodeError(items)
    mv = memoryview(body)
    out: list[BatchEntry] = []
    for bstart, blen, pstart, plen, flag in items:
        try:
            ps = str(mv[pstart : pstart + plen], "utf-8")
        except UnicodeDecodeError as e:
            raise MessageDecodeError(f"batch properties not UTF-8 at {bstart - 20}") from e
        out.append(BatchEntry(body=bytes(mv[bstart : bstart + blen]), flag=flag, properties=string_to_properties(ps),
                              properties_string=ps))
    return out


# --------------------------------------------------------------------------
# What the broker hands to the store


@dataclass(slots=True)
class MessageExtBrokerInner:
    """A message about to be appended (the broker fills it; the store stamps offsets and time)."""

    topic: str = ""
    queue_id: int = 0
    flag: int = 0
    body: bytes = b""
    properties: dict[str, str] = field(default_factory=dict)
    properties_string: str = ""
    tags_code: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: tuple[str, int] = ("127.0.0.1", 0)
    # None: the store fills in its own address (DefaultMessageStore(store_host=...))
    store_host: tuple[str, int] | None = None
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    # filled by the store
    store_timestamp: int = 0
    queue_offset: int = 0
    commit_log_offset: int = 0
    body_crc: int = -1

    def properties_bytes(self) -> bytes:
        """The stored properties (``properties_string``, or the map serialized when it is empty)."""
        s = self.properties_string
        if not s and self.properties:
            s = properties_to_string(self.properties)
            self.properties_string = s
        return s.encode("utf-8")

    def get_property(self, key: str) -> str | None:
        return self.properties.get(key)

    @classmethod
    def from_ext(
        cls, ext: MessageExt, *, topic: str, queue_id: int, properties: dict[str, str], properties_string: str,
        sys_flag: int | None = None, reconsume_times: int | None = None, prepared_transaction_offset: int = 0,
    ) -> MessageExtBrokerInner:
        """A message to store made from a stored one, as RocketMQ's broker copies them (send-back,
        transactions, schedule delivery): the stored message's flag, body, born time and hosts, and
        (unless given) its sysFlag and reconsume count; the given topic, queue and properties, whose
        TAGS give the tag code."""
        return cls(
            topic=topic,
            queue_id=queue_id,
            flag=ext.flag,
            body=ext.body,
            properties=properties,
            properties_string=properties_string,
            tags_code=tags_code(properties.get(MessageConst.TAGS)),
            sys_flag=ext.sys_flag if sys_flag is None else sys_flag,
            born_timestamp=ext.born_timestamp,
            born_host=ext.born_host,
            store_host=ext.store_host,
            reconsume_times=ext.reconsume_times if reconsume_times is None else reconsume_times,
            prepared_transaction_offset=prepared_transaction_offset,
        )


@dataclass(slots=True)
class MessageExtBatch(MessageExtBrokerInner):
    """A client batch: ``body`` is the batch-encoded body; the store writes one record per entry."""

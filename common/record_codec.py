"""The CommitLog record codec: encode, parse and walk records, split client batches, read properties.

One pure-Python module, sans-IO (buffers in, tuples and positions out), for RocketMQ 4.9's
record (MESSAGE_MAGIC_CODE v1, and the 5.x v2 with a 2-byte topic length; spec
message-and-store-format.md §2-§4) and the client batch body (remoting-protocol.md §13.3).
It is the pure twin of the compiled ``common/_speedups.c``: :mod:`common.speedups` takes its
record functions from here, and everything else that reads or writes a record (the message
model's decoder, the CommitLog, the SQL92 filter, mqstore) goes through this module or through
:mod:`common.speedups`. It lives in common/ because the client decodes pull results too.

Record layout (big-endian; host addresses 4 bytes, or 16 when sysFlag bit 0x10 / 0x20 is set)::

    TOTALSIZE i32  MAGIC i32  BODYCRC i32  QUEUEID i32  FLAG i32  QUEUEOFFSET i64
    PHYSICALOFFSET i64  SYSFLAG i32  BORNTIMESTAMP i64  BORNHOST addr+i32
    STORETIMESTAMP i64  STOREHOST addr+i32  RECONSUMETIMES i32  PREPAREDOFFSET i64
    BODYLENGTH i32  BODY  TOPICLENGTH i8 (v2: i16)  TOPIC  PROPERTIESLENGTH u16  PROPERTIES
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping

from common.errors import RecordDecodeError

__all__ = [
    "MESSAGE_MAGIC_CODE",
    "MESSAGE_MAGIC_CODE_V2",
    "BLANK_MAGIC_CODE",
    "BORNHOST_V6",
    "STOREHOSTADDRESS_V6",
    "MIN_RECORD_SIZE",
    "MAX_TOPIC_BYTES",
    "MAX_PROPERTIES_BYTES",
    "HEADERS",
    "RECORD_V1",  # noqa: F822 - built on first access (module __getattr__)
    "RECORD_V2",  # noqa: F822
    "BLANK_HEAD",
    "RecordTuple",
    "DecodedRecord",
    "record_length",
    "find_property",
    "parse_properties",
    "properties_to_string",
    "dispatch_props",
    "batch_properties",
    "split_batch",
    "parse_record",
    "walk_records",
    "decode_record",
    "store_timestamp_at",
    "encode_records",
    "write_record",
]

MESSAGE_MAGIC_CODE = -626843481  # 0xDAA320A7, record format v1
MESSAGE_MAGIC_CODE_V2 = -626843477  # 0xDAA320AB, 5.x: int16 topic length
BLANK_MAGIC_CODE = -875286124  # 0xCBD43194, end-of-file filler
BORNHOST_V6 = 0x10
STOREHOSTADDRESS_V6 = 0x20
MIN_RECORD_SIZE = 91  # every fixed field with IPv4 hosts, empty body, topic and properties
MAX_TOPIC_BYTES = 127
MAX_PROPERTIES_BYTES = 32767

# (total_size, magic, body_crc, queue_id, flag, queue_offset, phys_offset, sys_flag, born_ts, store_ts,
#  prepared_tx_offset, body_start, body_len, topic, properties_start, properties_len,
#  tags, keys, uniq_key, delay)
RecordTuple = tuple[int, int, int, int, int, int, int, int, int, int, int, int, int, str, int, int,
                    str | None, str | None, str | None, str | None]

# (total_size, magic, body_crc, queue_id, flag, queue_offset, phys_offset, sys_flag, born_ts,
#  born_addr, born_port, store_ts, store_addr, store_port, reconsume_times, prepared_tx_offset,
#  body_start, body_len, topic, properties_start, properties_len)
DecodedRecord = tuple[int, int, int, int, int, int, int, int, int, bytes, int, int, bytes, int, int, int,
                      int, int, str, int, int]

# everything up to BODYLENGTH in one unpack, by (born address length, store address length)
_HDR_FMT = ">iiiiiqqiq{}siq{}siiqi"
HEADERS = {(b, s): struct.Struct(_HDR_FMT.format(b, s)) for b in (4, 16) for s in (4, 16)}
_HEAD = struct.Struct(">iiiiiqqiq")  # TOTAL MAGIC CRC QID FLAG QOFF PHYS SYSFLAG BORNTS
_HEAD_SIZE = _HEAD.size  # 48, then the born host
BLANK_HEAD = struct.Struct(">ii")  # TOTALSIZE MAGIC: all a BLANK record has
_TAIL = struct.Struct(">iqi")  # RECONSUMETIMES PREPAREDOFFSET BODYLENGTH
_BATCH_HEAD = struct.Struct(">iiiii")  # client batch entry: totalSize magic bodyCRC flag bodyLen
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


# -- the record, declared once with construct (documentation + cross-check) ---------------------------------
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
            "bornHost" / host(BORNHOST_V6),
            "storeTimestamp" / cs.Int64sb,
            "storeHost" / host(STOREHOSTADDRESS_V6),
            "reconsumeTimes" / cs.Int32sb,
            "preparedTransactionOffset" / cs.Int64sb,
            "body" / cs.Prefixed(cs.Int32sb, cs.GreedyBytes),
            "topic" / cs.PascalString(topic_len, "utf8"),
            "properties" / cs.Prefixed(cs.Int16ub, cs.GreedyBytes),
        )

    _LAYOUTS["RECORD_V1"] = record(cs.Int8ub)  # magic 0xDAA320A7: 1-byte topic length
    _LAYOUTS["RECORD_V2"] = record(cs.Int16sb)  # magic 0xDAA320AB (5.x): 2-byte topic length


def __getattr__(name: str):
    """``RECORD_V1`` / ``RECORD_V2``: the record as construct Structs, built on first access."""
    if name in ("RECORD_V1", "RECORD_V2"):
        if not _LAYOUTS:
            _build_layouts()
        return _LAYOUTS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def record_length(body_len: int, topic_len: int, props_len: int, born_v6: bool = False, store_v6: bool = False) -> int:
    """TOTALSIZE of a v1 record."""
    return MIN_RECORD_SIZE + body_len + topic_len + props_len + (12 if born_v6 else 0) + (12 if store_v6 else 0)


# -- properties ------------------------------------------------------------------------------------


def find_property(s: str, name: str) -> str | None:
    """The value of property ``name`` (given as ``"NAME\\x01"``) in a properties string, without
    parsing the rest; same result as ``parse_properties(s).get(NAME)`` (last entry wins, an empty
    value counts as absent)."""
    i = s.rfind(name)
    while i > 0 and s[i - 1] != "\x02":
        i = s.rfind(name, 0, i)
    if i < 0:
        return None
    j = s.find("\x02", i)
    v = s[i + len(name) : j] if j >= 0 else s[i + len(name) :]
    return v or None


def parse_properties(text: str | None) -> dict[str, str]:
    """MessageDecoder.string2messageProperties: ``k\\x01v`` entries split by ``\\x02``.

    An entry is kept only with a non-empty key and a non-empty value (its first ``\\x01``
    neither first nor last); later duplicates win.
    """
    out: dict[str, str] = {}
    if text is None:
        return out
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")
    for item in text.split("\x02"):
        k, _sep, v = item.partition("\x01")
        if k and v:
            out[k] = v
    return out


def properties_to_string(props: Mapping[str, str] | None) -> str:
    """``k\\x01v\\x02k\\x01v`` without a trailing separator; None values skipped."""
    if not props:
        return ""
    return "\x02".join(f"{k}\x01{v}" for k, v in props.items() if v is not None)


_NO_DISPATCH = (None, None, None, None)


def dispatch_props(properties: str) -> tuple[str | None, str | None, str | None, str | None] | None:
    """``(TAGS, KEYS, UNIQ_KEY, DELAY)`` of a stored properties string (see speedups.Speedups);
    None when it contains NUL. TypeError for a non-str."""
    if not isinstance(properties, str):
        raise TypeError(f"expected str, got {type(properties).__name__}")
    if not properties:
        return _NO_DISPATCH
    if "\x00" in properties:
        return None
    return (find_property(properties, "TAGS\x01"), find_property(properties, "KEYS\x01"),
            find_property(properties, "UNIQ_KEY\x01"), find_property(properties, "DELAY\x01"))


def batch_properties(src, items, batch_props: bytes):
    """The stored properties text and dispatch fields of each entry of a client batch, with the
    variable bytes of the whole batch; or the first entry's refusal (see speedups.Speedups)."""
    mv = memoryview(src)
    out = []
    var_bytes = 0
    tail = (b"\x02" + bytes(batch_props)) if batch_props else b""
    try:
        for bstart, blen, pstart, plen, _flag in items:
            if bstart < 0 or blen < 0 or bstart > len(mv) - blen or pstart < 0 or plen < 0 or pstart > len(mv) - plen:
                raise IndexError("item outside src")
            if plen:
                own = bytes(mv[pstart : pstart + plen])
                if b"\x00" in own:
                    return 1, "batch properties contain NUL"
                full = own + tail
            else:
                full = bytes(batch_props)
            try:
                text = full.decode("utf-8")
            except UnicodeDecodeError:
                return 1, "batch properties not UTF-8"
            if len(full) > MAX_PROPERTIES_BYTES:
                return 2, "properties of a batch message exceed 32767 bytes"
            fields = dispatch_props(text)
            if fields is None:
                return 1, "properties contain NUL"
            out.append((text, *fields))
            var_bytes += blen + len(full)
    finally:
        mv.release()
    return out, var_bytes


# -- client batch bodies -----------------------------------------------------------------------------


def split_batch(body: bytes) -> list[tuple[int, int, int, int, int]] | str:
    """The entries of a client batch body as ``(body_start, body_len, properties_start,
    properties_len, flag)``, or the text of the first problem."""
    n = len(body)
    out = []
    pos = 0
    unpack = _BATCH_HEAD.unpack_from
    while pos < n:
        if pos + 22 > n:
            return f"truncated batch entry at {pos}"
        total, _magic, _crc, flag, blen = unpack(body, pos)
        p = pos + 20
        if blen < 0 or p + blen + 2 > n:
            return f"bad body length in batch entry at {pos}"
        bstart = p
        p += blen
        plen = _U16.unpack_from(body, p)[0]
        p += 2
        if p + plen > n or total != p + plen - pos:
            return f"bad size in batch entry at {pos}"
        out.append((bstart, blen, p, plen, flag))
        pos = p + plen
    return out


# -- reading records -----------------------------------------------------------------------------------


def _blank(total: int) -> RecordTuple:
    return (total, BLANK_MAGIC_CODE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "", 0, 0, None, None, None, None)


def parse_record(buf, pos: int, strict: bool = False) -> RecordTuple | None:
    """The record at ``pos`` of ``buf`` (a CommitLog file view), as the reput's DispatchRequest needs it.

    Returns None when the bytes at ``pos`` are not a valid record (too short, wrong
    magic, sizes that do not add up, a topic that is empty or not UTF-8; with ``strict``,
    as recovery wants, also a NUL byte in topic or properties). Raises IndexError when
    ``pos`` is outside ``0..len(buf)``. Otherwise a 20-tuple::

        0 total_size   1 magic       2 body_crc    3 queue_id     4 flag
        5 queue_offset 6 phys_offset 7 sys_flag    8 born_ts      9 store_ts
        10 prepared_tx_offset        11 body_start 12 body_len    13 topic (str)
        14 properties_start          15 properties_len
        16 tags  17 keys  18 uniq_key  19 delay    (str, or None when absent or empty)

    Offsets (body_start, properties_start) are absolute positions in ``buf``. The
    property values are those of ``parse_properties(props).get(NAME)`` with the
    properties decoded as UTF-8 with replacement (last entry wins). A BLANK record
    (end of file; only its 8-byte head is needed) gives ``(total_size, BLANK_MAGIC_CODE,
    0, ..., 0, "", 0, 0, None, None, None, None)``.
    """
    if isinstance(buf, str):
        raise TypeError("a bytes-like object is required, not 'str'")
    n = len(buf)
    if pos < 0 or pos > n:
        raise IndexError("record position outside the buffer")
    if pos + _HEAD_SIZE + 40 > n:  # shorter than the smallest header: only a BLANK head fits
        if pos + 8 > n:
            return None
        total, magic = BLANK_HEAD.unpack_from(buf, pos)
        return _blank(total) if magic == BLANK_MAGIC_CODE else None
    total, magic, crc, qid, flag, qoff, phys, sys_flag, born_ts = _HEAD.unpack_from(buf, pos)
    if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
        return _blank(total) if magic == BLANK_MAGIC_CODE else None
    if total < MIN_RECORD_SIZE or pos + total > n:
        return None
    p = pos + _HEAD_SIZE + (20 if sys_flag & BORNHOST_V6 else 8)
    if p + 8 > n:
        return None
    store_ts = _I64.unpack_from(buf, p)[0]
    p += 8 + (20 if sys_flag & STOREHOSTADDRESS_V6 else 8)
    if p + 16 > n:
        return None
    _reconsume, prepared, body_len = _TAIL.unpack_from(buf, p)
    p += 16
    end = pos + total
    if body_len < 0 or p + body_len > end:
        return None
    body_start = p
    p += body_len
    if magic == MESSAGE_MAGIC_CODE:
        if p + 1 > end:
            return None
        tlen = buf[p]
        p += 1
    else:
        if p + 2 > end:
            return None
        tlen = _I16.unpack_from(buf, p)[0]
        p += 2
    if tlen <= 0 or p + tlen + 2 > end:
        return None
    topic_raw = bytes(buf[p : p + tlen])
    p += tlen
    plen = _U16.unpack_from(buf, p)[0]
    p += 2
    if p + plen != end:
        return None
    props_raw = bytes(buf[p:end])
    if strict and (b"\x00" in topic_raw or b"\x00" in props_raw):
        return None
    try:
        topic = topic_raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    tags = keys = uniq = delay = None
    if plen:
        s = props_raw.decode("utf-8", "replace")
        tags = find_property(s, "TAGS\x01")
        keys = find_property(s, "KEYS\x01")
        uniq = find_property(s, "UNIQ_KEY\x01")
        delay = find_property(s, "DELAY\x01")
    return (total, magic, crc, qid, flag, qoff, phys, sys_flag, born_ts, store_ts, prepared,
            body_start, body_len, topic, p, plen, tags, keys, uniq, delay)


def walk_records(buf, pos: int, base_offset: int, check_crc: bool) -> tuple[int, int, bool]:
    """Recovery's check of one CommitLog file: walk its records from ``pos``.

    A record passes when ``parse_record(buf, p, strict=True)`` accepts it, its
    PHYSICALOFFSET is ``base_offset + p`` and, with ``check_crc``, its BODYCRC is the
    body's ``zlib.crc32 & 0x7FFFFFFF``. Returns ``(end, count, blank)``: the position of
    the first record that does not pass, how many passed, and whether a BLANK head
    (the end-of-file filler) is what stopped the walk. IndexError for ``pos`` outside
    ``0..len(buf)``.
    """
    n = len(buf)
    if pos < 0 or pos > n:
        raise IndexError("record position outside the buffer")
    count = 0
    crc32 = zlib.crc32
    while True:
        r = parse_record(buf, pos, True)
        if r is None:
            return pos, count, False
        if r[1] == BLANK_MAGIC_CODE:
            return pos, count, True
        if r[6] != base_offset + pos:
            return pos, count, False
        if check_crc and (crc32(buf[r[11] : r[11] + r[12]]) & 0x7FFFFFFF) != r[2]:
            return pos, count, False
        count += 1
        pos += r[0]


def decode_record(buf, pos: int = 0) -> DecodedRecord:
    """Every field of the MESSAGE record at ``pos`` of ``buf``, for readers that want all of them
    (the message model, mqstore); RecordDecodeError, whose text says what is wrong (without the
    position), when the bytes are not one.

    Host addresses come as their 4 or 16 raw bytes; body and properties as positions in ``buf``
    (the caller decodes the properties). v1 and v2 magic; an empty topic is read as such.
    """
    n = len(buf)
    if pos + 8 > n:
        raise RecordDecodeError("truncated record header")
    total, magic = BLANK_HEAD.unpack_from(buf, pos)
    if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
        raise RecordDecodeError(f"bad magic 0x{magic & 0xFFFFFFFF:08X}")
    if total < MIN_RECORD_SIZE or pos + total > n:
        raise RecordDecodeError(f"bad total size {total}")
    end = pos + total
    sys_flag = _I32.unpack_from(buf, pos + 36)[0]
    hdr = HEADERS[(16 if sys_flag & BORNHOST_V6 else 4, 16 if sys_flag & STOREHOSTADDRESS_V6 else 4)]
    if pos + hdr.size > end:
        raise RecordDecodeError(f"bad total size {total}")
    f = hdr.unpack_from(buf, pos)
    body_len = f[16]
    p = pos + hdr.size
    if body_len < 0 or p + body_len > end:
        raise RecordDecodeError(f"bad body length {body_len}")
    body_start = p
    p += body_len
    if magic == MESSAGE_MAGIC_CODE:
        if p + 1 > end:
            raise RecordDecodeError("record lengths do not add up")
        tlen = buf[p]
        p += 1
    else:
        if p + 2 > end:
            raise RecordDecodeError("record lengths do not add up")
        tlen = _I16.unpack_from(buf, p)[0]
        p += 2
    if tlen < 0 or p + tlen + 2 > end:
        raise RecordDecodeError("record lengths do not add up")
    try:
        topic = str(buf[p : p + tlen], "utf-8")
    except UnicodeDecodeError:
        raise RecordDecodeError("topic is not UTF-8") from None
    p += tlen
    plen = _U16.unpack_from(buf, p)[0]
    p += 2
    if p + plen != end:
        raise RecordDecodeError("record lengths do not add up")
    return (*f[:16], body_start, body_len, topic, p, plen)  # type: ignore[return-value]


def store_timestamp_at(buf, pos: int = 0) -> int:
    """STORETIMESTAMP of the record at ``pos`` (after a 4- or 16-byte born address, by its sysFlag);
    struct.error when the buffer is too short for it."""
    sys_flag = _I32.unpack_from(buf, pos + 36)[0]
    return _I64.unpack_from(buf, pos + (68 if sys_flag & BORNHOST_V6 else 56))[0]


# -- writing records -----------------------------------------------------------------------------------


def _record_header(buf, pos: int, topic: bytes, born_addr: bytes, store_addr: bytes, sys_flag: int) -> struct.Struct:
    """The checks every record write makes before its first byte (buffer, position, topic length, host
    addresses against the sys_flag bits); returns the fixed header layout for the address lengths."""
    if isinstance(buf, (bytes, str)):
        raise TypeError("buf must be a writable buffer")
    if pos < 0 or pos > len(buf):
        raise IndexError("record position outside the buffer")
    if not 1 <= len(topic) <= MAX_TOPIC_BYTES:
        raise ValueError("topic must be 1..127 bytes")
    bl, sl = len(born_addr), len(store_addr)
    if bl not in (4, 16) or sl not in (4, 16):
        raise ValueError("host addresses must be 4 or 16 bytes")
    if bool(sys_flag & BORNHOST_V6) != (bl == 16) or bool(sys_flag & STOREHOSTADDRESS_V6) != (sl == 16):
        raise ValueError("sys_flag host bits do not match the address lengths")
    return HEADERS[(bl, sl)]


def _put_body_topic(buf, p: int, body, topic: bytes) -> int:
    """BODY, then TOPICLEN and TOPIC, of a record whose body starts at ``p``; the position after them."""
    blen = len(body)
    buf[p : p + blen] = body
    p += blen
    tlen = len(topic)
    buf[p] = tlen
    buf[p + 1 : p + 1 + tlen] = topic
    return p + 1 + tlen


def encode_records(buf, pos: int, src, items, batch_props: bytes, topic: bytes, queue_id: int,
                   first_qoff: int, file_base: int, sys_flag: int, born_ts: int, born_addr: bytes,
                   born_port: int, store_ts: int, store_addr: bytes, store_port: int, reconsume_times: int,
                   prepared_offset: int) -> tuple[int, list[int]]:
    """Write one v1 CommitLog record per item, back to back from ``pos``.

    ``src`` holds the bodies and properties; ``items`` are ``(body_start, body_len,
    props_start, props_len, flag)`` into it, as :func:`split_batch` returns them for a
    client batch body (a single put passes ``body + props`` and one item). A record's
    properties are the item's, then ``\\x02`` + ``batch_props`` when both are non-empty
    (only ``batch_props`` when the item has none). Record ``i`` gets queue offset
    ``first_qoff + i``, physical offset ``file_base + its position``, BODYCRC
    ``crc32(body) & 0x7FFFFFFF`` and the shared header fields given. Addresses are 4
    (IPv4) or 16 (IPv6) bytes and must agree with sys_flag bits 0x10/0x20.

    Payloads are written first and the headers (TOTALSIZE, MAGIC) last, newest record
    first, so a torn write never looks like a whole record. Everything is validated
    before the first byte is written: IndexError when ``pos`` or the records fall
    outside ``buf`` or an item outside ``src``; ValueError for a topic not 1..127
    bytes, a bad address or properties over 65535 bytes; OverflowError for a field out
    of its Java type's range. Returns ``(end, positions)``: the position after the
    last record and each record's position in ``buf``. Input checks RocketMQ makes
    (NUL or non-UTF-8 properties, 32767-byte properties, file room) stay the caller's.
    """
    hdr = _record_header(buf, pos, topic, born_addr, store_addr, sys_flag)
    n = len(buf)
    tlen = len(topic)
    try:
        hdr.pack(0, 0, 0, queue_id, 0, first_qoff, file_base, sys_flag, born_ts, born_addr, born_port, store_ts,
                 store_addr, store_port, reconsume_times, prepared_offset, 0)
    except struct.error as e:
        raise OverflowError(str(e)) from None
    bp_len = len(batch_props)
    src_len = len(src)
    fixed = hdr.size + 1 + tlen + 2
    sizes = []
    total_all = 0
    for it in items:
        if type(it) is not tuple or len(it) != 5:
            raise TypeError("items must be 5-tuples")
        bstart, blen, pstart, plen, flag = it
        if (bstart < 0 or blen < 0 or bstart + blen > src_len or pstart < 0 or plen < 0
                or pstart + plen > src_len):
            raise IndexError("item outside src")
        if not -0x80000000 <= flag <= 0x7FFFFFFF:
            raise OverflowError("flag is not a signed 32-bit value")
        full = plen + (1 + bp_len if bp_len else 0) if plen else bp_len
        if full > 0xFFFF:
            raise ValueError("properties longer than 65535 bytes")
        size = fixed + blen + full
        sizes.append(size)
        total_all += size
    if total_all > n - pos:
        raise IndexError("records do not fit in the buffer")
    mv = memoryview(src)
    try:
        positions = []
        crcs = []
        p0 = pos
        tail = (b"\x02" + batch_props) if bp_len else b""
        for (bstart, blen, pstart, plen, _flag), size in zip(items, sizes, strict=True):
            positions.append(p0)
            body = mv[bstart : bstart + blen]
            crcs.append(zlib.crc32(body) & 0x7FFFFFFF)
            p = _put_body_topic(buf, p0 + hdr.size, body, topic)
            if plen:
                _U16.pack_into(buf, p, plen + len(tail))
                buf[p + 2 : p + 2 + plen] = mv[pstart : pstart + plen]
                buf[p + 2 + plen : p0 + size] = tail
            else:
                _U16.pack_into(buf, p, bp_len)
                buf[p + 2 : p0 + size] = batch_props
            p0 += size
    finally:
        mv.release()
    for i in range(len(positions) - 1, -1, -1):
        p = positions[i]
        it = items[i]
        hdr.pack_into(buf, p, sizes[i], MESSAGE_MAGIC_CODE, crcs[i], queue_id, it[4], first_qoff + i, file_base + p,
                      sys_flag, born_ts, born_addr, born_port, store_ts, store_addr, store_port, reconsume_times,
                      prepared_offset, it[1])
    return pos + total_all, positions


def write_record(buf, pos: int, body, topic: bytes, props: bytes, queue_id: int, flag: int,
                 queue_offset: int, phys_offset: int, sys_flag: int, born_ts: int, born_addr: bytes,
                 born_port: int, store_ts: int, store_addr: bytes, store_port: int, reconsume_times: int,
                 prepared_offset: int, body_crc: int) -> int:
    """One v1 record (a single put) at ``pos``: :func:`encode_records` of one item whose properties
    are ``props`` (at most 32767 bytes), with ``queue_offset`` and ``phys_offset`` as given and
    BODYCRC ``body_crc`` (computed when negative). Returns the position after the record."""
    if len(props) > MAX_PROPERTIES_BYTES:
        raise ValueError("properties longer than 32767 bytes")
    if not -(1 << 31) <= body_crc < 1 << 31:
        raise OverflowError("body_crc out of range")
    if not -(1 << 63) <= phys_offset - pos < 1 << 63:
        raise OverflowError("phys_offset out of range")
    hdr = _record_header(buf, pos, topic, born_addr, store_addr, sys_flag)
    tlen = len(topic)
    blen, plen = len(body), len(props)
    total = hdr.size + blen + 1 + tlen + 2 + plen
    if body_crc < 0:
        body_crc = zlib.crc32(body) & 0x7FFFFFFF
    try:
        head = hdr.pack(total, MESSAGE_MAGIC_CODE, body_crc, queue_id, flag, queue_offset, phys_offset, sys_flag,
                        born_ts, born_addr, born_port, store_ts, store_addr, store_port, reconsume_times,
                        prepared_offset, blen)
    except struct.error as e:
        raise OverflowError(str(e)) from None
    if total > len(buf) - pos:
        raise IndexError("records do not fit in the buffer")
    # payload first, header (TOTALSIZE/MAGIC) last: a torn append never looks whole
    p = _put_body_topic(buf, pos + hdr.size, body, topic)
    _U16.pack_into(buf, p, plen)
    if plen:
        buf[p + 2 : p + 2 + plen] = props
    buf[pos : pos + len(head)] = head
    return pos + total

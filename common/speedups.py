"""The store's per-message primitives: a pure-Python twin and an optional compiled one.

As aiokafka does for its record batches, the hot path has two implementations
with identical results behind one :class:`Speedups` Protocol:

* the pure-Python twin (the reference, always available): the functions below, and the record
  codec's (:mod:`common.record_codec`: parse, walk, encode, batch split, properties), and
* ``common._speedups``, a small C extension (``common/_speedups.c``) built by
  ``setup.py`` when a compiler is present.

The compiled twin is chosen at import unless ``ROCKETMQ_PY_PURE=1`` is set or it
was not built; :data:`IS_COMPILED` says which one is in use. :data:`pure` and
:data:`compiled` (None when absent) give both twins to tests and benchmarks.

Functions (module attributes; see :class:`Speedups` for the full contracts):

* ``java_hash(s)``: Java ``String.hashCode()``.
* ``b64encode(data)`` / ``b64decode(s)``: standard padded base64 of DLedger PUSH entry bodies
  (decode gives None for non-canonical input).
* ``index_put(buf, slot_num, index_count, key_hash, phy_offset, time_diff)``: one IndexFile entry.
* ``index_put_keys(buf, slot_num, index_count, max_index, keys, phy_offset, time_diff)``:
  hash and insert many keys.
* ``index_build_many(buf, slot_num, max_index, requests, start, header)``: index a run of
  dispatched records (IndexService's whole per-record work, header bookkeeping included).
* ``parse_properties(text)``: a properties string as a dict (every single send's properties).
* ``dispatch_props(properties)``: TAGS, KEYS, UNIQ_KEY, DELAY of a properties string.
* ``batch_properties(src, items, batch_props)``: the stored properties text and dispatch fields
  of each entry of a client batch, or the first entry's refusal.
* ``msg_ids(prefix, base, positions)``: the comma-joined offset msgIds of a batch.
* ``cq_put_units(buf, pos, file_size, file_from_offset, allow_at_zero, max_physic_offset, requests,
  start)``: ConsumeQueue units of a run of dispatched records appended at the end of one file.
* ``queue_groups(requests)``: the dispatched records that get a consume-queue unit, grouped by queue.
* ``write_record(buf, pos, body, topic, props, ...)``: one v1 record of a single put.
* ``dispatch_requests(cls, topic, ...)``: the prepared DispatchRequests of a batch.
* ``new_dispatch_request(cls, topic, ...)``: the prepared DispatchRequest of a single put.
* ``split_batch(body)``: the entries of a client batch body.
* ``parse_record(buf, pos, strict=False)``: one CommitLog record for the reput's DispatchRequest.
* ``encode_records(buf, pos, src, items, batch_props, topic, ...)``: write v1 records (batch or single put).
* ``encode_batch(buf, pos, limit, src, batch_props, topic, ...)``: a client batch stored in one pass
  (split_batch + batch_properties + encode_records + msg_ids + dispatch_requests in one call).
* ``walk_records(buf, pos, base_offset, check_crc)``: recovery's check of one CommitLog file.
* ``cq_scan(buf, pos, end)``: ConsumeQueue recovery over one file's units.
* ``acl_mac(pads, ext, order, others, body)``: an ACL 1.0 request signature (common.acl_signer);
  ``acl_pads(key_block)``: its keyed SHA-1 states as raw bytes (compiled with libcrypto only, else None).
* ``json_header(raw, languages)``: the usual JSON remoting header's fields in one call, or None
  (the remoting codec's general path decodes the rest); ``json_head(code, language, ..., body_len)``:
  a command's frame prefix and JSON header in one call, or None (the general path encodes the rest).
* ``send_header_v2(ext)``: the usual SEND_MESSAGE_V2 header's 13 fields, or None (the send processor's
  general parse reads the rest).
* ``new_slotted(cls, values)``: an instance of a plain slotted class, its slots set from the tuple
  ``values`` in ``__slots__`` order (for a slotted dataclass given every field: ``cls(*values)``).
* ``put_single(log, msg, now, kit)``: ``CommitLog.put_message``'s usual case in one call, or None (nothing
  written: the general path, the reference, takes the message). The pure twin always declines.
* ``crc32(data, value=0)``: ``zlib.crc32`` (the compiled twin folds with PCLMULQDQ where the
  CPU has it: :data:`CRC_IMPL`).
"""

from __future__ import annotations

import binascii
import operator
import os
import struct
import sys
import types
import warnings
import zlib
from typing import Protocol

# the record functions of the pure twin: one codec, shared with everything that reads or writes a record
from common import acl_signature_pure, consume_queue_pure, json_header_pure, record_codec, send_header_pure
from common.record_codec import RecordTuple

__all__ = [
    "Speedups",
    "b64encode",
    "b64decode",
    "IS_COMPILED",
    "pure",
    "compiled",
    "java_hash",
    "index_put",
    "index_put_keys",
    "index_build_many",
    "IndexHeaderTuple",
    "parse_properties",
    "dispatch_props",
    "batch_properties",
    "msg_ids",
    "cq_put_units",
    "queue_groups",
    "write_record",
    "dispatch_requests",
    "new_dispatch_request",
    "split_batch",
    "parse_record",
    "encode_records",
    "encode_batch",
    "walk_records",
    "cq_scan",
    "crc32",
    "acl_mac",
    "acl_pads",
    "json_header",
    "json_head",
    "send_header_v2",
    "put_single",
    "new_slotted",
    "CRC_IMPL",
    "RecordTuple",
    "INDEX_HEADER_SIZE",
    "HASH_SLOT_SIZE",
    "INDEX_ENTRY_SIZE",
]

INDEX_HEADER_SIZE = 40
HASH_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20



# (begin_timestamp, end_timestamp, begin_phy_offset, end_phy_offset, hash_slot_count, index_count)
IndexHeaderTuple = tuple[int, int, int, int, int, int]


class Speedups(Protocol):
    """What both twins provide. Buffers are any writable/readable buffer (mmap, bytearray, memoryview)."""

    def b64encode(self, data) -> str:
        """Standard base64 (``+/``, '=' padding, no newline) of a bytes-like ``data``, as a str."""
        ...

    def b64decode(self, s) -> bytes | None:
        """The bytes of ``s`` (an ASCII str or a bytes-like object) when it is canonical base64:
        standard alphabet, length a multiple of 4, at most two '=' and only at the end (as
        ``binascii.a2b_base64(s, strict_mode=True)`` accepts); None otherwise, never an error
        for bad text (a non-ASCII str included)."""
        ...

    def java_hash(self, s: str) -> int:
        """Java ``String.hashCode()`` of ``s``: ``h = 31*h + unit`` over its UTF-16 code units
        (characters above U+FFFF as surrogate pairs, lone surrogates as one unit), as a signed
        32-bit int."""
        ...

    def index_put(self, buf, slot_num: int, index_count: int, key_hash: int, phy_offset: int,
                  time_diff: int) -> bool:
        """Write IndexFile entry number ``index_count`` and point its hash slot at it.

        ``key_hash`` is a Java hash (signed, or its unsigned 32-bit form); RocketMQ's
        ``indexKeyHashMethod`` (abs, Integer.MIN_VALUE -> 0) is applied, so an already
        non-negative hash is kept as is. The slot is ``keyHash % slot_num``; its old value
        becomes the entry's prevIndex (0 when it is <= 0 or > index_count). The 40-byte
        header is left to the caller. Returns True when the slot was empty (the caller
        increments hashSlotCount). Raises ValueError/IndexError when ``slot_num`` < 1,
        ``index_count`` < 0 or the entry or slot lies outside ``buf``; nothing is written then.
        """
        ...

    def index_put_keys(self, buf, slot_num: int, index_count: int, max_index: int, keys: list[str],
                       phy_offset: int, time_diff: int) -> tuple[int, int]:
        """Hash each key (already ``topic#key``) and :meth:`index_put` it at ``index_count``,
        ``index_count + 1``, ... while the entry number is below ``max_index`` (maxIndexNum).

        After an entry written at number <= 1 the time diff of the following keys is 0 (that
        entry sets the header's beginTimestamp to this record's). Returns ``(written,
        new_slots)``: how many keys were written (fewer than ``len(keys)`` means the file is
        full) and how many of them took an empty slot. Bounds are checked for the whole run
        before anything is written.
        """
        ...

    def index_build_many(self, buf, slot_num: int, max_index: int, requests, start: int,
                         header: IndexHeaderTuple) -> tuple[int, IndexHeaderTuple]:
        """Index ``requests[start:]`` (DispatchRequest-like: ``topic``, ``commit_log_offset``,
        ``sys_flag``, ``keys``, ``uniq_key``, ``store_timestamp``) into one IndexFile whose
        in-memory header is ``header``, as IndexService.build_index does record by record.

        A record is skipped when its offset is below the running endPhyOffset (already
        indexed), when it is a ROLLBACK, or when it has neither UNIQ_KEY nor a non-empty
        space-separated piece of KEYS; otherwise ``topic#UNIQ_KEY`` then each ``topic#piece``
        are put with the record's time diff (see :meth:`index_put_keys`), the first entry of
        the file sets beginTimestamp/beginPhyOffset, and endTimestamp/endPhyOffset follow
        the record. Stops at the first record met while the file is full (``index_count >=
        max_index``) or whose keys do not all fit: that record is left to the caller (which
        rolls to a new file). Returns ``(next, header)``: the index of the first record not
        done (``len(requests)`` when all are) and the updated header. Raises ValueError /
        IndexError before writing anything when the geometry does not fit ``buf``.
        """
        ...

    def parse_properties(self, text: str | None) -> dict[str, str]:
        """MessageDecoder.string2messageProperties: ``k\x01v`` entries split by ``\x02``, each kept
        only with a non-empty key and value (split at its first ``\x01``), later duplicates winning;
        an empty dict for None or "". TypeError for any other non-str."""
        ...

    def dispatch_props(self, properties: str) -> tuple[str | None, str | None, str | None, str | None] | None:
        """``(TAGS, KEYS, UNIQ_KEY, DELAY)`` of a stored properties string (``NAME\x01VALUE`` entries
        joined by ``\x02``; the last entry of a name wins; absent or empty is None), the same
        values :meth:`parse_record` gives for a record with these properties; None when
        ``properties`` contains NUL (which a stored record must not). TypeError for a non-str."""
        ...

    def batch_properties(self, src, items: list[tuple[int, int, int, int, int]], batch_props: bytes
                         ) -> tuple[list[tuple[str, str | None, str | None, str | None, str | None]], int] | tuple[int, str]:
        """For each :meth:`split_batch` item of the batch body ``src``: ``(text, tags, keys, uniq_key,
        delay)``, where ``text`` is the properties the record stores (the entry's own, then ``\x02``
        and ``batch_props`` when both are non-empty) and the rest is :meth:`dispatch_props` of it;
        returned with ``var_bytes`` (sum of body lengths and stored properties lengths). For the
        first entry that cannot be stored: ``(1, message)`` (NUL in its properties, not UTF-8) or
        ``(2, message)`` (stored properties longer than 32767 bytes), checked in that order."""
        ...

    def msg_ids(self, prefix: str, base: int, positions: list[int]) -> str:
        """``",".join(f"{prefix}{base + p:016X}" for p in positions)`` (offsets non-negative)."""
        ...

    def cq_put_units(self, buf, pos: int, file_size: int, file_from_offset: int, allow_at_zero: bool,
                     max_physic_offset: int, requests, start: int) -> tuple[int, int, int]:
        """ConsumeQueue fast path: for ``requests[start:]`` (``commit_log_offset``, ``msg_size``,
        ``tags_code``, ``consume_queue_offset``) skip a record with ``offset + size <=
        max_physic_offset`` (already in the queue) and write the 20-byte unit (int64 offset, int32
        size, int64 tags code, big-endian) of each other at ``pos`` while it is the next unit at the
        end of this file (``pos + 20 <= file_size``, ``file_from_offset + pos == consume_queue_offset
        * 20``, and ``pos > 0`` unless ``allow_at_zero``). Returns ``(next, pos, max_physic_offset)``:
        the first record left to the caller's general path (``len(requests)`` when none), the new
        write position and the new max physical offset."""
        ...

    def queue_groups(self, requests) -> list[tuple[str, int, list]]:
        """The requests (``sys_flag``, ``topic``, ``queue_id``) whose transaction type is NOT or COMMIT,
        grouped by ``(topic, queue_id)``: ``[(topic, queue_id, [request, ...]), ...]``, each group in
        request order, the groups in the order of their first request (the consume-queue dispatcher
        writes each group's units with one put_requests)."""
        ...

    def write_record(self, buf, pos: int, body, topic: bytes, props: bytes, queue_id: int, flag: int,
                     queue_offset: int, phys_offset: int, sys_flag: int, born_ts: int, born_addr: bytes,
                     born_port: int, store_ts: int, store_addr: bytes, store_port: int, reconsume_times: int,
                     prepared_offset: int, body_crc: int) -> int:
        """Write one v1 record (a single put) at ``pos``: the bytes :meth:`encode_records` writes for
        one item whose properties are ``props`` (at most 32767 bytes), with ``queue_offset`` and
        ``phys_offset`` as given and BODYCRC ``body_crc`` (computed when negative). Payload first,
        the magic last. Returns the position after the record. Same errors as encode_records,
        raised before anything is written."""
        ...

    def dispatch_requests(self, cls: type, topic: str, queue_id: int, file_base: int, positions: list[int],
                          end: int, store_ts: int, first_qoff: int, sys_flag: int, prepared_offset: int,
                          fields: list) -> list:
        """One ``cls`` (store.dispatch.DispatchRequest) per record of a batch of a plain topic, equal to
        ``cls(topic, queue_id, file_base + p, next_p - p, java_hash(tags) if tags else 0, store_ts,
        first_qoff + i, keys or "", uniq, sys_flag, prepared_offset, None, True, None, text)`` where
        ``p`` is ``positions[i]``, ``next_p`` the next position (``end`` after the last) and
        ``(text, tags, keys, uniq, delay) = fields[i]`` (:meth:`batch_properties`). The compiled twin
        fills the slots without running ``__init__``, so it refuses (TypeError) a class whose slots
        are not exactly DispatchRequest's."""
        ...

    def new_dispatch_request(self, cls: type, topic: str, queue_id: int, commit_log_offset: int, msg_size: int,
                             tags_code: int, store_timestamp: int, consume_queue_offset: int, keys: str,
                             uniq_key: str | None, sys_flag: int, prepared_transaction_offset: int,
                             properties_string: str):
        """``cls(topic, ..., prepared_transaction_offset, None, True, None, properties_string)`` (store.dispatch.
        DispatchRequest's positional order); the compiled twin fills the slots without ``__init__``
        (same rules as :meth:`dispatch_requests`)."""
        ...

    def split_batch(self, body: bytes) -> list[tuple[int, int, int, int, int]] | str:
        """The entries of a client batch body as ``(body_start, body_len, properties_start,
        properties_len, flag)``, or an error text; the pure twin is :func:`common.record_codec.split_batch`."""
        ...

    def parse_record(self, buf, pos: int, strict: bool = False) -> RecordTuple | None:
        """Parse the CommitLog record at ``pos`` (see :func:`common.record_codec.parse_record`)."""
        ...

    def walk_records(self, buf, pos: int, base_offset: int, check_crc: bool) -> tuple[int, int, bool]:
        """Recovery's check of one CommitLog file (see :func:`common.record_codec.walk_records`)."""
        ...

    def cq_scan(self, buf, pos: int, end: int) -> tuple[int, int]:
        """ConsumeQueue recovery over one file's units (see :func:`_py_cq_scan`)."""
        ...

    def crc32(self, data, value: int = 0) -> int:
        """``zlib.crc32(data, value)`` (java.util.zip.CRC32): the body CRC of a record."""
        ...

    def acl_pads(self, key_block: bytes) -> bytes | None:
        """The keyed inner and outer SHA-1 states of HMAC for a key already hashed/padded to 64 bytes,
        as raw bytes for :meth:`acl_mac`; None where this twin has no raw SHA-1 (the pure one, or a
        compiled one built without libcrypto): hashlib states are used then."""
        ...

    def acl_mac(self, pads, ext: dict, order: tuple[str, ...], others: tuple[str, ...], body,
                expect: str | None = None) -> bytes | bool | None:
        """ACL 1.0 signature (common.acl_signer): Base64 of HmacSHA1 over the values of ``ext`` at
        ``order`` (None written "null", UTF-8 with lone surrogates kept) followed by ``body``;
        ``pads`` are the keyed inner and outer hashlib SHA-1 states (copied, never updated), or
        (compiled twin) what its :meth:`acl_pads` returned. With ``expect`` (a request's Signature):
        whether the signature is that, compared in constant time (False for non-ASCII text).
        None when ``ext``'s keys are not exactly ``order`` + ``others`` (two disjoint tuples)."""
        ...

    def json_header(self, raw, languages: dict) -> tuple | None:
        """``(code, language, version, opaque, flag, remark, ext_fields)`` of a JSON remoting header
        in its usual shape, None otherwise (see :func:`common.json_header_pure.json_header`)."""
        ...

    def json_head(self, code, language, version, opaque, flag, remark, ext_fields, lang_names: dict,
                  body_len: int) -> bytes | None:
        """The frame prefix and JSON header of a command with these fields when they have the usual
        types, None otherwise (see :func:`common.json_header_pure.json_head`)."""
        ...

    def send_header_v2(self, ext: dict) -> tuple | None:
        """The 13 SEND_MESSAGE_V2 header fields a..m in their usual form, None otherwise (see
        :func:`common.send_header_pure.send_header_v2`)."""
        ...

    def new_slotted(self, cls: type, values: tuple) -> object:
        """An instance of ``cls`` (deriving from object alone, no ``__dict__``, exactly ``len(values)``
        slots besides ``__weakref__``) with its slots set from ``values`` in ``__slots__`` order, without
        ``__init__``; TypeError for any other class or count."""
        ...

    def put_single(self, log, msg, now: int, kit: tuple) -> object | None:
        """``log.put_message(msg, now)``'s result and effects for a single put in the usual case (caches
        warm, IPv4 hosts, room in the warmed part of the last file, no delay on SCHEDULE_TOPIC), None
        otherwise with nothing changed. ``kit``: (MessageExtBrokerInner, MappedFile, DispatchRequest,
        AppendMessageResult, PutMessageResult, AppendMessageStatus.PUT_OK, PutMessageStatus.PUT_OK,
        SCHEDULE_TOPIC); see store.commit_log.CommitLog.put_message."""
        ...

    def encode_records(self, buf, pos: int, src, items: list[tuple[int, int, int, int, int]],
                       batch_props: bytes, topic: bytes, queue_id: int, first_qoff: int, file_base: int,
                       sys_flag: int, born_ts: int, born_addr: bytes, born_port: int, store_ts: int,
                       store_addr: bytes, store_port: int, reconsume_times: int,
                       prepared_offset: int) -> tuple[int, list[int]]:
        """Write one v1 CommitLog record per item at ``pos`` (see :func:`common.record_codec.encode_records`)."""
        ...

    def encode_batch(self, buf, pos: int, limit: int, src, batch_props: bytes, topic: bytes, queue_id: int,
                     first_qoff: int, file_base: int, sys_flag: int, born_ts: int, born_addr: bytes, born_port: int,
                     store_ts: int, store_addr: bytes, store_port: int, reconsume_times: int, prepared_offset: int,
                     prefix: str, cls: type | None, topic_str: str) -> tuple:
        """A client batch body ``src`` stored as consecutive v1 records at ``pos``, in one pass: what
        :meth:`split_batch`, :meth:`batch_properties`, :meth:`encode_records`, :meth:`msg_ids` and (when
        ``cls`` is not None) :meth:`dispatch_requests` do, called in turn with these arguments. Returns

        * ``(0, end, count, msg_ids, requests)``: written; ``requests`` None when ``cls`` is None;
        * ``(1, message)``: refused as MESSAGE_ILLEGAL, nothing written: ``"bad batch body: ..."`` (the
          split_batch text), ``"empty batch"``, ``"properties contain NUL"`` (``batch_props``), then
          batch_properties' refusals in entry order; ``(2, message)``: stored properties over 32767 bytes;
        * ``(3, total)``: the records take ``total`` bytes, more than ``limit`` (clamped to the buffer):
          nothing written (the caller makes room and calls again).

        Bad arguments raise as encode_records does (buffer, position, topic, addresses), checked first."""
        ...


# -- java_hash -----------------------------------------------------------------------

_POW_MAX = 1024
# 31**k mod 2**32, lowest power first: hashCode = sum(u[n-1-k] * 31**k) mod 2**32, so the units are
# walked in reverse against this table (map() stops at the shorter iterable)
_POW31 = [pow(31, k, 1 << 32) for k in range(_POW_MAX)]
_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"
_mul = operator.mul


def _py_java_hash(s: str) -> int:
    """Pure twin of ``java_hash``."""
    if not isinstance(s, str):
        raise TypeError(f"expected str, got {type(s).__name__}")
    if s.isascii():
        units = s.encode("ascii")
    else:
        # surrogatepass: a lone surrogate is one UTF-16 unit, as in a Java string
        units = memoryview(s.encode(_UTF16_NATIVE, "surrogatepass")).cast("H")
    if len(units) <= _POW_MAX:
        h = sum(map(_mul, reversed(units), _POW31)) & 0xFFFFFFFF
    else:
        h = 0
        for u in units:
            h = (31 * h + u) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


# -- IndexFile -------------------------------------------------------------------------

_I32 = struct.Struct(">i")
_ENTRY = struct.Struct(">iqii")


def _index_key_hash(h: int) -> int:
    """RocketMQ's indexKeyHashMethod on a 32-bit hash: abs of the signed value, MIN_VALUE -> 0."""
    h &= 0xFFFFFFFF
    if h & 0x80000000:
        return 0 if h == 0x80000000 else 0x100000000 - h
    return h


def _check_index_args(buf, slot_num: int, index_count: int, last_count: int, phy_offset: int,
                      time_diff: int) -> int:
    """Validate the arguments for entries index_count..last_count; return the entries' base offset."""
    if not -0x8000000000000000 <= phy_offset <= 0x7FFFFFFFFFFFFFFF:
        raise OverflowError("phy_offset is not a signed 64-bit value")
    if not -0x80000000 <= time_diff <= 0x7FFFFFFF:
        raise OverflowError("time_diff is not a signed 32-bit value")
    if slot_num < 1:
        raise ValueError("slot_num must be positive")
    if index_count < 0:
        raise ValueError("index_count must not be negative")
    base = INDEX_HEADER_SIZE + slot_num * HASH_SLOT_SIZE
    if last_count >= index_count and base + (last_count + 1) * INDEX_ENTRY_SIZE > len(buf):
        raise IndexError("index entry outside the buffer")
    return base


def _py_index_put(buf, slot_num: int, index_count: int, key_hash: int, phy_offset: int, time_diff: int) -> bool:
    """Pure twin of ``index_put``."""
    if not -0x80000000 <= key_hash <= 0xFFFFFFFF:
        raise ValueError("key_hash is not a 32-bit value")
    base = _check_index_args(buf, slot_num, index_count, index_count, phy_offset, time_diff)
    key_hash = _index_key_hash(key_hash)
    slot_pos = INDEX_HEADER_SIZE + (key_hash % slot_num) * HASH_SLOT_SIZE
    prev = _I32.unpack_from(buf, slot_pos)[0]
    empty = prev <= 0 or prev > index_count
    _ENTRY.pack_into(buf, base + index_count * INDEX_ENTRY_SIZE, key_hash, phy_offset, time_diff,
                     0 if empty else prev)
    _I32.pack_into(buf, slot_pos, index_count)
    return empty


def _py_index_put_keys(buf, slot_num: int, index_count: int, max_index: int, keys: list[str],
                       phy_offset: int, time_diff: int) -> tuple[int, int]:
    """Pure twin of ``index_put_keys``."""
    n = max(0, min(len(keys), max_index - index_count))
    base = _check_index_args(buf, slot_num, index_count, index_count + n - 1, phy_offset, time_diff)
    if n == 0:
        return 0, 0
    hashes = [_index_key_hash(_py_java_hash(k)) for k in keys[:n]]
    unpack_int = _I32.unpack_from
    pack_int = _I32.pack_into
    pack_entry = _ENTRY.pack_into
    count = index_count
    new_slots = 0
    for key_hash in hashes:
        slot_pos = INDEX_HEADER_SIZE + (key_hash % slot_num) * HASH_SLOT_SIZE
        prev = unpack_int(buf, slot_pos)[0]
        if prev <= 0 or prev > count:
            prev = 0
            new_slots += 1
        pack_entry(buf, base + count * INDEX_ENTRY_SIZE, key_hash, phy_offset, time_diff, prev)
        pack_int(buf, slot_pos, count)
        if count <= 1:
            time_diff = 0
        count += 1
    return n, new_slots


def _py_index_build_many(buf, slot_num: int, max_index: int, requests, start: int,
                         header: IndexHeaderTuple) -> tuple[int, IndexHeaderTuple]:
    """Pure twin of ``index_build_many``."""
    begin_ts, end_ts, begin_phy, end_phy, slots_count, count = header
    n = len(requests)
    if not 0 <= start <= n:
        raise IndexError("start outside the requests")
    if count < 1:
        raise ValueError("index_count must be positive")
    _check_index_args(buf, slot_num, count, max_index - 1, 0, 0)
    i = start
    while i < n:
        req = requests[i]
        if count >= max_index:
            break
        offset = req.commit_log_offset
        if offset < end_phy or (req.sys_flag & 0xC) == 0xC:
            i += 1
            continue
        uniq = req.uniq_key
        keys = req.keys
        items = [k for k in keys.split(" ") if k] if keys else []
        if uniq:
            items.insert(0, uniq)
        if not items:
            i += 1
            continue
        if count + len(items) > max_index:
            break
        ts = req.store_timestamp
        if begin_ts <= 0:
            td = 0
        else:
            delta = ts - begin_ts
            td = 0 if delta < 0 else (delta // 1000 if delta < 2_147_483_647_000 else 0x7FFFFFFF)
        prefix = req.topic + "#"
        done, new_slots = _py_index_put_keys(buf, slot_num, count, max_index, [prefix + k for k in items], offset, td)
        if count <= 1:
            begin_phy = offset
            begin_ts = ts
        count += done
        slots_count += new_slots
        end_phy = offset
        end_ts = ts
        i += 1
    return i, (begin_ts, end_ts, begin_phy, end_phy, slots_count, count)


# -- put results and consume queues -------------------------------------------------------------


def _py_msg_ids(prefix: str, base: int, positions) -> str:
    """Pure twin of ``msg_ids``."""
    return ",".join([f"{prefix}{base + p:016X}" for p in positions])


def _py_dispatch_requests(cls: type, topic: str, queue_id: int, file_base: int, positions: list[int], end: int,
                          store_ts: int, first_qoff: int, sys_flag: int, prepared_offset: int, fields: list) -> list:
    """Pure twin of ``dispatch_requests`` (through ``cls.__init__``)."""
    if len(positions) != len(fields):
        raise ValueError("positions and fields differ in length")
    out = []
    nexts = [*positions[1:], end] if positions else []
    for i, (p, nxt, (text, tags, keys, uniq, _delay)) in enumerate(zip(positions, nexts, fields, strict=True)):
        out.append(cls(topic, queue_id, file_base + p, nxt - p, _py_java_hash(tags) if tags is not None else 0,
                       store_ts, first_qoff + i, keys if keys is not None else "", uniq, sys_flag, prepared_offset,
                       None, True, None, text))
    return out


def _py_encode_batch(buf, pos: int, limit: int, src, batch_props: bytes, topic: bytes, queue_id: int,
                     first_qoff: int, file_base: int, sys_flag: int, born_ts: int, born_addr: bytes, born_port: int,
                     store_ts: int, store_addr: bytes, store_port: int, reconsume_times: int, prepared_offset: int,
                     prefix: str, cls: type | None, topic_str: str) -> tuple:
    """Pure twin of ``encode_batch``: the five steps it fuses, one after the other."""
    if not isinstance(prefix, str) or not isinstance(topic_str, str):
        raise TypeError("prefix and topic_str must be str")
    if not prefix.isascii():
        raise ValueError("prefix must be ASCII")
    hdr = record_codec._record_header(buf, pos, topic, born_addr, store_addr, sys_flag)
    try:  # the fields' ranges, checked before the body as the compiled twin does
        hdr.pack(0, 0, 0, queue_id, 0, first_qoff, file_base, sys_flag, born_ts, born_addr, born_port, store_ts,
                 store_addr, store_port, reconsume_times, prepared_offset, 0)
    except struct.error as e:
        raise OverflowError(str(e)) from None
    items = record_codec.split_batch(src)
    if isinstance(items, str):
        return 1, f"bad batch body: {items}"
    if not items:
        return 1, "empty batch"
    if b"\x00" in batch_props:
        return 1, "properties contain NUL"
    fields, var_bytes = record_codec.batch_properties(src, items, batch_props)
    if type(fields) is int:
        return fields, var_bytes
    total = (hdr.size + 1 + len(topic) + 2) * len(items) + var_bytes
    if total > min(limit, len(buf) - pos):
        return 3, total
    end, positions = record_codec.encode_records(
        buf, pos, src, items, batch_props, topic, queue_id, first_qoff, file_base, sys_flag, born_ts, born_addr,
        born_port, store_ts, store_addr, store_port, reconsume_times, prepared_offset)
    reqs = None
    if cls is not None:
        reqs = _py_dispatch_requests(cls, topic_str, queue_id, file_base, positions, end, store_ts, first_qoff,
                                     sys_flag, prepared_offset, fields)
    return 0, end, len(positions), _py_msg_ids(prefix, file_base, positions), reqs


def _py_new_dispatch_request(cls: type, topic: str, queue_id: int, commit_log_offset: int, msg_size: int,
                             tags_code: int, store_timestamp: int, consume_queue_offset: int, keys: str,
                             uniq_key: str | None, sys_flag: int, prepared_transaction_offset: int,
                             properties_string: str):
    """Pure twin of ``new_dispatch_request``."""
    return cls(topic, queue_id, commit_log_offset, msg_size, tags_code, store_timestamp, consume_queue_offset, keys,
               uniq_key, sys_flag, prepared_transaction_offset, None, True, None, properties_string)


def _py_b64encode(data) -> str:
    """Pure twin of ``b64encode``: standard base64 with '=' padding, no newline."""
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def _py_b64decode(s) -> bytes | None:
    """Pure twin of ``b64decode``: the bytes of canonical padded base64 (an ASCII str or
    bytes-like), None for anything else (the caller falls back to a lenient decoder)."""
    if isinstance(s, str) and not s.isascii():
        return None
    if len(s) % 4:
        return None
    try:
        return binascii.a2b_base64(s, strict_mode=True)
    except (binascii.Error, ValueError):
        return None


def _py_new_slotted(cls: type, values: tuple) -> object:
    """Pure twin of ``new_slotted``."""
    if type(values) is not tuple or not isinstance(cls, type) or cls.__bases__ != (object,) \
            or "__slots__" not in cls.__dict__ or "__dict__" in cls.__dict__:
        raise TypeError("new_slotted(cls, values: tuple): cls must be a plain slotted class")
    names = cls.__dict__["__slots__"]
    names = [n for n in ((names,) if isinstance(names, str) else names) if n != "__weakref__"]
    if len(names) != len(values):
        raise TypeError(f"new_slotted: {cls.__name__} has {len(names)} slots, {len(values)} values given")
    obj = cls.__new__(cls)
    for name, value in zip(names, values, strict=True):
        object.__setattr__(obj, name, value)
    return obj


def _py_put_single(log, msg, now: int, kit: tuple) -> None:
    """Pure twin of ``put_single``: declines every message (the general path in
    ``CommitLog.put_message`` is the pure implementation)."""
    return None


def _py_crc32(data, value: int = 0) -> int:
    """Pure twin of ``crc32``: zlib's own."""
    return zlib.crc32(data, value)


# -- the loader ----------------------------------------------------------------------------------

_NAMES = ("b64encode", "b64decode", "java_hash", "index_put", "index_put_keys", "index_build_many", "parse_properties",
          "dispatch_props", "batch_properties",
          "msg_ids", "cq_put_units", "queue_groups", "encode_batch", "write_record", "dispatch_requests",
          "new_dispatch_request", "split_batch", "parse_record",
          "encode_records", "walk_records", "cq_scan", "crc32", "acl_mac", "acl_pads",
          "json_header", "json_head", "send_header_v2", "put_single", "new_slotted")

# The pure twin of each name: this module's ``_py_<name>``, else the function of that name in the
# record codec or the ConsumeQueue / ACL signature twins (one list of names, not one per twin).
_PURE_MODULES = (record_codec, consume_queue_pure, acl_signature_pure, json_header_pure, send_header_pure)


def _pure_twin(name: str):
    here = globals().get("_py_" + name)
    if here is not None:
        return here
    for module in _PURE_MODULES:
        if name in module.__all__:
            return getattr(module, name)
    raise ImportError(f"no pure twin of {name}")


pure: Speedups = types.SimpleNamespace(**{name: _pure_twin(name) for name in _NAMES})  # type: ignore[assignment]

compiled: Speedups | None
try:
    from common import _speedups as compiled  # type: ignore[no-redef]
except ImportError:
    compiled = None
if compiled is not None and not all(hasattr(compiled, name) for name in _NAMES):
    # a .so built from an older _speedups.c: never mix it with this module's contract
    warnings.warn("common._speedups is out of date (rebuild: python setup.py build_ext --inplace); "
                  "using the pure-Python twin", RuntimeWarning, stacklevel=1)
    compiled = None

IS_COMPILED: bool = compiled is not None and os.environ.get("ROCKETMQ_PY_PURE", "") != "1"
_impl: Speedups = compiled if IS_COMPILED else pure  # type: ignore[assignment]

java_hash = _impl.java_hash
b64encode = _impl.b64encode
b64decode = _impl.b64decode
index_put = _impl.index_put
index_put_keys = _impl.index_put_keys
index_build_many = _impl.index_build_many
parse_properties = _impl.parse_properties
dispatch_props = _impl.dispatch_props
batch_properties = _impl.batch_properties
msg_ids = _impl.msg_ids
cq_put_units = _impl.cq_put_units
queue_groups = _impl.queue_groups
write_record = _impl.write_record
dispatch_requests = _impl.dispatch_requests
new_dispatch_request = _impl.new_dispatch_request
split_batch = _impl.split_batch
parse_record = _impl.parse_record
encode_records = _impl.encode_records
encode_batch = _impl.encode_batch
walk_records = _impl.walk_records
cq_scan = _impl.cq_scan
crc32 = _impl.crc32
acl_mac = _impl.acl_mac
acl_pads = _impl.acl_pads
json_header = _impl.json_header
json_head = _impl.json_head
send_header_v2 = _impl.send_header_v2
put_single = _impl.put_single
new_slotted = _impl.new_slotted
# how the compiled twin computes record CRCs: "pclmul" (carry-less multiply folding, chosen at
# import when the CPU has it and ROCKETMQ_PY_NO_PCLMUL is not 1), "zlib" or "table"
CRC_IMPL: str = getattr(_impl, "CRC_IMPL", "zlib")

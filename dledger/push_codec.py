"""The binary form of PUSH bodies between two members of this implementation (sans-IO).

DLedger's PUSH body is fastjson with every entry body in base64 (protocol.py); a follower
parses the whole document and decodes each body. Between two members that both speak
this form the same messages travel as fixed fields plus the entries in their exact
data-file layout (entry.py), which the follower reads with one struct unpack per entry.

Negotiation (the driver's job, dledger/server.py): a member marks every PUSH response it
sends with the remoting ext field :data:`BINARY_EXT`; a leader that saw the mark from a
peer sends that peer binary pushes, each marked the same way, and gets binary answers.
A Java DLedger member or an older one never marks its answers, so it only ever gets
JSON; a binary push that is not answered in binary (a member replaced by one that does
not speak it) makes the leader go back to JSON for that peer.

Request (big-endian)::

    u8 version | i64 term | i64 commitIndex | i32 code | u8 type | 4 texts (group,
    remoteId, localId, leaderId) | u8 form (0 none, 1 entry, 2 batchEntry) | i32 count |
    count entries, each 48-byte header + body as in a data file

Response::

    u8 version | i32 code | i64 term | u8 has index | i64 index | i64 beginIndex |
    i64 endIndex | i32 count | 4 texts

The 4 texts are one block: u16 block length, then each text as u16 length + UTF-8 (length
0xFFFF for null). ValueError for anything malformed.
"""

from __future__ import annotations

import struct

from dledger.entry import BODY_OFFSET, HEAD_STRUCT, DLedgerEntry
from dledger.protocol import PushEntryRequest, PushEntryResponse, PushType

__all__ = [
    "BINARY_EXT",
    "BINARY_MARK",
    "encode_push_request",
    "decode_push_request",
    "encode_push_response",
    "decode_push_response",
    "encode_entries",
]

#: remoting ext field marking a binary PUSH body (requests) or the support of it (responses)
BINARY_EXT = "binaryPush"
BINARY_MARK = {BINARY_EXT: "1"}  # the ext fields of a marked command (shared, never modified)

_VERSION = 1
_REQ = struct.Struct(">BqqiB")
_RESP = struct.Struct(">BiqBqqqi")
_FORM = struct.Struct(">Bi")
_U16 = struct.Struct(">H")
_NULL = 0xFFFF
_HEAD = HEAD_STRUCT
_TYPE_CODE = {PushType.APPEND: 0, PushType.COMMIT: 1, PushType.COMPARE: 2, PushType.TRUNCATE: 3}
_TYPE_OF = {v: k for k, v in _TYPE_CODE.items()}
_FORM_NONE, _FORM_ENTRY, _FORM_BATCH = 0, 1, 2


# the four text fields are the same in every push of a term: one length-prefixed block, encoded and
# decoded once (bounded memos)
_MEMO_MAX = 64
_strs_memo: dict[tuple, bytes] = {}
_read_memo: dict[bytes, tuple[str | None, ...]] = {}


def _strs(*values: str | None) -> bytes:
    got = _strs_memo.get(values)
    if got is None:
        if len(_strs_memo) >= _MEMO_MAX:
            _strs_memo.clear()
        block = bytearray()
        for v in values:
            if v is None:
                block += _U16.pack(_NULL)
            else:
                b = v.encode()
                if len(b) >= _NULL:
                    raise ValueError("a PUSH text field is longer than 65534 bytes")
                block += _U16.pack(len(b))
                block += b
        if len(block) >= _NULL:
            raise ValueError("the PUSH text fields are longer than 65534 bytes")
        got = _strs_memo[values] = _U16.pack(len(block)) + bytes(block)
    return got


def _read_strs(mv: memoryview, p: int, n: int) -> tuple[tuple[str | None, ...], int]:
    """The block of ``n`` text fields at ``p``: (values, position after it)."""
    if p + 2 > len(mv):
        raise ValueError("truncated PUSH text fields")
    (ln,) = _U16.unpack_from(mv, p)
    p += 2
    end = p + ln
    if end > len(mv):
        raise ValueError("truncated PUSH text fields")
    key = bytes(mv[p:end])
    got = _read_memo.get(key)
    if got is None:
        got = _decode_strs(key, n)
        if len(_read_memo) >= _MEMO_MAX:
            _read_memo.clear()
        _read_memo[key] = got
    return got, end


def _decode_strs(block: bytes, n: int) -> tuple[str | None, ...]:
    out: list[str | None] = []
    p = 0
    end = len(block)
    for _ in range(n):
        if p + 2 > end:
            raise ValueError("truncated PUSH text field")
        (ln,) = _U16.unpack_from(block, p)
        p += 2
        if ln == _NULL:
            out.append(None)
            continue
        if p + ln > end:
            raise ValueError("truncated PUSH text field")
        out.append(str(block[p : p + ln], "utf-8"))
        p += ln
    if p != end:
        raise ValueError("bytes after the PUSH text fields")
    return tuple(out)


def encode_entries(entries: list[DLedgerEntry]) -> bytes:
    """Entries back to back in their data-file layout (what a binary push carries)."""
    parts: list[bytes] = []
    pack = _HEAD.pack
    for e in entries:
        body = e.body
        parts.append(pack(e.magic, BODY_OFFSET + len(body), e.index, e.term, e.pos, e.channel, e.chain_crc,
                          e.body_crc, len(body)))
        parts.append(body)
    return b"".join(parts)


def encode_push_request(m: PushEntryRequest, entries: bytes | None = None) -> bytes:
    """``m`` in the binary form; ``entries``: :func:`encode_entries` of its entries when the caller
    already has them (a leader pushing the same entries to several followers encodes them once)."""
    if m.batch_entry:
        form, listed = _FORM_BATCH, m.batch_entry
    elif m.entry is not None:
        form, listed = _FORM_ENTRY, [m.entry]
    else:
        form, listed = _FORM_NONE, []
    if entries is None:
        entries = encode_entries(listed)
    return b"".join((
        _REQ.pack(_VERSION, m.term, m.commit_index, int(m.code), _TYPE_CODE[m.type]),
        _strs(m.group, m.remote_id, m.local_id, m.leader_id),
        _FORM.pack(form, len(listed)),
        entries,
    ))


def decode_push_request(buf: bytes | memoryview) -> PushEntryRequest:
    with memoryview(buf) as mv:
        if len(mv) < _REQ.size:
            raise ValueError("truncated binary PUSH request")
        version, term, commit_index, code, type_code = _REQ.unpack_from(mv, 0)
        if version != _VERSION:
            raise ValueError(f"binary PUSH version {version} is not supported")
        ptype = _TYPE_OF.get(type_code)
        if ptype is None:
            raise ValueError(f"unknown PUSH type {type_code}")
        (group, remote_id, local_id, leader_id), p = _read_strs(mv, _REQ.size, 4)
        if p + _FORM.size > len(mv):
            raise ValueError("truncated binary PUSH request")
        form, count = _FORM.unpack_from(mv, p)
        p += _FORM.size
        if form not in (_FORM_NONE, _FORM_ENTRY, _FORM_BATCH) or count < 0 or (form == _FORM_ENTRY) != (count == 1) \
                or (form == _FORM_NONE) != (count == 0):
            raise ValueError(f"bad entry form {form} with {count} entries")
        entries = _read_entries(mv, p, count)
    return PushEntryRequest(
        group=group if group is not None else "", remote_id=remote_id, local_id=local_id, code=code,
        leader_id=leader_id, term=term, commit_index=commit_index, type=ptype,
        entry=entries[0] if form == _FORM_ENTRY else None,
        batch_entry=entries if form == _FORM_BATCH else [],
    )


def _read_entries(mv: memoryview, p: int, count: int) -> list[DLedgerEntry]:
    out: list[DLedgerEntry] = []
    n = len(mv)
    unpack = _HEAD.unpack_from
    for _ in range(count):
        if p + BODY_OFFSET > n:
            raise ValueError("truncated entry header in a binary PUSH")
        magic, size, index, term, pos, channel, chain_crc, body_crc, body_size = unpack(mv, p)
        end = p + size
        if body_size < 0 or size != BODY_OFFSET + body_size or end > n:
            raise ValueError(f"entry size {size} does not match body size {body_size} in a binary PUSH")
        out.append(DLedgerEntry(index, term, bytes(mv[p + BODY_OFFSET : end]), pos, magic, channel, chain_crc,
                                body_crc))
        p = end
    if p != n:
        raise ValueError(f"{n - p} bytes after the entries of a binary PUSH")
    return out


def encode_push_response(m: PushEntryResponse) -> bytes:
    index = m.index
    return _RESP.pack(_VERSION, int(m.code), m.term, index is not None, -1 if index is None else index,
                      m.begin_index, m.end_index, m.count) + _strs(m.group, m.remote_id, m.local_id, m.leader_id)


def decode_push_response(buf: bytes | memoryview) -> PushEntryResponse:
    with memoryview(buf) as mv:
        if len(mv) < _RESP.size:
            raise ValueError("truncated binary PUSH response")
        version, code, term, has_index, index, begin, end, count = _RESP.unpack_from(mv, 0)
        if version != _VERSION:
            raise ValueError(f"binary PUSH version {version} is not supported")
        (group, remote_id, local_id, leader_id), p = _read_strs(mv, _RESP.size, 4)
        if p != len(mv):
            raise ValueError("bytes after a binary PUSH response")
    return PushEntryResponse(
        group=group if group is not None else "", remote_id=remote_id, local_id=local_id, code=code,
        leader_id=leader_id, term=term, index=index if has_index else None, begin_index=begin, end_index=end,
        count=count,
    )

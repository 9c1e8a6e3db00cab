"""DLedgerEntry and its exact on-disk layouts (data entry and 32-byte index unit).

Data entry (big-endian, spec dledger.md §6.1)::

    0 magic i32 | 4 size i32 | 8 index i64 | 16 term i64 | 24 pos i64
    32 channel i32 | 36 chainCrc i32 | 40 bodyCrc i32 | 44 bodySize i32 | 48 body

Index unit (§6.2): magic i32 | pos i64 | size i32 | index i64 | term i64.
"""

from __future__ import annotations

import struct
from binascii import a2b_base64
from dataclasses import dataclass, field

from common import speedups
from common.errors import StoreError

__all__ = [
    "DLedgerEntry",
    "CURRENT_MAGIC",
    "BLANK_MAGIC",
    "HEADER_SIZE",
    "BODY_OFFSET",
    "POS_OFFSET",
    "INDEX_UNIT_SIZE",
    "encode_index_unit",
    "decode_index_unit",
    "EntryFormatError",
    "HEAD_STRUCT",
    "INDEX_STRUCT",
]

CURRENT_MAGIC = 1
BLANK_MAGIC = -1
POS_OFFSET = 24
HEADER_SIZE = 44
BODY_OFFSET = 48
INDEX_UNIT_SIZE = 32

_HEAD = struct.Struct(">iiqqqiiii")  # 48 bytes: everything up to the body
_INDEX = struct.Struct(">iqiqq")  # 32 bytes
assert _HEAD.size == BODY_OFFSET and _INDEX.size == INDEX_UNIT_SIZE
HEAD_STRUCT = _HEAD  # for writers that pack the header in place (pack_into a mapping)
INDEX_STRUCT = _INDEX

# PUSH bodies: the compiled base64 pair when built; else binascii directly (the pure twin of
# b64decode would only add its canonical-form check in front of the same lenient fallback)
_b64encode = speedups.b64encode
_b64decode = speedups.b64decode if speedups.IS_COMPILED else (lambda _s: None)


class EntryFormatError(StoreError, ValueError):
    """Bytes do not hold a well-formed DLedger entry."""


@dataclass(slots=True)
class DLedgerEntry:
    """One replicated log entry. ``pos`` is its absolute byte position in the data files."""

    index: int
    term: int
    body: bytes = b""
    pos: int = -1
    magic: int = CURRENT_MAGIC
    channel: int = 0
    chain_crc: int = 0
    body_crc: int = 0
    # the JSON form, built once: a leader pushes the same entry to every follower
    _json: dict | None = field(default=None, repr=False, compare=False)

    @property
    def size(self) -> int:
        """Total encoded size: 48 header bytes plus the body."""
        return BODY_OFFSET + len(self.body)

    def encode(self) -> bytes:
        """The entry exactly as DLedger writes it to a data file."""
        return (
            _HEAD.pack(
                self.magic,
                self.size,
                self.index,
                self.term,
                self.pos,
                self.channel,
                self.chain_crc,
                self.body_crc,
                len(self.body),
            )
            + self.body
        )

    @classmethod
    def decode(cls, buf: bytes | memoryview, offset: int = 0) -> DLedgerEntry:
        """Parse one entry at ``offset``; EntryFormatError if the header is inconsistent."""
        if len(buf) - offset < BODY_OFFSET:
            raise EntryFormatError("truncated entry header")
        magic, size, index, term, pos, channel, chain_crc, body_crc, body_size = _HEAD.unpack_from(
            buf, offset
        )
        if size != BODY_OFFSET + body_size or body_size < 0:
            raise EntryFormatError(f"entry size {size} does not match body size {body_size}")
        end = offset + size
        if end > len(buf):
            raise EntryFormatError("truncated entry body")
        return cls(
            index, term, bytes(buf[offset + BODY_OFFSET : end]), pos, magic, channel, chain_crc, body_crc
        )

    @staticmethod
    def peek_header(buf: bytes | memoryview, offset: int = 0) -> tuple[int, int, int, int, int, int]:
        """(magic, size, index, term, pos, bodySize) of the entry at ``offset`` without copying the body."""
        magic, size, index, term, pos, _c, _cc, _bc, body_size = _HEAD.unpack_from(buf, offset)
        return magic, size, index, term, pos, body_size

    def same_as(self, other: DLedgerEntry) -> bool:
        """DLedger's entry equality (size, magic, index, term, channel, pos, body)."""
        return (
            self.index == other.index
            and self.term == other.term
            and self.pos == other.pos
            and self.magic == other.magic
            and self.channel == other.channel
            and self.body == other.body
        )

    # JSON form used in PUSH requests (fastjson field names, body base64).
    def to_json(self) -> dict:
        """The entry as a PUSH carries it (cached: the entry must not change afterwards; do not
        modify the returned dict)."""
        j = self._json
        if j is not None and j["pos"] == self.pos and j["index"] == self.index:
            return j
        j = self._json = {
            "body": _b64encode(self.body),
            "bodyCrc": self.body_crc,
            "chainCrc": self.chain_crc,
            "channel": self.channel,
            "index": self.index,
            "magic": self.magic,
            "pos": self.pos,
            "size": self.size,
            "term": self.term,
        }
        return j

    @classmethod
    def from_json(cls, d: dict) -> DLedgerEntry:
        g = d.get
        body = g("body")
        if body:
            # canonical base64 (what DLedger sends) in one compiled call; anything else through
            # binascii's lenient decoder, as base64.b64decode did
            raw = _b64decode(body)
            if raw is None:
                raw = a2b_base64(body)
        else:
            raw = b""
        return cls(
            int(g("index", -1)),
            int(g("term", -1)),
            raw,
            int(g("pos", -1)),
            int(g("magic", CURRENT_MAGIC)),
            int(g("channel", 0)),
            int(g("chainCrc", 0)),
            int(g("bodyCrc", 0)),
        )


def encode_index_unit(entry: DLedgerEntry) -> bytes:
    """The 32-byte index unit DLedger stores at ``index * 32``."""
    return _INDEX.pack(entry.magic, entry.pos, entry.size, entry.index, entry.term)


def decode_index_unit(buf: bytes | memoryview, offset: int = 0) -> tuple[int, int, int, int, int]:
    """(magic, pos, size, index, term) of the index unit at ``offset``."""
    return _INDEX.unpack_from(buf, offset)

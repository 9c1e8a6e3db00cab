"""Bloom filter used for SQL92 bitmaps (RocketMQ ``filter.util.BloomFilter``, murmur3).

Each SQL92 consumer (group, topic) owns ``k`` bit positions of an ``m``-bit
map, derived from ``group + "#" + topic`` with murmur3_x64_128 (Guava's, seed
0): the first 64-bit half gives ``hash1`` (low 32 bits) and ``hash2`` (high
32 bits); position ``i`` (1..k) is ``hash1 + i*hash2`` as a Java int, bit-flipped
when negative, modulo ``m`` (Kirsch/Mitzenmacher double hashing).

Sizing: with error rate ``f`` (percent) and expected consumers ``n``,
``k = ceil(log0.5(f/100))`` and ``m = ceil(n * log2(100/f) * log2(e))`` rounded
up to whole bytes (f=20, n=32 gives k=3, m=112).

Bitmaps are byte arrays with bit ``p`` at ``byte[p // 8] & (1 << p % 8)``
(RocketMQ ``BitsArray``).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["murmur3_x64_128", "BloomFilter", "BloomFilterData", "set_bits", "all_bits_set"]

_M64 = 0xFFFFFFFFFFFFFFFF
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F


def _rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _fmix64(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _M64
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _M64
    k ^= k >> 33
    return k


def murmur3_x64_128(data: bytes, seed: int = 0) -> tuple[int, int]:
    """MurmurHash3 x64 128-bit of ``data``: ``(h1, h2)`` as unsigned 64-bit ints.

    Guava's ``HashCode.asLong()`` is ``h1`` (the first 8 little-endian bytes).
    """
    n = len(data)
    h1 = h2 = seed & _M64
    nblocks = n // 16
    for i in range(nblocks):
        k1, k2 = struct.unpack_from("<QQ", data, i * 16)
        k1 = (k1 * _C1) & _M64
        k1 = _rotl64(k1, 31)
        k1 = (k1 * _C2) & _M64
        h1 ^= k1
        h1 = _rotl64(h1, 27)
        h1 = (h1 + h2) & _M64
        h1 = (h1 * 5 + 0x52DCE729) & _M64
        k2 = (k2 * _C2) & _M64
        k2 = _rotl64(k2, 33)
        k2 = (k2 * _C1) & _M64
        h2 ^= k2
        h2 = _rotl64(h2, 31)
        h2 = (h2 + h1) & _M64
        h2 = (h2 * 5 + 0x38495AB5) & _M64
    tail = data[nblocks * 16 :]
    t = len(tail)
    if t:
        k1 = int.from_bytes(tail[:8], "little")
        k2 = int.from_bytes(tail[8:], "little") if t > 8 else 0
        if t > 8:
            k2 = (k2 * _C2) & _M64
            k2 = _rotl64(k2, 33)
            k2 = (k2 * _C1) & _M64
            h2 ^= k2
        k1 = (k1 * _C1) & _M64
        k1 = _rotl64(k1, 31)
        k1 = (k1 * _C2) & _M64
        h1 ^= k1
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    h1 = _fmix64(h1)
    h2 = _fmix64(h2)
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    return h1, h2


def _to_int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


@dataclass(slots=True)
class BloomFilterData:
    """The bit positions given to one consumer and the map size they were computed for."""

    bitPos: list[int] = field(default_factory=list)
    bitNum: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"bitNum": self.bitNum, "bitPos": list(self.bitPos)}

    @classmethod
    def from_dict(cls, d: Any) -> BloomFilterData | None:
        if not isinstance(d, dict):
            return None
        pos = d.get("bitPos")
        return cls(
            bitPos=[int(p) for p in pos] if isinstance(pos, list) else [],
            bitNum=int(d.get("bitNum") or 0),
        )


class BloomFilter:
    """Sizing and bit positions of the SQL92 bloom filter (see module doc)."""

    __slots__ = ("f", "n", "k", "m")

    def __init__(self, f: int = 20, n: int = 32):
        if f < 1 or f >= 100:
            raise ValueError("f must be greater or equal than 1 and less than 100")
        if n < 1:
            raise ValueError("n must be greater than 0")
        self.f = f
        self.n = n
        error_rate = f / 100.0
        self.k = math.ceil(math.log(error_rate) / math.log(0.5))
        if self.k < 1:  # pragma: no cover - impossible for 1 <= f < 100
            raise ValueError("hash function number is less than 1")
        m = math.ceil(n * (math.log(1 / error_rate) / math.log(2)) * (math.log(math.e) / math.log(2)))
        self.m = 8 * math.ceil(m / 8.0)

    def calc_bit_positions(self, s: str) -> list[int]:
        """The ``k`` bit positions of ``s``."""
        h1, _h2 = murmur3_x64_128(s.encode("utf-8"))
        hash1 = _to_int32(h1)
        hash2 = _to_int32(h1 >> 32)
        out = []
        for i in range(1, self.k + 1):
            combined = _to_int32(hash1 + i * hash2)
            if combined < 0:
                combined = ~combined
            out.append(combined % self.m)
        return out

    def generate(self, s: str) -> BloomFilterData:
        """BloomFilterData for ``s`` (``group + "#" + topic``)."""
        return BloomFilterData(bitPos=self.calc_bit_positions(s), bitNum=self.m)

    def is_valid(self, data: BloomFilterData | None) -> bool:
        """``data`` was made by a filter of this size."""
        return data is not None and data.bitNum == self.m and len(data.bitPos) == self.k

    def new_bitmap(self) -> bytearray:
        """An empty ``m``-bit map."""
        return bytearray(self.m // 8)

    def hash_to(self, data: BloomFilterData, bitmap: bytearray) -> None:
        """Set the bits of ``data`` in ``bitmap``."""
        if not self.is_valid(data):
            raise ValueError(f"bloom filter data does not belong to this filter: {data}")
        set_bits(bitmap, data.bitPos)

    def is_hit(self, data: BloomFilterData, bitmap: bytes | bytearray | memoryview) -> bool:
        """All bits of ``data`` are set in ``bitmap`` (the message may match)."""
        if not self.is_valid(data):
            raise ValueError(f"bloom filter data does not belong to this filter: {data}")
        if len(bitmap) * 8 != self.m:
            raise ValueError(f"bitmap has {len(bitmap) * 8} bits, expected {self.m}")
        return all_bits_set(bitmap, data.bitPos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BloomFilter) and (self.f, self.n, self.k, self.m) == (
            other.f,
            other.n,
            other.k,
            other.m,
        )

    def __hash__(self) -> int:
        return hash((self.f, self.n, self.k, self.m))

    def __repr__(self) -> str:
        return f"BloomFilter(f={self.f}, n={self.n}, k={self.k}, m={self.m})"


def set_bits(bitmap: bytearray, positions: Sequence[int]) -> None:
    """Set bit ``p`` (``byte[p // 8] |= 1 << p % 8``) for each position."""
    for p in positions:
        bitmap[p >> 3] |= 1 << (p & 7)


def all_bits_set(bitmap: bytes | bytearray | memoryview, positions: Sequence[int]) -> bool:
    """Every position is set in ``bitmap``."""
    for p in positions:
        if not bitmap[p >> 3] & (1 << (p & 7)):
            return False
    return True

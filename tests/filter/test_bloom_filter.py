"""Bloom filter of SQL92 bitmaps: murmur3 (Guava) vectors, RocketMQ sizing, BitsArray bit order."""

from __future__ import annotations

import pytest

from broker.filter import BloomFilter, BloomFilterData
from broker.filter.bloom_filter import all_bits_set, murmur3_x64_128, set_bits


@pytest.mark.parametrize(
    ("data", "digest"),
    [
        # canonical MurmurHash3_x64_128 (seed 0) test vectors, h1 || h2 little-endian
        (b"", "00000000000000000000000000000000"),
        (b"hello", "029bbd41b3a7d8cb191dae486a901e5b"),
        (b"The quick brown fox jumps over the lazy dog", "6c1b07bc7bbc4be347939ac4a93c437a"),
    ],
)
def test_murmur3_vectors(data, digest):
    h1, h2 = murmur3_x64_128(data)
    assert (h1.to_bytes(8, "little") + h2.to_bytes(8, "little")).hex() == digest


def test_murmur3_all_tail_lengths_are_stable():
    # every tail length 0..15 and more than one block go through distinct code paths
    seen = {murmur3_x64_128(bytes(range(n))) for n in range(40)}
    assert len(seen) == 40


@pytest.mark.parametrize(("f", "n", "k", "m"), [(20, 32, 3, 112), (20, 64, 3, 216), (10, 128, 4, 616), (1, 1, 7, 16)])
def test_sizing(f, n, k, m):
    b = BloomFilter(f, n)
    assert (b.k, b.m) == (k, m)
    assert b.m % 8 == 0


@pytest.mark.parametrize(("f", "n"), [(0, 32), (100, 32), (20, 0)])
def test_bad_sizing(f, n):
    with pytest.raises(ValueError):
        BloomFilter(f, n)


def test_positions_are_deterministic_and_in_range():
    b = BloomFilter(20, 32)
    for s in ("g#T", "group-with-ünïcode#主题", "x" * 100):
        pos = b.calc_bit_positions(s)
        assert len(pos) == b.k
        assert all(0 <= p < b.m for p in pos)
        assert pos == b.calc_bit_positions(s)
    assert b.calc_bit_positions("g1#T") != b.calc_bit_positions("g2#T")


def test_bits_array_order_and_hits():
    bitmap = bytearray(2)
    set_bits(bitmap, [0, 9, 15])
    assert bitmap == bytearray([0b00000001, 0b10000010])
    assert all_bits_set(bitmap, [0, 9]) and not all_bits_set(bitmap, [0, 1])

    b = BloomFilter(20, 32)
    data = b.generate("g#T")
    bits = b.new_bitmap()
    assert len(bits) == 14 and not b.is_hit(data, bits)
    b.hash_to(data, bits)
    assert b.is_hit(data, bits)


def test_validity_is_tied_to_the_filter_size():
    b = BloomFilter(20, 32)
    data = b.generate("g#T")
    assert b.is_valid(data)
    assert not b.is_valid(None)
    assert not b.is_valid(BloomFilterData(bitPos=data.bitPos, bitNum=64))
    assert not b.is_valid(BloomFilterData(bitPos=data.bitPos[:2], bitNum=b.m))
    assert not BloomFilter(20, 64).is_valid(data)
    with pytest.raises(ValueError):
        b.hash_to(BloomFilterData(bitPos=[1], bitNum=b.m), b.new_bitmap())
    with pytest.raises(ValueError):
        b.is_hit(data, bytearray(3))

"""Hostile input for the message and store decoders: the properties codec, the client batch splitter, the
CommitLog record parser and recovery walker (both twins, which must agree), message decoding. Random and
mutated input ends in the decoder's own error (or its "not a record" answer), never another exception."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from common import speedups
from common.message import (
    MessageDecodeError,
    decode_batch_body,
    decode_message,
    decode_messages,
    encode_batch_body,
    properties_to_string,
    string_to_properties,
)

TWINS = [t for t in (speedups.pure, speedups.compiled) if t is not None]

safe_text = st.text(alphabet=st.characters(blacklist_characters="\x00\x01\x02", blacklist_categories=("Cs",)),
                    min_size=1, max_size=12)


@given(st.text(max_size=200))
def test_string_to_properties_never_raises(s):
    props = string_to_properties(s)
    assert all(type(k) is str and type(v) is str for k, v in props.items())


@given(st.dictionaries(safe_text, safe_text, max_size=6))
def test_properties_round_trip(props):
    assert string_to_properties(properties_to_string(props)) == props


class _M:
    def __init__(self, body, flag, properties):
        self.body, self.flag, self.properties = body, flag, properties


batch_msgs = st.lists(
    st.builds(_M, st.binary(max_size=64), st.integers(-(2**31), 2**31 - 1),
              st.dictionaries(safe_text, safe_text, max_size=3)),
    min_size=1, max_size=5,
)
flips = st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=5)


def mutate(data: bytes, changes, truncate: int = 0) -> bytes:
    b = bytearray(data)
    if b:
        for pos, val in changes:
            b[pos % len(b)] = val
    return bytes(b[: max(0, len(b) - truncate)])


@given(batch_msgs, flips, st.integers(0, 8))
def test_batch_splitter_twins_agree_and_fail_cleanly(msgs, changes, truncate):
    body = mutate(encode_batch_body(msgs), changes, truncate)
    results = [t.split_batch(body) for t in TWINS]
    assert all(r == results[0] for r in results), results
    try:
        entries = decode_batch_body(body)
    except MessageDecodeError:
        return
    if not changes and not truncate:
        assert [e.body for e in entries] == [bytes(m.body) for m in msgs]


@given(st.binary(max_size=300))
def test_batch_splitter_on_random_bytes(body):
    results = [t.split_batch(body) for t in TWINS]
    assert all(r == results[0] for r in results)
    try:
        decode_batch_body(body)
    except MessageDecodeError:
        pass


def record(body: bytes, topic: bytes, props: bytes, phys: int = 0) -> bytes:
    buf = bytearray(len(body) + len(topic) + len(props) + 256)
    end = speedups.pure.write_record(
        buf, 0, body, topic, props, 1, 0, 7, phys, 0, 1_700_000_000_000, b"\x7f\x00\x00\x01", 1234,
        1_700_000_000_001, b"\x7f\x00\x00\x01", 10911, 0, 0, -1,
    )
    return bytes(buf[:end])


records = st.lists(
    st.tuples(st.binary(max_size=40), st.text(alphabet="abcXYZ_%-", min_size=1, max_size=20).map(str.encode),
              st.dictionaries(safe_text, safe_text, max_size=3).map(lambda d: properties_to_string(d).encode())),
    min_size=1, max_size=4,
)


def commit_log(recs) -> bytes:
    out = b""
    for body, topic, props in recs:
        out += record(body, topic, props, phys=len(out))
    return out


@given(records, flips, st.integers(0, 40), st.booleans())
def test_record_parser_and_walker_twins_agree(recs, changes, truncate, check_crc):
    clean = commit_log(recs)
    buf = mutate(clean, changes, truncate)
    walks = [t.walk_records(buf, 0, 0, check_crc) for t in TWINS]
    assert all(w == walks[0] for w in walks), walks
    if not changes and not truncate:
        assert walks[0][:2] == (len(buf), len(recs))
    pos = 0
    while pos < len(buf):
        parsed = [t.parse_record(buf, pos, True) for t in TWINS]
        assert all(p == parsed[0] for p in parsed), parsed
        if parsed[0] is None or parsed[0][0] <= 0:
            break
        pos += parsed[0][0]
    try:
        msgs = decode_messages(buf)
    except MessageDecodeError:
        return
    if not changes and not truncate:
        assert [m.body for m in msgs] == [r[0] for r in recs]


@given(st.binary(max_size=400), st.integers(0, 400))
def test_record_decoders_on_random_bytes(buf, pos):
    pos = min(pos, len(buf))
    parsed = [t.parse_record(buf, pos, False) for t in TWINS]
    assert all(p == parsed[0] for p in parsed)
    walks = [t.walk_records(buf, pos, 0, True) for t in TWINS]
    assert all(w == walks[0] for w in walks)
    try:
        decode_message(buf, pos)
    except MessageDecodeError:
        pass

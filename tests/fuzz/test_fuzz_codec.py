"""Hostile input for the remoting codec: random and mutated frames end in RemoteProtocolError (never another
exception, a hang or an allocation the input did not pay for); valid commands survive encode -> chunked
feed -> decode unchanged."""

from __future__ import annotations

import struct

from hypothesis import assume, example, given
from hypothesis import strategies as st

from remoting.codec import FrameDecoder, decode_header, encode_bytes
from remoting.codes import SerializeType
from remoting.command import RemotingCommand
from remoting.errors import RemoteProtocolError

MAX = 1 << 20

text = st.text(max_size=40)
ext_fields = st.dictionaries(st.text(min_size=1, max_size=20), st.text(max_size=40), max_size=8)


@st.composite
def commands(draw) -> RemotingCommand:
    return RemotingCommand(
        draw(st.integers(-(2**15), 2**15 - 1)),  # the binary header holds a short
        language=draw(st.integers(0, 12)),
        version=draw(st.integers(-(2**15), 2**15 - 1)),
        opaque=draw(st.integers(-(2**31), 2**31 - 1)),
        flag=draw(st.integers(0, 3)),
        remark=draw(st.none() | text),
        ext_fields=draw(st.none() | ext_fields),
        body=draw(st.none() | st.binary(min_size=1, max_size=200)),
        serialize_type=draw(st.sampled_from([SerializeType.JSON, SerializeType.ROCKETMQ])),
    )


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    out, prev = [], 0
    for p in points:
        out.append(data[prev:p])
        prev = p
    out.append(data[prev:])
    return out


def feed_all(dec: FrameDecoder, chunks: list[bytes]) -> list[RemotingCommand]:
    got: list[RemotingCommand] = []
    fed = 0
    for c in chunks:
        fed += len(c)
        got.extend(dec.feed(c))
        assert dec.buffered <= fed  # nothing allocated beyond what arrived
    return got


def same(a: RemotingCommand, b: RemotingCommand) -> bool:
    # the binary header writes an empty remark as length 0, which reads back as null (as in Java)
    ra = a.remark if a.serialize_type == SerializeType.JSON else (a.remark or None)
    return (a.code, a.opaque, a.flag, a.version, ra, a.ext_fields or None, bytes(a.body or b"") or None,
            a.serialize_type) == (b.code, b.opaque, b.flag, b.version, b.remark, b.ext_fields or None,
                                  bytes(b.body or b"") or None, b.serialize_type)


@given(st.lists(commands(), min_size=1, max_size=5), st.lists(st.integers(0, 10_000), max_size=8))
def test_round_trip_in_any_chunking(cmds, cuts):
    wire = b"".join(encode_bytes(c) for c in cmds)
    got = feed_all(FrameDecoder(MAX), chunked(wire, cuts))
    assert len(got) == len(cmds)
    for a, b in zip(cmds, got, strict=True):
        assert same(a, b), (a, b)


@given(st.binary(max_size=600), st.lists(st.integers(0, 1000), max_size=6))
@example(struct.pack(">i", 2**31 - 1) + b"\x00\x00\x00\x10", [])
@example(struct.pack(">i", MAX - 8) + b"\x00\x00\x00\x02{}", [])
@example(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", [])  # a TLS ClientHello on a plaintext port
def test_random_bytes_end_in_protocol_error(data, cuts):
    dec = FrameDecoder(MAX)
    try:
        feed_all(dec, chunked(data, cuts))
    except RemoteProtocolError:
        assert dec.broken
        return
    assert dec.buffered <= len(data)


@given(commands(), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6),
       st.integers(0, 30))
def test_mutated_frames_end_in_protocol_error(cmd, flips, truncate):
    wire = bytearray(encode_bytes(cmd))
    for pos, val in flips:
        wire[pos % len(wire)] = val
    wire = bytes(wire[: max(0, len(wire) - truncate)])
    dec = FrameDecoder(MAX)
    try:
        for c in dec.feed(wire):
            assert isinstance(c, RemotingCommand)
            assert c.ext_fields is None or all(type(k) is str and type(v) is str for k, v in c.ext_fields.items())
    except RemoteProtocolError:
        pass


def test_huge_length_prefix_is_refused_without_allocating():
    dec = FrameDecoder()  # the default 16 MiB limit
    try:
        dec.feed(struct.pack(">i", 2**31 - 1) + b"\x00")
    except RemoteProtocolError as e:
        assert "bad frame length" in str(e)
    else:
        raise AssertionError("a 2 GiB frame was accepted")
    dec = FrameDecoder()
    dec.feed(struct.pack(">iI", 15 * 1024 * 1024, 2) + b"{}")  # a large but allowed frame: only buffered
    assert dec.buffered == 10


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
header_keys = st.sampled_from(["code", "language", "version", "opaque", "flag", "remark", "extFields",
                               "serializeTypeCurrentRPC"])


@given(st.dictionaries(header_keys, json_values, max_size=7))
@example({"code": 10, "opaque": "99999999999999999999999"})
@example({"code": 1e300})
def test_json_headers_of_any_shape(d):
    import json

    try:
        raw = json.dumps(d).encode()
    except ValueError:  # NaN is not JSON: orjson would refuse it too
        assume(False)
    try:
        cmd = decode_header(SerializeType.JSON, raw)
    except RemoteProtocolError:
        return
    for v in (cmd.code, cmd.opaque, cmd.flag, cmd.version):
        assert type(v) is int and -(2**31) <= v < 2**31  # Java int fields
    assert cmd.remark is None or type(cmd.remark) is str
    assert cmd.ext_fields is None or all(type(k) is str and type(v) is str for k, v in cmd.ext_fields.items())
    # whatever decodes can be answered: the response to it must encode
    encode_bytes(cmd.response_to(1, "x"))


@given(st.sampled_from([SerializeType.JSON, SerializeType.ROCKETMQ]), st.binary(max_size=300))
def test_header_decoders_on_random_bytes(stype, raw):
    try:
        decode_header(stype, raw)
    except RemoteProtocolError:
        pass

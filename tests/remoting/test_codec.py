"""Sans-IO codec tests: golden frames written by hand from the spec layout, round trips, stream splits."""

from __future__ import annotations

import os
import struct

import pytest

from remoting.codec import (
    _BIN_FIXED,
    _PREFIX,
    BINARY_HEADER,
    FRAME_PREFIX,
    FrameDecoder,
    decode_header,
    encode,
    encode_bytes,
    encode_header,
)
from remoting.codes import CURRENT_VERSION, LanguageCode, RequestCode, ResponseCode, SerializeType
from remoting.command import RemotingCommand
from remoting.errors import LocalProtocolError, RemoteProtocolError

# -- golden frames (hand-built from remoting-protocol.md §2-§4) ------------------------

# GET_ROUTEINFO_BY_TOPIC request, JSON header (the spec's example header verbatim).
# length = 4 + 131 = 0x87; word = type 0 << 24 | 131 (0x83).
JSON_HEADER = (
    b'{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA",'
    b'"opaque":3,"serializeTypeCurrentRPC":"JSON","version":407}'
)
GOLDEN_JSON_REQUEST = bytes.fromhex("00000087" "00000083") + JSON_HEADER

# TOPIC_NOT_EXIST response with a non-ASCII remark and a 2-byte body:
# header 165 bytes (0xa5), length = 4 + 165 + 2 = 171 (0xab).
JSON_RESPONSE_HEADER = (
    '{"code":17,"flag":1,"language":"JAVA","opaque":3,'
    '"remark":"No topic route info in name server for the topic: Tópico",'
    '"serializeTypeCurrentRPC":"JSON","version":407}'
).encode()
GOLDEN_JSON_RESPONSE = bytes.fromhex("000000ab" "000000a5") + JSON_RESPONSE_HEADER + b"\x01\x02"

# The same request in the ROCKETMQ binary header, body "hello":
GOLDEN_BINARY_REQUEST = bytes.fromhex(
    "00000032"  # length = 4 + 41 + 5 = 50
    "01000029"  # serialize type 1, header length 41
    "0069"  # code 105
    "00"  # language JAVA
    "0197"  # version 407
    "00000003"  # opaque 3
    "00000000"  # flag 0
    "00000000"  # remark: length 0 = null
    "00000014"  # extFields: 20 bytes
    "0005" "746f706963"  # key "topic"
    "00000009" "546f70696354657374"  # value "TopicTest"
    "68656c6c6f"  # body "hello"
)

# A binary response: code 17, language PYTHON, opaque 42, flag 1, remark "é" (2 UTF-8
# bytes), no extFields, no body.
def _binary_response_frame() -> bytes:
    # Built field by field so the arithmetic is visible: 13 fixed + 4 + 2 (remark) + 4 (ext len) = 23.
    header = bytes.fromhex("0011" "03" "0197" "0000002a" "00000001" "00000002" "c3a9" "00000000")
    assert len(header) == 23
    return bytes.fromhex("0000001b" "01000017") + header


GOLDEN_BINARY_RESPONSE = _binary_response_frame()


def expected_request(stype: int, body: bytes | None) -> RemotingCommand:
    return RemotingCommand(
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        language=LanguageCode.JAVA,
        version=407,
        opaque=3,
        flag=0,
        ext_fields={"topic": "TopicTest"},
        body=body,
        serialize_type=stype,
    )


def test_golden_json_request_decodes():
    [cmd] = FrameDecoder().feed(GOLDEN_JSON_REQUEST)
    assert cmd == expected_request(SerializeType.JSON, None)
    assert cmd.body is None and not cmd.is_response and not cmd.is_oneway


def test_golden_json_request_encodes_byte_exact():
    assert encode_bytes(expected_request(SerializeType.JSON, None)) == GOLDEN_JSON_REQUEST


def test_golden_json_response_both_ways():
    cmd = RemotingCommand(
        ResponseCode.TOPIC_NOT_EXIST,
        opaque=3,
        flag=1,
        remark="No topic route info in name server for the topic: Tópico",
        body=b"\x01\x02",
    )
    assert encode_bytes(cmd) == GOLDEN_JSON_RESPONSE
    [got] = FrameDecoder().feed(GOLDEN_JSON_RESPONSE)
    assert got == cmd and got.is_response and got.body == b"\x01\x02"


def test_golden_binary_request_both_ways():
    cmd = expected_request(SerializeType.ROCKETMQ, b"hello")
    assert encode_bytes(cmd) == GOLDEN_BINARY_REQUEST
    [got] = FrameDecoder().feed(GOLDEN_BINARY_REQUEST)
    assert got == cmd and got.body == b"hello"


def test_golden_binary_response_both_ways():
    cmd = RemotingCommand(
        ResponseCode.TOPIC_NOT_EXIST, language=LanguageCode.PYTHON, version=407, opaque=42, flag=1,
        remark="é", serialize_type=SerializeType.ROCKETMQ,
    )
    [got] = FrameDecoder().feed(GOLDEN_BINARY_RESPONSE)
    assert got == cmd
    assert got.language == LanguageCode.PYTHON and got.remark == "é" and got.ext_fields is None
    assert encode_bytes(cmd) == GOLDEN_BINARY_RESPONSE


def test_json_header_from_other_clients_is_tolerated():
    # Keys in any order, numbers and booleans in extFields, unknown keys, a Go client.
    header = (
        b'{"version":317,"unknownKey":[1,2],"opaque":9,"language":"GO","flag":2,"code":15,'
        b'"extFields":{"queueId":3,"commitOffset":12345678901,"unitMode":false,"x":true,"n":null,"s":"v"}}'
    )
    frame = struct.pack(">iI", 4 + len(header), len(header)) + header
    [cmd] = FrameDecoder().feed(frame)
    assert cmd.code == 15 and cmd.version == 317 and cmd.opaque == 9 and cmd.is_oneway
    assert cmd.language == LanguageCode.GO
    assert cmd.ext_fields == {"queueId": "3", "commitOffset": "12345678901", "unitMode": "false", "x": "true", "s": "v"}
    assert cmd.remark is None and cmd.body is None


def test_json_header_unknown_language_and_missing_keys():
    header = b'{"code":34,"language":"COBOL"}'
    [cmd] = FrameDecoder().feed(struct.pack(">iI", 4 + len(header), len(header)) + header)
    assert cmd.code == 34 and cmd.language == LanguageCode.OTHER and cmd.opaque == 0 and cmd.flag == 0


def test_json_encoding_writes_java_values():
    cmd = RemotingCommand.request(RequestCode.PULL_MESSAGE, {"queueId": 1, "commitOffset": 10**12, "b": True, "z": None})
    cmd.language = LanguageCode.PYTHON
    h = encode_header(cmd)
    assert h.startswith(b'{"code":11,"extFields":{"queueId":"1","commitOffset":"1000000000000","b":"true"},"flag":0,')
    assert b'"language":"PYTHON"' in h and h.endswith(b'"serializeTypeCurrentRPC":"JSON","version":407}')
    # a value put in as a non-string later is still written as a string
    cmd.ext_fields["late"] = 7
    assert b'"late":"7"' in encode_header(cmd)


def test_binary_duplicate_key_last_wins_and_empty_strings():
    ext = b"".join(
        [
            struct.pack(">h", 1) + b"k" + struct.pack(">i", 1) + b"1",
            struct.pack(">h", 1) + b"k" + struct.pack(">i", 1) + b"2",
            struct.pack(">h", 1) + b"e" + struct.pack(">i", 0),
        ]
    )
    header = _BIN_FIXED.pack(10, 0, 407, 1, 0) + struct.pack(">i", 0) + struct.pack(">i", len(ext)) + ext
    cmd = decode_header(SerializeType.ROCKETMQ, header)
    assert cmd.ext_fields == {"k": "2", "e": ""}


# -- construct declarations agree with the struct hot path -----------------------------------


def test_construct_and_struct_agree():
    for stype, frame in ((0, GOLDEN_JSON_REQUEST), (1, GOLDEN_BINARY_REQUEST), (1, GOLDEN_BINARY_RESPONSE)):
        p = FRAME_PREFIX.parse(frame)
        length, word = _PREFIX.unpack_from(frame)
        assert (p.length, p.serialize_type, p.header_length) == (length, word >> 24, word & 0xFFFFFF)
        assert p.serialize_type == stype
        assert FRAME_PREFIX.build(p) == frame[:8]
    cmd = RemotingCommand(
        300, language=LanguageCode.RUST, version=-2, opaque=-5, flag=3, remark="ré",
        ext_fields={"a": "1", "ключ": "значение"}, serialize_type=1,
    )
    h = encode_header(cmd)
    c = BINARY_HEADER.parse(h)
    assert (c.code, c.language, c.version, c.opaque, c.flag, c.remark) == (300, 12, -2, -5, 3, "ré")
    assert {e.key: e.value for e in c.ext_fields} == cmd.ext_fields
    built = BINARY_HEADER.build(
        dict(code=300, language=12, version=-2, opaque=-5, flag=3, remark="ré",
             ext_fields=[dict(key=k, value=v) for k, v in cmd.ext_fields.items()])
    )
    assert built == h
    assert decode_header(1, built) == RemotingCommand(
        300, language=12, version=-2, opaque=-5, flag=3, remark="ré", ext_fields=cmd.ext_fields, serialize_type=1
    )


# -- round trips -----------------------------------------------------------------------------

BODIES = [None, b"", b"x", "ünïcødé ✓ 中文".encode(), bytes(range(256)) * 4, b"\xab" * (5 * 1024 * 1024 + 3)]


@pytest.mark.parametrize("stype", [SerializeType.JSON, SerializeType.ROCKETMQ])
@pytest.mark.parametrize("body", BODIES, ids=lambda b: "none" if b is None else f"{len(b)}B")
def test_round_trip(stype, body):
    cmd = RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2,
        {"a": "producer-组", "b": "Topic", "i": "KEYS\x01k1\x02TAGS\x01ä\x02", "empty": ""},
        body=body,
        serialize_type=stype,
    )
    cmd.remark = "remarque ü" if body else None
    [got] = FrameDecoder().feed(encode_bytes(cmd))
    assert got == cmd
    assert got.body == (body or None)  # an empty body decodes as null, as in Java


def test_encode_does_not_copy_the_body():
    body = bytearray(b"b" * 4096)
    view = memoryview(body)
    chunks = encode(RemotingCommand.request(1, body=view))
    assert len(chunks) == 2 and chunks[1] is view
    assert struct.unpack(">i", chunks[0][:4])[0] == 4 + (len(chunks[0]) - 8) + 4096


def _frames():
    return [
        RemotingCommand.request(1, {"k": "v"}, b"first"),
        RemotingCommand.request(2, None, b"\x00" * 1000, serialize_type=1),
        RemotingCommand.response(0, "ok é"),
        RemotingCommand.request(3, {"x": "y" * 300}, None, oneway=True, serialize_type=1),
    ]


def test_stream_fed_whole_byte_by_byte_and_glued():
    cmds = _frames()
    stream = b"".join(encode_bytes(c) for c in cmds)
    assert FrameDecoder().feed(stream) == cmds

    d = FrameDecoder()
    got = []
    for i in range(len(stream)):
        got += d.feed(stream[i : i + 1])
    assert got == cmds and d.buffered == 0

    # each frame glued to the first bytes of the next one, every split point
    one, two = encode_bytes(cmds[0]), encode_bytes(cmds[1])
    for cut in range(len(two) + 1):
        d = FrameDecoder()
        first = d.feed(one + two[:cut])
        rest = d.feed(two[cut:])
        assert first + rest == cmds[:2]
        assert first == (cmds[:2] if cut == len(two) else cmds[:1])


def test_stream_split_in_random_chunks():
    import random

    rnd = random.Random(7)
    cmds = _frames() * 20
    stream = b"".join(encode_bytes(c) for c in cmds)
    d = FrameDecoder()
    got = []
    pos = 0
    while pos < len(stream):
        n = rnd.randint(1, 700)
        got += d.feed(memoryview(stream)[pos : pos + n])
        pos += n
    assert got == cmds


# -- malformed input ---------------------------------------------------------------------------


def _frame(word: int, header: bytes, body: bytes = b"", length: int | None = None) -> bytes:
    return struct.pack(">iI", 4 + len(header) + len(body) if length is None else length, word) + header + body


MALFORMED = {
    "negative length": struct.pack(">i", -1) + b"\0" * 8,
    "length below 4": struct.pack(">i", 3) + b"\0" * 8,
    "huge length": struct.pack(">i", 0x7FFFFFF0) + b"\0" * 8,
    "bad json": _frame(5, b"{code:"),
    "json not an object": _frame(2, b"[1]"),
    "json bad code type": _frame(12, b'{"code":[1]}'),
    "json extFields not object": _frame(17, b'{"extFields":"x"}'),
    "json not utf8": _frame(4, b'{"\xff"'),
    "unknown serialize type": _frame((7 << 24) | 2, b"{}"),
    "header length > total": _frame(100, b"{}", length=6),
    "binary too short": _frame((1 << 24) | 5, b"\0" * 5),
    "binary remark length > header": _frame((1 << 24) | 21, _BIN_FIXED.pack(1, 0, 1, 1, 0) + struct.pack(">ii", 999, 0)),
    "binary negative ext length": _frame((1 << 24) | 21, _BIN_FIXED.pack(1, 0, 1, 1, 0) + struct.pack(">ii", 0, -4)),
    "binary key overruns": _frame(
        (1 << 24) | 24, _BIN_FIXED.pack(1, 0, 1, 1, 0) + struct.pack(">ii", 0, 3) + b"\x00\x09k"
    ),
    "garbage": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_raises_and_stays_broken(name):
    good = encode_bytes(RemotingCommand.request(1, {"k": "v"}))
    d = FrameDecoder()
    with pytest.raises(RemoteProtocolError) as ei:
        d.feed(good + MALFORMED[name])
    assert ei.value.frames and ei.value.frames[0].code == 1  # the good frame before it is kept
    with pytest.raises(RemoteProtocolError):
        d.feed(good)
    assert d.broken


def test_oversized_frame_rejected_before_it_arrives():
    d = FrameDecoder(max_frame_size=1024)
    ok = encode_bytes(RemotingCommand.request(1, body=b"x" * 900))
    assert len(d.feed(ok)) == 1
    with pytest.raises(RemoteProtocolError, match="frame length"):
        d.feed(struct.pack(">i", 1021))  # 4 + 1021 > 1024, only the length field has arrived


def test_bad_header_word_rejected_before_body_arrives():
    with pytest.raises(RemoteProtocolError, match="serialize type"):
        FrameDecoder().feed(struct.pack(">iI", 1000, (9 << 24) | 10))


def test_local_errors_on_encode():
    with pytest.raises(LocalProtocolError):
        encode(RemotingCommand(1, serialize_type=5))
    with pytest.raises(LocalProtocolError):
        encode(RemotingCommand(70000, serialize_type=SerializeType.ROCKETMQ))  # code is int16 in binary
    with pytest.raises(LocalProtocolError):
        encode(RemotingCommand(1, ext_fields={1: "x"}))


def test_command_helpers():
    req = RemotingCommand.request(RequestCode.SEND_MESSAGE, {"a": 1}, b"b", serialize_type=SerializeType.ROCKETMQ)
    req2 = RemotingCommand.request(RequestCode.SEND_MESSAGE)
    assert req2.opaque != req.opaque and req.version == CURRENT_VERSION == 407
    resp = req.response_to(ResponseCode.SUCCESS, "ok", {"msgId": "X"})
    assert resp.opaque == req.opaque and resp.is_response and resp.serialize_type == SerializeType.ROCKETMQ
    assert resp.ext_fields == {"msgId": "X"} and resp.remark == "ok"
    assert not req.is_oneway and req.mark_oneway().is_oneway
    assert RemotingCommand.request(1, oneway=True).flag == 2


def test_fuzz_any_input_parses_or_raises_remote_protocol_error():
    """h11's invariant: mutated frames either decode or raise RemoteProtocolError, nothing else."""
    import random

    rnd = random.Random(20240607)
    seeds = [encode_bytes(c) for c in _frames()] + [GOLDEN_JSON_REQUEST, GOLDEN_BINARY_REQUEST, GOLDEN_BINARY_RESPONSE]
    outcomes = {"ok": 0, "error": 0}
    for _ in range(int(os.environ.get("FUZZ_ROUNDS", "3000"))):
        data = bytearray(rnd.choice(seeds))
        for _ in range(rnd.randint(1, 4)):
            op = rnd.randrange(3)
            pos = rnd.randrange(len(data))
            if op == 0:
                data[pos] ^= 1 << rnd.randrange(8)
            elif op == 1:
                data[pos:pos] = bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 8)))
            else:
                del data[pos : pos + rnd.randint(1, 8)]
        d = FrameDecoder(max_frame_size=1 << 20)
        try:
            pos = 0
            while pos < len(data):
                n = rnd.randint(1, 64)
                for cmd in d.feed(bytes(data[pos : pos + n])):
                    assert isinstance(cmd, RemotingCommand)
                pos += n
            outcomes["ok"] += 1
        except RemoteProtocolError as e:
            assert e.__cause__ is None, f"internal error re-typed at the boundary: {e.__cause__!r}"
            outcomes["error"] += 1
    assert outcomes["ok"] and outcomes["error"]  # both paths exercised


@pytest.mark.parametrize("opaque", [0, 1, -5, 2**31 - 1])
@pytest.mark.parametrize("code", [ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR])
def test_response_frame_is_what_encode_gives_for_the_command(opaque, code):
    from remoting.codec import response_frame
    from remoting.codes import RPC_TYPE_RESPONSE

    ext = {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true", "msgId": "7F00000100002A9F0000000000000400",
           "queueId": "3", "queueOffset": "12345", "q\u00e9": "\u00e9t\u00e9 \"x\"\n"}
    cmd = RemotingCommand(code, ext_fields=ext, opaque=opaque, flag=RPC_TYPE_RESPONSE)
    assert (cmd.language, cmd.version, cmd.remark) == (LanguageCode.JAVA, CURRENT_VERSION, None)
    frame = response_frame(code, opaque, ext)
    assert frame == encode_bytes(cmd)
    assert decode_header(SerializeType.JSON, frame[8:]).ext_fields == ext
    # anything but plain strings: None, the caller encodes a command
    assert response_frame(code, opaque, {"queueId": 3}) is None

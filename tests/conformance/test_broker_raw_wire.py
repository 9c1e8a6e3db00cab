"""The broker's response frames read by a spec-only decoder (remoting-protocol.md §2-§3, §8).

Go's and C++'s clients decode ``extFields`` as a string->string map, so every
value in a JSON header must be a JSON string, and ``language`` an enum name.
Frames are built with struct/json here, not with our codec.
"""

from __future__ import annotations

import json
import socket
import struct
import time

import pytest

from tests.broker.helpers import BrokerProc

HEADER_KEYS = {"code", "flag", "language", "opaque", "version", "remark", "extFields", "serializeTypeCurrentRPC"}


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        assert chunk, "connection closed by the broker"
        buf += chunk
    return buf


def _frame(code, opaque, ext, body=b""):
    header = json.dumps({"code": code, "extFields": ext, "flag": 0, "language": "GO", "opaque": opaque,
                         "serializeTypeCurrentRPC": "JSON", "version": 407}, separators=(",", ":")).encode()
    return struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body


def _read(sock):
    total, word = struct.unpack(">ii", _recv_exact(sock, 8))
    stype, hlen = (word >> 24) & 0xFF, word & 0xFFFFFF
    assert stype == 0, "a JSON request is answered in JSON here"
    header = json.loads(_recv_exact(sock, hlen))
    body = _recv_exact(sock, total - 4 - hlen)
    return header, body


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProc(tmp_path_factory.mktemp("raw"), "raw")
    b.start()
    yield b
    b.stop()


def test_response_headers_are_string_maps(broker):
    topic = "ConfRaw"
    now = str(int(time.time() * 1000))
    requests = [
        (17, {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6",
              "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}, b""),
        (310, {"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": now, "h": "0",
               "i": "KEYS\x01rk\x02"}, b"raw body"),
        (10, {"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
              "queueId": "0", "sysFlag": "0", "bornTimestamp": now, "flag": "0"}, b"raw v1"),
        (30, {"topic": topic, "queueId": "0"}, b""),
        (31, {"topic": topic, "queueId": "0"}, b""),
        (14, {"consumerGroup": "rawg", "topic": topic, "queueId": "0"}, b""),
        (11, {"consumerGroup": "rawg", "topic": topic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
              "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*",
              "subVersion": "0", "expressionType": "TAG"}, b""),
        (11, {"consumerGroup": "rawg", "topic": topic, "queueId": "0", "queueOffset": "99", "maxMsgNums": "32",
              "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*",
              "subVersion": "0", "expressionType": "TAG"}, b""),
        (26, {}, b""),
        (999, {}, b""),
    ]
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        answers = {}
        for opaque, (code, ext, body) in enumerate(requests, start=1):
            s.sendall(_frame(code, opaque, ext, body))
            header, rbody = _read(s)
            assert header["opaque"] == opaque and header["flag"] & 1 == 1
            assert set(header) <= HEADER_KEYS, set(header) - HEADER_KEYS
            assert isinstance(header["language"], str) and header["language"].isupper()
            for k, v in (header.get("extFields") or {}).items():
                assert isinstance(v, str), f"code {code}: extFields[{k!r}] = {v!r} is not a JSON string"
            answers[opaque] = (code, header, rbody)
    assert answers[1][1]["code"] == 0
    send = answers[2][1]
    assert send["code"] == 0 and set(send["extFields"]) >= {"msgId", "queueId", "queueOffset"}
    assert answers[3][1]["code"] == 0 and answers[3][1]["extFields"]["queueOffset"] == "1"
    pulled = answers[7]
    assert pulled[1]["code"] in (0, 19, 20)  # dispatch may lag; the types are what this test is about
    assert answers[8][1]["code"] in (19, 21)
    assert answers[10][1]["code"] == 3


def _binary_frame(code, opaque, ext, body=b"", flag=0):
    entries = b"".join(struct.pack(">h", len(k.encode())) + k.encode() + struct.pack(">i", len(v.encode()))
                       + v.encode() for k, v in ext.items())
    header = struct.pack(">hbhii", code, 9, 407, opaque, flag) + struct.pack(">i", 0) + struct.pack(
        ">i", len(entries)) + entries
    return struct.pack(">ii", 4 + len(header) + len(body), (1 << 24) | len(header)) + header + body


def _read_any(sock):
    total, word = struct.unpack(">ii", _recv_exact(sock, 8))
    stype, hlen = (word >> 24) & 0xFF, word & 0xFFFFFF
    raw = _recv_exact(sock, hlen)
    body = _recv_exact(sock, total - 4 - hlen)
    if stype == 0:
        h = json.loads(raw)
        return 0, h["code"], h["opaque"], h.get("remark"), h.get("extFields") or {}, body
    code, _lang, _ver, opaque, _flag = struct.unpack_from(">hbhii", raw, 0)
    pos = 13
    (rlen,) = struct.unpack_from(">i", raw, pos)
    remark = raw[pos + 4:pos + 4 + rlen].decode() if rlen else None
    pos += 4 + rlen
    (elen,) = struct.unpack_from(">i", raw, pos)
    pos += 4
    end, ext = pos + elen, {}
    while pos < end:
        (klen,) = struct.unpack_from(">h", raw, pos)
        k = raw[pos + 2:pos + 2 + klen].decode()
        pos += 2 + klen
        (vlen,) = struct.unpack_from(">i", raw, pos)
        ext[k] = raw[pos + 4:pos + 4 + vlen].decode()
        pos += 4 + vlen
    return 1, code, opaque, remark, ext, body


def test_binary_requests_get_binary_answers(broker):
    """§2/§4: a ROCKETMQ-encoded request is answered in ROCKETMQ encoding (admin and send paths)."""
    topic = "ConfRawBin"
    now = str(int(time.time() * 1000))
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        s.sendall(_binary_frame(17, 1, {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "1",
                                        "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG",
                                        "order": "false"}))
        assert _read_any(s)[:3] == (1, 0, 1)
        s.sendall(_binary_frame(310, 2, {"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0",
                                         "g": now, "h": "0"}, b"bin"))
        stype, code, opaque, _remark, ext, _ = _read_any(s)
        assert (stype, code, opaque) == (1, 0, 2) and ext["queueOffset"] == "0" and ext["queueId"] == "0"
        s.sendall(_binary_frame(30, 3, {"topic": topic, "queueId": "0"}))
        stype, code, opaque, _remark, ext, _ = _read_any(s)
        assert (stype, code, opaque) == (1, 0, 3) and set(ext) == {"offset"}


def test_not_supported_reply_remark(broker):
    """§5: unknown code -> REQUEST_CODE_NOT_SUPPORTED with remark " request type <code> not supported"."""
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        s.sendall(_frame(12345, 7, {}))
        _stype, code, opaque, remark, _ext, _ = _read_any(s)
        assert (code, opaque) == (3, 7)
        assert remark == " request type 12345 not supported"

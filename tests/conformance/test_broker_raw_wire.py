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

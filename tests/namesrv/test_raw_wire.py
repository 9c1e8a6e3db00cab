"""A client written from the spec alone (remoting-protocol.md §2-§4, §12): struct-built frames on a raw socket.

Nothing from remoting/ is used here, so this checks the NameServer against the
documented bytes, not against our own codec.
"""

from __future__ import annotations

import json
import socket
import struct
import zlib

import pytest

pytestmark = pytest.mark.timeout(60)


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        assert chunk, "connection closed by the NameServer"
        buf += chunk
    return buf


def json_frame(code: int, opaque: int, ext: dict[str, str], body: bytes = b"", version: int = 407) -> bytes:
    header = json.dumps(
        {
            "code": code,
            "extFields": ext,
            "flag": 0,
            "language": "PYTHON",
            "opaque": opaque,
            "serializeTypeCurrentRPC": "JSON",
            "version": version,
        },
        separators=(",", ":"),
    ).encode()
    return struct.pack(">ii", 4 + len(header) + len(body), (0 << 24) | len(header)) + header + body


def rocketmq_frame(
    code: int, opaque: int, ext: dict[str, str], body: bytes = b"", version: int = 407
) -> bytes:
    entries = b"".join(
        struct.pack(">h", len(k.encode())) + k.encode() + struct.pack(">i", len(v.encode())) + v.encode()
        for k, v in ext.items()
    )
    header = (
        struct.pack(">hbhii", code, 3, version, opaque, 0)  # language 3 = PYTHON
        + struct.pack(">i", 0)  # no remark
        + struct.pack(">i", len(entries))
        + entries
    )
    return struct.pack(">ii", 4 + len(header) + len(body), (1 << 24) | len(header)) + header + body


def read_response(sock: socket.socket) -> dict:
    (total,) = struct.unpack(">i", recv_exact(sock, 4))
    frame = recv_exact(sock, total)
    (word,) = struct.unpack_from(">i", frame, 0)
    stype, hlen = (word >> 24) & 0xFF, word & 0xFFFFFF
    header = frame[4 : 4 + hlen]
    body = frame[4 + hlen :]
    if stype == 0:
        h = json.loads(header)
        return {
            "stype": 0,
            "code": h["code"],
            "opaque": h["opaque"],
            "flag": h["flag"],
            "remark": h.get("remark"),
            "ext": h.get("extFields") or {},
            "body": body,
        }
    assert stype == 1
    code, _lang, _ver, opaque, flag = struct.unpack_from(">hbhii", header, 0)
    pos = 13
    (rlen,) = struct.unpack_from(">i", header, pos)
    pos += 4
    remark = header[pos : pos + rlen].decode() if rlen else None
    pos += rlen
    (elen,) = struct.unpack_from(">i", header, pos)
    pos += 4
    end = pos + elen
    ext = {}
    while pos < end:
        (klen,) = struct.unpack_from(">h", header, pos)
        k = header[pos + 2 : pos + 2 + klen].decode()
        pos += 2 + klen
        (vlen,) = struct.unpack_from(">i", header, pos)
        v = header[pos + 4 : pos + 4 + vlen].decode()
        pos += 4 + vlen
        ext[k] = v
    return {
        "stype": 1,
        "code": code,
        "opaque": opaque,
        "flag": flag,
        "remark": remark,
        "ext": ext,
        "body": body,
    }


REGISTER_BODY = json.dumps(
    {
        "filterServerList": [],
        "topicConfigSerializeWrapper": {
            "dataVersion": {"counter": 1, "timestamp": 1700000000000},
            "topicConfigTable": {
                "RawTopic": {
                    "order": False,
                    "perm": 6,
                    "readQueueNums": 3,
                    "topicFilterType": "SINGLE_TAG",
                    "topicName": "RawTopic",
                    "topicSysFlag": 0,
                    "writeQueueNums": 5,
                }
            },
        },
    }
).encode()


def test_register_and_route_with_hand_built_frames(namesrv):
    ext = {
        "brokerName": "raw-broker",
        "brokerAddr": "127.0.0.1:20911",
        "clusterName": "RawCluster",
        "haServerAddr": "127.0.0.1:20912",
        "brokerId": "0",
        "compressed": "false",
        "bodyCrc32": str(zlib.crc32(REGISTER_BODY) & 0x7FFFFFFF),
    }
    with socket.create_connection(("127.0.0.1", namesrv.port), timeout=10) as sock:
        sock.sendall(json_frame(103, 7, ext, REGISTER_BODY))
        resp = read_response(sock)
        assert (resp["stype"], resp["code"], resp["opaque"], resp["flag"] & 1) == (0, 0, 7, 1)

        # Route asked with a binary (ROCKETMQ) header: answered in kind, standard JSON for version 407.
        sock.sendall(rocketmq_frame(105, 8, {"topic": "RawTopic"}))
        resp = read_response(sock)
        assert (resp["stype"], resp["code"], resp["opaque"]) == (1, 0, 8)
        route = json.loads(resp["body"])
        assert route["brokerDatas"] == [
            {"brokerAddrs": {"0": "127.0.0.1:20911"}, "brokerName": "raw-broker", "cluster": "RawCluster"}
        ]
        assert route["queueDatas"] == [
            {
                "brokerName": "raw-broker",
                "perm": 6,
                "readQueueNums": 3,
                "topicSysFlag": 0,
                "writeQueueNums": 5,
            }
        ]
        assert route["filterServerTable"] == {}

        # A V4_0_0 client (ordinal 213) gets fastjson's default form: bare numeric map keys.
        sock.sendall(json_frame(105, 9, {"topic": "RawTopic"}, version=213))
        resp = read_response(sock)
        assert resp["code"] == 0 and b'"brokerAddrs":{0:"127.0.0.1:20911"}' in resp["body"]

        # Unknown topic: TOPIC_NOT_EXIST (17) in a binary header with the remark.
        sock.sendall(rocketmq_frame(105, 10, {"topic": "Missing"}))
        resp = read_response(sock)
        assert (resp["code"], resp["opaque"]) == (17, 10)
        assert resp["remark"].startswith("No topic route info in name server for the topic: Missing")

        # Two requests in one write: both answered, by opaque.
        sock.sendall(rocketmq_frame(106, 11, {}) + json_frame(206, 12, {}))
        got = {r["opaque"]: r for r in (read_response(sock), read_response(sock))}
        assert json.loads(got[12]["body"]) == {"topicList": ["RawTopic"]}
        assert got[11]["code"] == 0 and b'"RawCluster":["raw-broker"]' in got[11]["body"]

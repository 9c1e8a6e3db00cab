"""Issue 17, defects 5 and 8, at the codec and logging level.

A sound frame whose header text is not UTF-8 is set aside by the decoder (the stream stays usable);
the log of what peers can trigger at will is limited per host, with a count.
"""

from __future__ import annotations

import logging
import struct

from remoting.codec import FrameDecoder, encode_bytes
from remoting.codes import SerializeType
from remoting.command import RemotingCommand
from remoting.peer_log_limiter import PeerLogLimiter


def _binary(opaque: int, ext_value: bytes) -> bytes:
    ext = struct.pack(">h", 1) + b"k" + struct.pack(">i", len(ext_value)) + ext_value
    header = struct.pack(">hBhii", 11, 0, 407, opaque, 0) + struct.pack(">i", 0) + struct.pack(">i", len(ext)) + ext
    return struct.pack(">iI", 4 + len(header), (1 << 24) | len(header)) + header


def _json(header: bytes) -> bytes:
    return struct.pack(">iI", 4 + len(header), len(header)) + header


def test_non_utf8_headers_are_set_aside_and_the_stream_goes_on():
    good = encode_bytes(RemotingCommand.request(1, {"k": "v"}))
    d = FrameDecoder()
    out = d.feed(good + _binary(7, b"\xff") + _json(b'{"code":12,"opaque":8,"flag":0,"remark":"\xfe"}') + good)
    assert [c.code for c in out] == [1, 1]
    assert [(e.command.code, e.command.opaque, e.command.serialize_type) for e in d.rejected] == [
        (11, 7, SerializeType.ROCKETMQ), (12, 8, SerializeType.JSON)]
    assert "not UTF-8" in str(d.rejected[0]) and not d.broken
    d.rejected.clear()
    assert len(d.feed(good)) == 1


def test_peer_log_limiter_logs_once_per_host_per_interval_with_a_count(caplog):
    now = [100.0]
    lim = PeerLogLimiter(logging.getLogger("t.limiter"), 10.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, "t.limiter"):
        for port in range(1000, 1300):  # 300 bad frames, each on its own connection
            lim.log(logging.WARNING, f"10.0.0.1:{port}", "bad frame from %s", f"10.0.0.1:{port}")
        lim.log(logging.WARNING, "10.0.0.2:5", "bad frame from %s", "10.0.0.2:5")
        assert [r.getMessage() for r in caplog.records] == ["bad frame from 10.0.0.1:1000", "bad frame from 10.0.0.2:5"]
        now[0] += 10.5  # the next event after the interval reports the count first
        lim.log(logging.WARNING, "10.0.0.1:2000", "bad frame from %s", "10.0.0.1:2000")
    msgs = [r.getMessage() for r in caplog.records]
    assert msgs[2] == "299 more like it from 10.0.0.1 in the last 10 s (not logged one by one)"
    assert msgs[3] == "bad frame from 10.0.0.1:2000" and len(msgs) == 4


def test_peer_log_limiter_table_is_bounded():
    now = [0.0]
    lim = PeerLogLimiter(logging.getLogger("t.limiter2"), 10.0, max_peers=8, clock=lambda: now[0])
    for i in range(100):
        lim.log(logging.WARNING, f"10.0.1.{i}:1", "x")
    assert len(lim._peers) <= 8

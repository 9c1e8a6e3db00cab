"""Decoder bugs the fuzz tiers found, each pinned by a regression test."""

from __future__ import annotations

import pytest

from remoting.codec import FrameDecoder, decode_header, encode_bytes
from remoting.codes import RequestCode, ResponseCode, SerializeType
from remoting.command import RemotingCommand
from remoting.errors import RemoteProtocolError
from remoting.header import HeaderError
from remoting.header.broker import PullMessageRequestHeader
from tests.broker.helpers import BrokerProc, send_header_v2


@pytest.mark.parametrize("raw", [
    b'{"code":105,"opaque":"99999999999999999999999"}',  # found by the hypothesis JSON-header property
    b'{"code":105,"opaque":1180591620717411303424}',  # orjson reads it as a float that is integral
    b'{"code":2147483648}',
    b'{"code":105,"flag":-2147483649}',
])
def test_json_header_int_fields_out_of_java_int_range_are_malformed(raw):
    # Before: the value was kept; the response to it could not be encoded (twice), and the exception
    # escaped data_received.
    with pytest.raises(RemoteProtocolError, match="out of the int range"):
        decode_header(SerializeType.JSON, raw)


def test_frame_with_out_of_range_opaque_closes_only_after_the_good_frames():
    good = encode_bytes(RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO))
    bad_header = b'{"code":105,"opaque":"99999999999999999999999"}'
    bad = (len(bad_header) + 4).to_bytes(4, "big") + len(bad_header).to_bytes(4, "big") + bad_header
    with pytest.raises(RemoteProtocolError) as e:
        FrameDecoder().feed(good + bad)
    assert len(e.value.frames) == 1


@pytest.mark.parametrize("value", ["-9223372036854775809", "9223372036854775808", "1" * 40])
def test_long_header_fields_beyond_int64_are_refused(value):
    # Found by the live tier: a bornTimestamp beyond int64 reached the store (OverflowError in the put).
    ext = {"consumerGroup": "g", "topic": "t", "queueId": "0", "queueOffset": value, "maxMsgNums": "1",
           "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0"}
    with pytest.raises(HeaderError, match="out of range"):
        PullMessageRequestHeader.from_ext_fields(ext)


async def test_send_with_born_timestamp_beyond_int64_gets_a_clean_error(tmp_path):
    from remoting.client import RemotingClient

    b = BrokerProc(tmp_path, "regb").start()
    try:
        async with RemotingClient() as c:
            h = send_header_v2("RegT")
            h["g"] = "-9223372036854775809"
            r = await c.invoke(b.addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h, b"x"), 5.0)
            assert r.code == ResponseCode.SYSTEM_ERROR and "out of range" in r.remark
            ok = await c.invoke(b.addr, RemotingCommand.request(
                RequestCode.SEND_MESSAGE_V2, send_header_v2("RegT"), b"x"), 5.0)
            assert ok.code == ResponseCode.SUCCESS
        assert "OverflowError" not in b.proc.output()
    finally:
        b.stop()

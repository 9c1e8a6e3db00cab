"""§13.1/§13.3: batch handling is chosen by the header's ``batch`` (V2 ``m``) flag, not by the request code."""

from __future__ import annotations

import struct
import time

import pytest

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import BrokerProc, call, props_string, wait_max_offset


def batch_body(bodies: list[bytes]) -> bytes:
    out = b""
    for i, body in enumerate(bodies):
        props = props_string({"UNIQ_KEY": f"7F00000100002A9F0000000000{i:06X}"}).encode()
        size = 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(props)
        out += struct.pack(">iiiii", size, 0, 0, 0, len(body)) + body + struct.pack(">h", len(props)) + props
    return out


def v2(topic: str, **extra) -> dict:
    return {"a": "pg", "b": topic, "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": int(time.time() * 1000), "h": 0,
            "i": "", **extra}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProc(tmp_path_factory.mktemp("batch"), "batch")
    b.start()
    yield b
    b.stop()


async def test_send_message_v2_with_batch_flag_stores_a_batch(broker):
    async with RemotingClient() as c:
        r = await call(c, broker.addr, RequestCode.SEND_MESSAGE_V2, v2("ConfBatchV2", m="true"),
                       batch_body([b"one", b"two"]))
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert r.ext_fields["queueOffset"] == "0" and r.ext_fields["msgId"].count(",") == 1
        await wait_max_offset(c, broker.addr, "ConfBatchV2", 0, 2)


async def test_send_batch_message_code_with_batch_flag(broker):
    async with RemotingClient() as c:
        r = await call(c, broker.addr, RequestCode.SEND_BATCH_MESSAGE, v2("ConfBatch320", m="true"),
                       batch_body([b"a", b"b", b"c"]))
        assert r.code == ResponseCode.SUCCESS, r.remark
        await wait_max_offset(c, broker.addr, "ConfBatch320", 0, 3)
        r = await call(c, broker.addr, RequestCode.GET_MAX_OFFSET, {"topic": "ConfBatch320", "queueId": 0})
        assert r.ext_fields["offset"] == "3"


@pytest.mark.parametrize("extra", [{"f": 4}, {"i": props_string({"DELAY": "1"})}], ids=["prepared", "delayed"])
async def test_transactional_or_delayed_batch_is_message_illegal(broker, extra):
    """§13.3: batches cannot be transactional or delayed -> MESSAGE_ILLEGAL, nothing stored."""
    topic = "ConfBatchBad" + ("P" if "f" in extra else "D")
    async with RemotingClient() as c:
        r = await call(c, broker.addr, RequestCode.SEND_BATCH_MESSAGE, {**v2(topic, m="true"), **extra},
                       batch_body([b"x", b"y"]))
        assert r.code == ResponseCode.MESSAGE_ILLEGAL, (r.code, r.remark)
        r = await call(c, broker.addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": 0})
        assert r.code != ResponseCode.SUCCESS or r.ext_fields["offset"] == "0"

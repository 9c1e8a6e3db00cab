"""Interop at the remoting level: the official RocketMQ C++ client talks to a RemotingServer.

The server plays NameServer and broker with tiny test handlers; what is under
test is the frame codec and dispatch both ways: the C++ client's frames decode
into the expected commands, and it accepts our responses (it reports the
queue offsets our handler assigned). Skipped where the binding
(rocketmq-python-cvs, shipping librocketmq.so) is not installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from remoting.codes import LanguageCode, RequestCode, ResponseCode

pytest.importorskip("rocketmq.client", reason="official C++ client binding not installed")

DRIVER = Path(__file__).with_name("cpp_remoting_driver.py")


def route_body(broker_addr: str) -> bytes:
    route = {
        "brokerDatas": [{"brokerAddrs": {"0": broker_addr}, "brokerName": "interop-b", "cluster": "interop-c"}],
        "filterServerTable": {},
        "queueDatas": [
            {"brokerName": "interop-b", "perm": 6, "readQueueNums": 2, "topicSysFlag": 0, "writeQueueNums": 2}
        ],
    }
    return json.dumps(route).encode()


async def test_cpp_producer_round_trip(server, addr, tmp_path):
    seen: dict[int, list] = {}
    sends = []

    def record(req, conn):
        seen.setdefault(req.code, []).append(req)

    def get_route(req, conn):
        record(req, conn)
        return req.response_to(ResponseCode.SUCCESS, body=route_body(addr))

    def send(req, conn):
        record(req, conn)
        sends.append(req)
        ext = req.ext_fields
        queue_id = ext.get("e", ext.get("queueId"))
        return req.response_to(
            ResponseCode.SUCCESS,
            header={"msgId": f"{len(sends):032X}", "queueId": queue_id, "queueOffset": 1000 + len(sends)},
        )

    def ok(req, conn):
        record(req, conn)
        return req.response_to(ResponseCode.SUCCESS)

    server.register_processor(RequestCode.GET_ROUTEINFO_BY_TOPIC, get_route)
    server.register_processor(RequestCode.SEND_MESSAGE, send)
    server.register_processor(RequestCode.SEND_MESSAGE_V2, send)
    server.register_default_processor(ok)  # heartbeats, unregister, anything else

    env = dict(os.environ, HOME=str(tmp_path))  # the C++ client logs under $HOME/logs
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(DRIVER), addr, "InteropTopic", "3",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )
    try:
        async with asyncio.timeout(90):
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode(errors="replace")
    results = json.loads(out.decode().strip().splitlines()[-1])["results"]

    # our responses were understood: the client reports the offsets we assigned
    assert [r["offset"] for r in results] == [1001, 1002, 1003]
    assert all(r["status"] == 0 for r in results)  # SEND_OK
    # its requests decoded as expected
    route_reqs = seen[RequestCode.GET_ROUTEINFO_BY_TOPIC]
    assert any(r.ext_fields.get("topic") == "InteropTopic" for r in route_reqs)
    assert all(r.language == LanguageCode.CPP for reqs in seen.values() for r in reqs)
    assert [s.body for s in sends] == [f"body-{i}-ünï".encode() for i in range(3)]
    for s in sends:
        ext = s.ext_fields
        assert ext.get("b", ext.get("topic")) == "InteropTopic"
        assert "KEYS" in ext.get("i", ext.get("properties", ""))

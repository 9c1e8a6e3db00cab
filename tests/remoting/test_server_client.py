"""Server and client over real loopback sockets: dispatch, errors, oneway, ordering, drops, timeouts."""

from __future__ import annotations

import asyncio
import socket

import pytest

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode, SerializeType
from remoting.command import RemotingCommand
from remoting.errors import RemotingConnectError, RemotingSendRequestError, RemotingTimeoutError
from remoting.header import CommandHeader, header
from tests.support import async_wait_until, free_port


@header
class EchoHeader(CommandHeader):
    topic: str
    queueId: int | None = None


def echo(req: RemotingCommand, conn) -> RemotingCommand:
    return req.response_to(ResponseCode.SUCCESS, remark="echo", header=req.ext_fields, body=req.body)


@pytest.mark.parametrize("stype", [SerializeType.JSON, SerializeType.ROCKETMQ])
async def test_sync_handler_round_trip(server, client, addr, stype):
    server.register_processor(RequestCode.SEND_MESSAGE, echo)
    body = "ünïcødé".encode() * 1000
    req = RemotingCommand.request(RequestCode.SEND_MESSAGE, EchoHeader("T", 3), body, serialize_type=stype)
    resp = await client.invoke(addr, req, timeout=3)
    assert resp.code == ResponseCode.SUCCESS and resp.remark == "echo" and resp.opaque == req.opaque
    assert resp.serialize_type == stype  # the response copies the request's serialize type
    assert resp.decode_header(EchoHeader) == EchoHeader("T", 3) and resp.body == body


async def test_large_body(server, client, addr):
    server.register_processor(1, echo)
    body = bytes(range(256)) * (4 * 4096 + 7)  # ~4 MiB
    resp = await client.invoke(addr, RemotingCommand.request(1, {"topic": "t"}, body), timeout=10)
    assert resp.body == body


async def test_async_handler_and_out_of_order_responses(server, client, addr):
    release: dict[int, asyncio.Event] = {}

    async def held(req, conn):
        n = int(req.ext_fields["n"])
        release[n] = asyncio.Event()
        await release[n].wait()
        return req.response_to(ResponseCode.SUCCESS, header={"n": n})

    server.register_processor(2, held)
    tasks = [asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(2, {"n": i}), 5)) for i in range(5)]
    await async_wait_until(lambda: len(release) == 5, 5)
    done_order = []
    for i in reversed(range(5)):  # answer in reverse order
        release[i].set()
        resp = await tasks[i]
        done_order.append(int(resp.ext_fields["n"]))
    assert done_order == [4, 3, 2, 1, 0]


async def test_unknown_code_and_default_processor(server, client, addr):
    resp = await client.invoke(addr, RemotingCommand.request(4242), 3)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 4242 not supported"
    server.register_default_processor(lambda req, conn: req.response_to(ResponseCode.SUCCESS, f"default {req.code}"))
    resp = await client.invoke(addr, RemotingCommand.request(4242), 3)
    assert (resp.code, resp.remark) == (ResponseCode.SUCCESS, "default 4242")


async def test_handler_errors_give_system_error_and_keep_connection(server, client, addr):
    def boom(req, conn):
        raise RuntimeError("disk on fire")

    async def aboom(req, conn):
        await asyncio.sleep(0)
        raise RuntimeError("async fire")

    server.register_processor(1, boom)
    server.register_processor(2, aboom)
    server.register_processor(3, lambda req, conn: req.response_to(0, header=req.decode_header(EchoHeader)))
    server.register_processor(4, echo)
    r1 = await client.invoke(addr, RemotingCommand.request(1), 3)
    assert (r1.code, r1.remark) == (ResponseCode.SYSTEM_ERROR, "disk on fire")
    r2 = await client.invoke(addr, RemotingCommand.request(2), 3)
    assert (r2.code, r2.remark) == (ResponseCode.SYSTEM_ERROR, "async fire")
    r3 = await client.invoke(addr, RemotingCommand.request(3, {"queueId": 1}), 3)
    assert r3.code == ResponseCode.SYSTEM_ERROR and "topic" in r3.remark  # HeaderError names the field
    conn = await client.get_connection(addr)
    r4 = await client.invoke(addr, RemotingCommand.request(4, body=b"still here"), 3)
    assert r4.body == b"still here" and (await client.get_connection(addr)) is conn


async def test_oneway_gets_no_response(server, client, addr):
    seen = []

    def record(req, conn):
        seen.append(req)
        return req.response_to(ResponseCode.SUCCESS)  # must not be written for a oneway request

    server.register_processor(RequestCode.UPDATE_CONSUMER_OFFSET, record)
    await client.invoke_oneway(addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {"q": 1}))
    await client.invoke_oneway(addr, RemotingCommand.request(999))  # unknown code: no reply either
    await async_wait_until(lambda: len(seen) == 1, 5)
    assert seen[0].is_oneway and seen[0].ext_fields == {"q": "1"}
    # nothing came back: a later request/response pair is the only traffic the client sees
    server.register_processor(1, echo)
    assert (await client.invoke(addr, RemotingCommand.request(1, body=b"x"), 3)).body == b"x"
    conn = await client.get_connection(addr)
    assert conn.pending_count == 0


async def test_late_response_with_send_response(server, client, addr):
    parked = []
    server.register_processor(RequestCode.PULL_MESSAGE, lambda req, conn: parked.append((req, conn)))
    fut = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE), 5))
    await async_wait_until(lambda: parked, 5)
    req, conn = parked[0]
    conn.send_response(req.response_to(ResponseCode.PULL_NOT_FOUND, "NO_NEW_MSG"))
    resp = await fut
    assert (resp.code, resp.remark) == (ResponseCode.PULL_NOT_FOUND, "NO_NEW_MSG")


async def test_timeout(server, client, addr):
    server.register_processor(1, lambda req, conn: None)  # never answers
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(RemotingTimeoutError):
        await client.invoke(addr, RemotingCommand.request(1), timeout=0.2)
    assert 0.19 <= loop.time() - t0 < 2
    conn = await client.get_connection(addr)
    assert conn.pending_count == 0
    # async callback flavour
    got = []
    client.invoke_async(addr, RemotingCommand.request(1), 0.1, lambda r, e: got.append((r, e)))
    await async_wait_until(lambda: got, 5)
    assert got[0][0] is None and isinstance(got[0][1], RemotingTimeoutError)


async def test_pending_requests_fail_when_server_drops(server, client, addr):
    parked = []
    server.register_processor(1, lambda req, conn: parked.append(conn))
    futs = [asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(1), 30)) for _ in range(3)]
    cb = []
    await async_wait_until(lambda: len(parked) == 3, 5)
    client.invoke_async(addr, RemotingCommand.request(1), 30, lambda r, e: cb.append(e))
    await async_wait_until(lambda: len(parked) == 4, 5)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    parked[0].close()  # the server drops the connection
    for f in futs:
        with pytest.raises(RemotingSendRequestError) as ei:
            await f
        assert ei.value.__cause__ is not None
    await async_wait_until(lambda: cb, 5)
    assert isinstance(cb[0], RemotingSendRequestError)
    assert loop.time() - t0 < 2  # at once, not after the 30 s timeout


async def test_reconnect_after_drop(server, client, addr):
    server.register_processor(1, echo)
    first = await client.get_connection(addr)
    assert (await client.invoke(addr, RemotingCommand.request(1, body=b"a"), 3)).body == b"a"
    for c in list(server.connections):
        c.close()
    await async_wait_until(lambda: first.closed, 5)
    assert (await client.invoke(addr, RemotingCommand.request(1, body=b"b"), 3)).body == b"b"
    assert (await client.get_connection(addr)) is not first


async def test_server_initiated_request_to_client(server, client, addr):
    got = []

    def on_check(req, conn):
        got.append(req.ext_fields["msgId"])
        return req.response_to(ResponseCode.SUCCESS, body=b"state")

    client.register_processor(RequestCode.CHECK_TRANSACTION_STATE, on_check)
    client.register_processor(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, lambda req, conn: got.append("notify"))
    server.register_processor(RequestCode.HEART_BEAT, lambda req, conn: req.response_to(ResponseCode.SUCCESS))
    await client.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT), 3)
    [sconn] = list(server.connections)
    resp = await sconn.invoke(RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, {"msgId": "M1"}), 3)
    assert resp.body == b"state" and got == ["M1"]
    sconn.invoke_oneway(RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"}))
    await async_wait_until(lambda: "notify" in got, 5)


async def test_connect_error():
    cli = RemotingClient(connect_timeout=1.0)
    try:
        with pytest.raises(RemotingConnectError):
            await cli.invoke(f"127.0.0.1:{free_port()}", RemotingCommand.request(1), 2)
        got = []
        cli.invoke_async(f"127.0.0.1:{free_port()}", RemotingCommand.request(1), 2, lambda r, e: got.append(e))
        await async_wait_until(lambda: got, 5)
        assert isinstance(got[0], RemotingConnectError)
    finally:
        await cli.close()


async def test_connection_listeners_and_addresses(server, client, addr):
    opened, closed = [], []
    server.add_connection_listener(opened.append, closed.append)
    server.register_processor(1, echo)
    await client.invoke(addr, RemotingCommand.request(1), 3)
    await async_wait_until(lambda: opened, 5)
    conn = opened[0]
    cconn = await client.get_connection(addr)
    assert conn.remote_addr == cconn.local_addr and conn.remote_addr.startswith("127.0.0.1:")
    assert conn.local_addr == addr == cconn.remote_addr
    for c in (conn, cconn):  # Nagle off on both ends
        sock = c._transport.get_extra_info("socket")
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    await client.close_connection(addr)
    await async_wait_until(lambda: closed == [conn], 5)
    assert conn.closed and conn not in server.connections


async def test_one_connection_per_address_under_concurrent_first_use(server, client, addr):
    server.register_processor(1, echo)
    resps = await asyncio.gather(
        *(client.invoke(addr, RemotingCommand.request(1, body=str(i).encode()), 5) for i in range(20))
    )
    assert [r.body for r in resps] == [str(i).encode() for i in range(20)]
    await async_wait_until(lambda: len(server.connections) == 1, 5)
    assert len(client.connections) == 1


async def test_invoke_async_callback(server, client, addr):
    server.register_processor(1, echo)
    got = []
    for i in range(3):
        client.invoke_async(addr, RemotingCommand.request(1, body=bytes([i])), 3, lambda r, e: got.append((r, e)))
    await async_wait_until(lambda: len(got) == 3, 5)
    assert sorted(r.body for r, e in got) == [b"\x00", b"\x01", b"\x02"] and all(e is None for _, e in got)


async def test_handler_returning_garbage_gets_system_error(server, client, addr):
    async def bad_async(req, conn):
        return {"not": "a command"}

    server.register_processor(1, lambda req, conn: 42)
    server.register_processor(2, bad_async)
    for code in (1, 2):
        resp = await client.invoke(addr, RemotingCommand.request(code), 3)
        assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark == "handler returned no command"


async def test_rpc_hooks_refuse_before_processor_and_see_every_response(server, client, addr):
    ran: list[str] = []
    seen: list[tuple[int | None, int, int]] = []

    class Hook:
        def do_before_request(self, conn, req):
            if req.ext_fields.get("topic") == "denied":
                return req.response_to(ResponseCode.NO_PERMISSION, remark="refused by hook")
            return None

        def do_after_response(self, conn, req, resp):
            seen.append((None if req is None else req.code, resp.code, resp.opaque))

    def handler(req, conn):
        ran.append(req.ext_fields["topic"])
        if req.ext_fields["topic"] == "late":
            conn.send_response(req.response_to(ResponseCode.SUCCESS, remark="late"))
            return None
        return req.response_to(ResponseCode.SUCCESS)

    server.register_processor(7, handler)
    server.add_rpc_hook(Hook())
    refused = RemotingCommand.request(7, {"topic": "denied"})
    resp = await client.invoke(addr, refused, timeout=3)
    assert resp.code == ResponseCode.NO_PERMISSION and resp.remark == "refused by hook"
    assert ran == []  # the processor never ran
    ok = RemotingCommand.request(7, {"topic": "allowed"})
    assert (await client.invoke(addr, ok, timeout=3)).code == ResponseCode.SUCCESS
    late = RemotingCommand.request(7, {"topic": "late"})
    assert (await client.invoke(addr, late, timeout=3)).remark == "late"
    assert ran == ["allowed", "late"]
    assert seen == [
        (7, ResponseCode.NO_PERMISSION, refused.opaque),
        (7, ResponseCode.SUCCESS, ok.opaque),
        (None, ResponseCode.SUCCESS, late.opaque),
    ]


async def test_stamped_reads_time_answers_from_their_own_read(server, client, addr):
    """With stamp_reads, an answer is encoded with received_at of the read its request came in, also
    when a task answers after later reads; a hook installed with late=False never sees late answers."""
    seen: dict[str, float] = {}
    release = asyncio.Event()

    class Timing:
        def do_before_request(self, conn, req):
            return None

        def do_after_response(self, conn, req, resp):
            assert req is not None, "a late answer reached a late=False hook"
            seen[req.ext_fields["topic"]] = conn.received_at

    async def slow(req, conn):
        await release.wait()
        return req.response_to(ResponseCode.SUCCESS)

    def fast(req, conn):
        release.set()
        if req.ext_fields["topic"] == "late":
            conn.send_response(req.response_to(ResponseCode.SUCCESS))
            return None
        return req.response_to(ResponseCode.SUCCESS)

    server.stamp_reads = True
    server.register_processor(8, slow)
    server.register_processor(9, fast)
    server.add_rpc_hook(Timing(), before=False, late=False)
    waiting = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(8, {"topic": "slow"}), 3))
    await async_wait_until(lambda: server.connections and next(iter(server.connections)).received_at, 3,
                           what="the first read stamped")
    first_read = next(iter(server.connections)).received_at
    assert (await client.invoke(addr, RemotingCommand.request(9, {"topic": "fast"}), 3)).code == 0
    assert (await waiting).code == ResponseCode.SUCCESS
    assert (await client.invoke(addr, RemotingCommand.request(9, {"topic": "late"}), 3)).code == 0
    assert seen["slow"] == first_read  # the task's answer: its own read's stamp, not the later one
    assert seen["fast"] > first_read
    assert "late" not in seen


async def test_encoded_late_response_unless_a_late_hook_must_see_a_command(server, client, addr):
    from remoting.codec import response_frame

    parked = []
    server.register_processor(RequestCode.SEND_MESSAGE_V2, lambda req, conn: parked.append((req, conn)))
    fut = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2), 5))
    await async_wait_until(lambda: parked, 5)
    req, conn = parked.pop()
    assert conn.send_response_frame(response_frame(ResponseCode.SUCCESS, req.opaque, {"msgId": "AB", "queueId": "3"}))
    resp = await fut
    assert (resp.code, resp.opaque, resp.ext_fields) == (ResponseCode.SUCCESS, req.opaque,
                                                         {"msgId": "AB", "queueId": "3"})
    seen = []

    class Hook:
        def do_before_request(self, conn, req):
            return None

        def do_after_response(self, conn, req, resp):
            seen.append(resp.code)

    server.add_rpc_hook(Hook())
    fut = asyncio.ensure_future(client.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2), 5))
    await async_wait_until(lambda: parked, 5)
    req, conn = parked.pop()
    # the hook sees responses as commands: nothing is written, the caller sends the command
    assert not conn.send_response_frame(response_frame(ResponseCode.SUCCESS, req.opaque, {}))
    conn.send_response(req.response_to(ResponseCode.SUCCESS, remark="as a command"))
    assert (await fut).remark == "as a command"
    assert seen == [ResponseCode.SUCCESS]

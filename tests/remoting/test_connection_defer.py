"""Connection.defer: end-of-read work for a handler, over a real server and raw loopback sockets."""

from __future__ import annotations

import asyncio
import socket
import time

from remoting.codec import FrameDecoder, encode_bytes
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand

QUEUE, PEEK, LATER = 901, 902, 903


class Queueing:
    """Handler for QUEUE: keeps the request and answers all queued ones from one deferred call."""

    def __init__(self) -> None:
        self.queued: list[RemotingCommand] = []
        self.done: list[int] = []
        self.runs = 0

    def __call__(self, req: RemotingCommand, conn):
        if not self.queued:
            conn.defer(lambda: self.flush(conn))
        self.queued.append(req)
        return None

    def flush(self, conn) -> None:
        self.runs += 1
        queued, self.queued = self.queued, []
        for req in queued:
            self.done.append(req.opaque)
            conn.send_response(req.response_to(ResponseCode.SUCCESS, remark=f"run{self.runs}"))


def _frames(codes_opaques: list[tuple[int, int]]) -> bytes:
    out = []
    for code, opaque in codes_opaques:
        cmd = RemotingCommand.request(code, {})
        cmd.opaque = opaque
        out.append(encode_bytes(cmd))
    return b"".join(out)


async def _exchange(port: int, data: bytes, expect: int, timeout: float = 5.0) -> list[RemotingCommand]:
    loop = asyncio.get_running_loop()

    def run() -> list[RemotingCommand]:
        dec = FrameDecoder()
        got: list[RemotingCommand] = []
        deadline = time.monotonic() + timeout
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(data)
            while len(got) < expect and time.monotonic() < deadline:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got.extend(dec.feed(chunk))
        return got

    return await loop.run_in_executor(None, run)


async def test_deferred_work_runs_before_another_handler_and_answers_in_order(server):
    q = Queueing()
    server.register_processor(QUEUE, q)
    server.register_processor(PEEK, lambda req, conn: req.response_to(ResponseCode.SUCCESS,
                                                                      remark=",".join(map(str, q.done))))
    data = _frames([(QUEUE, 1), (QUEUE, 2), (PEEK, 3), (QUEUE, 4), (QUEUE, 5)])
    resps = await _exchange(server.port, data, 5)
    # the two queued before PEEK were handled before it ran: PEEK saw them done
    assert [r.opaque for r in resps] == [1, 2, 3, 4, 5]
    by_opaque = {r.opaque: r for r in resps}
    assert by_opaque[3].remark == "1,2"
    assert all(by_opaque[o].code == ResponseCode.SUCCESS for o in (1, 2, 4, 5))
    # one deferred call for 1+2 and one for 4+5 (when the whole write arrived in one read)
    assert by_opaque[1].remark == by_opaque[2].remark and by_opaque[4].remark == by_opaque[5].remark
    assert q.done == [1, 2, 4, 5] and not q.queued


async def test_defer_outside_a_read_runs_on_the_next_iteration(server):
    ran = asyncio.Event()

    async def later(req: RemotingCommand, conn) -> RemotingCommand:
        await asyncio.sleep(0)  # now in a task, not in data_received
        conn.defer(ran.set)
        assert not ran.is_set()
        await asyncio.wait_for(ran.wait(), 5)
        return req.response_to(ResponseCode.SUCCESS, remark="ran")

    server.register_processor(LATER, later)
    resps = await _exchange(server.port, _frames([(LATER, 7)]), 1)
    assert [(r.opaque, r.remark) for r in resps] == [(7, "ran")]


async def test_failing_deferred_work_is_logged_and_the_read_still_answers(server, caplog):
    def bad(req: RemotingCommand, conn):
        conn.defer(lambda: 1 / 0)
        return req.response_to(ResponseCode.SUCCESS, remark="answered")

    server.register_processor(QUEUE, bad)
    resps = await _exchange(server.port, _frames([(QUEUE, 1), (QUEUE, 2)]), 2)
    assert [(r.opaque, r.remark) for r in resps] == [(1, "answered"), (2, "answered")]
    assert "deferred work failed" in caplog.text

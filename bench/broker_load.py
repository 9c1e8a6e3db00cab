"""Load generators for bench_broker.py: each runs in its own process with its own event loop.

Every function is bounded in both time (``seconds``) and count (``max_ops``)
and returns plain numbers (latencies in microseconds) so results can cross a
process boundary.
"""

from __future__ import annotations

import asyncio
import os
import struct
import sys
import time

import orjson

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from common.message import encode_batch_body  # noqa: E402
from remoting.client import RemotingClient  # noqa: E402
from remoting.codes import RequestCode, ResponseCode  # noqa: E402
from remoting.command import RemotingCommand  # noqa: E402

STORED = {ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.FLUSH_SLAVE_TIMEOUT,
          ResponseCode.SLAVE_NOT_AVAILABLE}


def _loop():
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:  # pragma: no cover
        return asyncio.new_event_loop()


def send_header(topic: str, queue_id: int, props: str = "", batch: bool = False) -> dict:
    h = {"a": "bench_pg", "b": topic, "c": "TBW102", "d": 8, "e": queue_id, "f": 0,
         "g": int(time.time() * 1000), "h": 0, "i": props}
    if batch:
        h["m"] = "true"
    return h


def _signed(ext: dict, body: bytes) -> dict:
    """With BENCH_ACCESS_KEY/BENCH_SECRET_KEY set: the ACL-signed extFields (signed once per sender:
    the signature covers extFields and body, not the opaque, so the broker still checks every request)."""
    ak, sk = os.environ.get("BENCH_ACCESS_KEY"), os.environ.get("BENCH_SECRET_KEY")
    if not (ak and sk):
        return ext
    from common.acl_signer import sign_fields

    fields = {k: str(v) for k, v in ext.items()}
    sign_fields(fields, body, ak, sk)
    return fields


def _tls() -> dict:
    """With BENCH_TLS=1: connect with TLS (no certificate check, as the Java client's default)."""
    if os.environ.get("BENCH_TLS") != "1":
        return {}
    from remoting.tls import TlsSystemConfig

    return {"ssl": TlsSystemConfig().client_context(), "server_hostname": ""}


class _Msg:
    __slots__ = ("body", "flag", "properties")

    def __init__(self, body: bytes, i: int):
        self.body = body
        self.flag = 0
        self.properties = {"UNIQ_KEY": f"BENCH{os.getpid()}_{i}"}


_PREFIX = struct.Struct(">iI")
_HLEN = struct.Struct(">iI")


def _frame_parts(code: int, ext: dict) -> tuple[bytes, bytes]:
    """A JSON request header split around the opaque: ``head + str(opaque) + tail``.

    Built once per sender so the hot loop only formats the opaque (the bench client must
    cost the machine as little CPU as possible: it shares the cores with the broker).
    """
    marker = 987654321
    h = orjson.dumps({"code": code, "extFields": {k: str(v) for k, v in ext.items()}, "flag": 0,
                      "language": "JAVA", "opaque": marker, "serializeTypeCurrentRPC": "JSON", "version": 401})
    head, tail = h.split(str(marker).encode(), 1)
    return head, tail


class _SendProtocol(asyncio.Protocol):
    """Keeps exactly ``senders`` requests in flight (each response sends the next one), as many
    synchronous senders would; frames are precomputed, responses parsed for code and opaque only."""

    def __init__(self, parts: list[tuple[bytes, bytes]], body: bytes, deadline: float, max_ops: int,
                 done: asyncio.Future):
        self.parts = parts
        self.body = body
        self.blen = len(body)
        self.deadline = deadline
        self.max_ops = max_ops
        self.done = done
        self.buf = bytearray()
        self.sent = 0
        self.inflight: dict[int, tuple[int, int]] = {}  # opaque -> (slot, t0 ns)
        self.lat: list[int] = []
        self.errors = 0
        self.codes: dict[int, int] = {}
        self.transport = None
        self.write = None
        self.opaque = 0

    def _frame(self, slot: int, out: list) -> None:
        self.opaque += 1
        op = self.opaque
        head, tail = self.parts[slot]
        h = head + str(op).encode() + tail
        out.append(_PREFIX.pack(4 + len(h) + self.blen, len(h)) + h)
        out.append(self.body)
        self.inflight[op] = (slot, time.perf_counter_ns())
        self.sent += 1

    def connection_made(self, transport) -> None:
        self.transport = transport
        if transport.get_extra_info("sslcontext") is None:
            self.write = transport.writelines
        else:  # one TLS record per chunk written: join them, as Netty's SslHandler coalesces its writes
            self.write = lambda chunks: transport.write(b"".join(chunks))
        out: list = []
        for slot in range(len(self.parts)):
            self._frame(slot, out)
        self.write(out)

    def data_received(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        pos, n = 0, len(buf)
        out: list = []
        now_ns = time.perf_counter_ns()
        stop = time.monotonic() >= self.deadline or self.sent >= self.max_ops
        while n - pos >= 8:
            length, word = _HLEN.unpack_from(buf, pos)
            if n - pos - 4 < length:
                break
            hlen = word & 0xFFFFFF
            d = orjson.loads(bytes(buf[pos + 8:pos + 8 + hlen]))
            pos += 4 + length
            slot, t0 = self.inflight.pop(d["opaque"])
            self.lat.append((now_ns - t0) // 1000)
            code = d["code"]
            if code not in STORED:
                self.errors += 1
                self.codes[code] = self.codes.get(code, 0) + 1
            if not stop:
                self._frame(slot, out)
        del buf[:pos]
        if out:
            self.write(out)
        if not self.inflight and not self.done.done():
            self.done.set_result(None)

    def connection_lost(self, exc) -> None:
        self.errors += len(self.inflight)
        if not self.done.done():
            self.done.set_result(None)


def run_senders(addr: str, topic: str, senders: int, seconds: float, max_ops: int, body_size: int,
                batch: int, queues: int, worker: int) -> dict:
    """``senders`` requests in flight on one connection (like that many synchronous senders)."""

    async def main() -> dict:
        body = os.urandom(body_size)
        code = RequestCode.SEND_BATCH_MESSAGE if batch > 1 else RequestCode.SEND_MESSAGE_V2
        payload = encode_batch_body([_Msg(body, i) for i in range(batch)]) if batch > 1 else body
        headers = [send_header(topic, (worker * senders + sid) % queues, "UNIQ_KEY\x01x", batch > 1)
                   for sid in range(senders)]
        parts = [_frame_parts(code, _signed(h, payload)) for h in headers]
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        host, port = addr.rsplit(":", 1)
        cpu0 = time.process_time()
        t0 = time.monotonic()
        transport, proto = await loop.create_connection(
            lambda: _SendProtocol(parts, payload, t0 + seconds, max_ops, done), host, int(port), **_tls())
        try:
            await asyncio.wait_for(done, seconds + 30)
        finally:
            transport.close()
        elapsed = time.monotonic() - t0
        return {"lat": proto.lat, "errors": proto.errors, "elapsed": elapsed, "codes": proto.codes,
                "msgs": (len(proto.lat) - proto.errors) * max(batch, 1), "cpu": time.process_time() - cpu0}

    loop = _loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def run_puller(addr: str, topic: str, queue_ids: list[int], seconds: float, max_msgs: int) -> dict:
    """Drain the given queues from offset 0 with back-to-back pulls (32 per pull)."""

    async def main() -> dict:
        client = RemotingClient()
        total = 0
        nbytes = 0
        t0 = time.monotonic()
        deadline = t0 + seconds

        async def drain(qid: int) -> None:
            nonlocal total, nbytes
            off = 0
            while time.monotonic() < deadline and total < max_msgs:
                h = {"consumerGroup": "bench_cg", "topic": topic, "queueId": qid, "queueOffset": off,
                     "maxMsgNums": 32, "sysFlag": 0x4, "commitOffset": 0, "suspendTimeoutMillis": 0,
                     "subVersion": 0, "subscription": "*", "expressionType": "TAG"}
                r = await client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, h), 10.0)
                if r.code != ResponseCode.SUCCESS:
                    return
                # count records without a full decode: each starts with its int32 size
                body = r.body
                pos = 0
                n = 0
                while pos < len(body):
                    pos += int.from_bytes(body[pos:pos + 4], "big")
                    n += 1
                total += n
                nbytes += len(body)
                off = int(r.ext_fields["nextBeginOffset"])

        await asyncio.gather(*(drain(q) for q in queue_ids))
        elapsed = time.monotonic() - t0
        await client.close()
        return {"msgs": total, "bytes": nbytes, "elapsed": elapsed}

    loop = _loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def run_e2e_producer(addr: str, topic: str, rate: int, seconds: float, body_size: int) -> dict:
    """Send to queue 0 at a fixed rate; each body starts with the wall-clock send time (ns, 8 bytes)."""

    async def main() -> dict:
        prod = RemotingClient()
        await prod.get_connection(addr)
        pad = b"x" * max(0, body_size - 8)
        n_total = int(rate * seconds)
        pending = set()
        errors = 0
        t0 = time.perf_counter()
        for i in range(n_total):
            delay = t0 + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            body = time.time_ns().to_bytes(8, "big") + pad
            cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, send_header(topic, 0, "UNIQ_KEY\x01e2e"), body)
            t = asyncio.ensure_future(prod.invoke(addr, cmd, 10.0))
            pending.add(t)
            t.add_done_callback(pending.discard)
        if pending:
            done, _ = await asyncio.wait(pending)
            errors = sum(1 for d in done if d.exception() is not None or d.result().code not in STORED)
        await prod.close()
        return {"sent": n_total, "errors": errors, "elapsed": time.perf_counter() - t0}

    loop = _loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def run_e2e_consumer(addr: str, topic: str, start_offset: int, expect: int, timeout_s: float) -> dict:
    """Long-poll queue 0 from ``start_offset``; latency = receive wall time - send time in the body."""

    async def main() -> dict:
        from common.message import decode_messages

        cons = RemotingClient()
        lat: list[int] = []
        off = start_offset
        deadline = time.monotonic() + timeout_s
        while len(lat) < expect and time.monotonic() < deadline:
            h = {"consumerGroup": "bench_e2e", "topic": topic, "queueId": 0, "queueOffset": off,
                 "maxMsgNums": 32, "sysFlag": 0x4 | 0x2, "commitOffset": 0, "suspendTimeoutMillis": 1000,
                 "subVersion": 0, "subscription": "*", "expressionType": "TAG"}
            r = await cons.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, h), 10.0)
            now = time.time_ns()
            if r.code == ResponseCode.SUCCESS:
                for m in decode_messages(r.body):
                    lat.append((now - int.from_bytes(m.body[:8], "big")) // 1000)
            if r.ext_fields and "nextBeginOffset" in r.ext_fields:
                off = int(r.ext_fields["nextBeginOffset"])
        await cons.close()
        return {"lat": lat}

    loop = _loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()

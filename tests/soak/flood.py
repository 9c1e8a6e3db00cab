"""The overload flood, a process of its own (so its work does not slow the canary's loop):
``python -m tests.soak.flood PORT TOPIC CONNS WINDOW SECONDS OUT``.

Each of CONNS connections keeps WINDOW SEND_MESSAGE_V2 requests in flight (a new one for each
answer) for SECONDS, then waits for the answers still due (at most 60 s) and writes OUT as JSON:
``{"f<i>": {"sent": n, "codes": {code: count}, "acked": [seq, ...], "unanswered": k}}``. Connection i
sends to queue i % 4; message seq of connection i carries the checker's key ``f<i>-<seq>``.
Frames are built by patching a template (opaque digits and body), no encoding per message.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from remoting.codec import FrameDecoder, encode_bytes
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from tests.broker.helpers import send_header_v2
from tests.soak.checker import History, body_for

SIZE = 128
OPAQUE_BASE = 10_000_000  # 8 digits: every opaque has the same width, so the template's length holds
MAX_PER_CONN = 2_000_000


def _template(topic: str, queue: int, producer: str) -> tuple[bytes, int, int]:
    cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, send_header_v2(topic, queue_id=queue),
                                  body_for(History.key(producer, 0), SIZE))
    cmd.opaque = OPAQUE_BASE
    frame = encode_bytes(cmd)
    at = frame.index(str(OPAQUE_BASE).encode())
    return frame, at, len(frame) - SIZE


async def flood_one(i: int, port: int, topic: str, window: int, seconds: float) -> dict:
    producer = f"f{i}"
    frame, op_at, body_at = _template(topic, i % 4, producer)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    dec = FrameDecoder()
    codes: dict[int, int] = {}
    acked: list[int] = []
    sent = answered = 0
    stop_at = time.monotonic() + seconds

    def send_one() -> None:
        nonlocal sent
        buf = bytearray(frame)
        buf[op_at:op_at + 8] = str(OPAQUE_BASE + sent).encode()
        buf[body_at:] = body_for(History.key(producer, sent), SIZE)
        writer.write(buf)
        sent += 1

    for _ in range(window):
        send_one()
    await writer.drain()
    final = time.monotonic() + seconds + 60
    try:
        while answered < sent and time.monotonic() < final:
            try:
                data = await asyncio.wait_for(reader.read(1 << 16), max(0.1, final - time.monotonic()))
            except TimeoutError:
                break
            if not data:
                break
            more = time.monotonic() < stop_at
            for r in dec.feed(data):
                answered += 1
                codes[r.code] = codes.get(r.code, 0) + 1
                if r.code == 0:
                    acked.append(r.opaque - OPAQUE_BASE)
                if more and sent < MAX_PER_CONN:
                    send_one()
            await writer.drain()
    finally:
        writer.transport.abort()
    return {"sent": sent, "codes": codes, "acked": acked, "unanswered": sent - answered}


async def main(port: int, topic: str, conns: int, window: int, seconds: float, out: str) -> None:
    res = await asyncio.gather(*(flood_one(i, port, topic, window, seconds) for i in range(conns)))
    with open(out, "w") as f:
        json.dump({f"f{i}": r for i, r in enumerate(res)}, f)


if __name__ == "__main__":
    a = sys.argv[1:]
    asyncio.run(main(int(a[0]), a[1], int(a[2]), int(a[3]), float(a[4]), a[5]))

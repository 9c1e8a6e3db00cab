"""Remoting benchmark: request/response echo over loopback, server and client in separate processes.

Prints requests/s and p50/p99 latency for 1, 16 and 128 requests in flight
(1 KiB body each way). Bounded in count and time. Usage::

    .venv/bin/python bench/bench_remoting.py [--inflight 1,16,128] [--seconds 3] [--max-requests 400000]
        [--body 1024] [--mode coro|callback] [--loop uvloop|asyncio] [--repeat N] [--codec]

``--codec`` also runs an in-process micro benchmark of the frame codec
(struct hot path vs the construct declarations).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from remoting import new_event_loop  # noqa: E402
from remoting.client import RemotingClient  # noqa: E402
from remoting.codes import ResponseCode  # noqa: E402
from remoting.command import RemotingCommand  # noqa: E402
from remoting.server import RemotingServer  # noqa: E402

ECHO = 1


def _proc_cpu_seconds(pid: int) -> float:
    """utime+stime of a process (Linux /proc), to report CPU per request independent of machine load."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return float("nan")


def _loop_factory(kind: str):
    return new_event_loop if kind == "uvloop" else asyncio.new_event_loop


def server_main(port_q, stop_ev, loop_kind: str) -> None:
    """Child process: an echo server until ``stop_ev`` is set."""

    async def main():
        srv = RemotingServer("127.0.0.1", 0, name="bench-server")
        srv.register_processor(ECHO, lambda req, conn: req.response_to(ResponseCode.SUCCESS, body=req.body))
        await srv.start()
        port_q.put(srv.port)
        loop = asyncio.get_running_loop()
        while not stop_ev.is_set():
            await loop.run_in_executor(None, stop_ev.wait, 0.5)
        await srv.stop(1)

    with asyncio.Runner(loop_factory=_loop_factory(loop_kind)) as r:
        r.run(main())


async def run_level(
    addr: str, inflight: int, seconds: float, max_requests: int, body: bytes, mode: str, server_pid: int
):
    client = RemotingClient(name="bench-client")
    await client.get_connection(addr)
    lat: list[int] = []
    count = 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    perf = time.perf_counter_ns

    # warm-up
    for _ in range(200):
        await client.invoke(addr, RemotingCommand.request(ECHO, None, body), 5)

    t0 = perf()
    c0, s0 = time.process_time(), _proc_cpu_seconds(server_pid)
    if mode == "coro":

        async def worker():
            nonlocal count
            while count < max_requests and loop.time() < deadline:
                count += 1
                s = perf()
                resp = await client.invoke(addr, RemotingCommand.request(ECHO, None, body), 5)
                lat.append(perf() - s)
                if resp.code != 0 or len(resp.body) != len(body):
                    raise RuntimeError(f"bad response {resp}")

        await asyncio.gather(*(worker() for _ in range(inflight)))
    else:
        done = loop.create_future()
        active = 0

        def send():
            nonlocal count, active
            count += 1
            active += 1
            s = perf()

            def cb(resp, exc, s=s):
                nonlocal active
                active -= 1
                lat.append(perf() - s)
                if exc is not None or resp.code != 0:
                    if not done.done():
                        done.set_exception(exc or RuntimeError(f"bad response {resp}"))
                    return
                if count < max_requests and loop.time() < deadline:
                    send()
                elif active == 0 and not done.done():
                    done.set_result(None)

            client.invoke_async(addr, RemotingCommand.request(ECHO, None, body), 5, cb)

        for _ in range(inflight):
            send()
        await done
    elapsed = (perf() - t0) / 1e9
    ccpu, scpu = time.process_time() - c0, _proc_cpu_seconds(server_pid) - s0
    await client.close()
    lat.sort()
    n = len(lat)
    return {
        "inflight": inflight,
        "requests": n,
        "seconds": elapsed,
        "rps": n / elapsed,
        "p50_us": lat[n // 2] / 1000,
        "p99_us": lat[min(n - 1, int(n * 0.99))] / 1000,
        "mean_us": statistics.fmean(lat) / 1000,
        "client_cpu_us": ccpu / n * 1e6,
        "server_cpu_us": scpu / n * 1e6,
    }


def codec_micro(body_size: int, n: int = 100_000) -> None:
    """In-process: encode+decode cost per frame, and struct vs construct for the prefix/binary header."""
    from remoting.codec import (
        _BIN_FIXED,
        _PREFIX,
        BINARY_HEADER,
        FRAME_PREFIX,
        FrameDecoder,
        encode,
        encode_header,
    )

    body = b"x" * body_size
    cmd = RemotingCommand.request(ECHO, {"topic": "TopicTest", "queueId": "1"}, body)
    frame = b"".join(encode(cmd))
    t = time.perf_counter()
    for _ in range(n):
        encode(cmd)
    enc = (time.perf_counter() - t) / n
    stream = frame * 64
    dec = FrameDecoder()
    t = time.perf_counter()
    for _ in range(n // 64):
        dec.feed(stream)
    dcd = (time.perf_counter() - t) / (n // 64 * 64)
    print(f"codec JSON header, {body_size} B body: encode {enc * 1e6:.2f} us/frame, decode {dcd * 1e6:.2f} us/frame")

    t = time.perf_counter()
    for _ in range(n):
        _PREFIX.unpack_from(frame)
    s_prefix = (time.perf_counter() - t) / n
    t = time.perf_counter()
    for _ in range(n):
        FRAME_PREFIX.parse(frame)
    c_prefix = (time.perf_counter() - t) / n
    cmd.serialize_type = 1
    h = encode_header(cmd)
    t = time.perf_counter()
    for _ in range(n):
        _BIN_FIXED.unpack_from(h)
    s_bin = (time.perf_counter() - t) / n
    t = time.perf_counter()
    for _ in range(n):
        BINARY_HEADER.parse(h)
    c_bin = (time.perf_counter() - t) / n
    print(f"frame prefix parse: struct {s_prefix * 1e9:.0f} ns, construct(compiled) {c_prefix * 1e9:.0f} ns")
    print(f"binary header fixed part: struct {s_bin * 1e9:.0f} ns; whole header construct(compiled) {c_bin * 1e9:.0f} ns")
    cmd.serialize_type = 1
    bframe = b"".join(encode(cmd)) * 64
    dec = FrameDecoder()
    t = time.perf_counter()
    for _ in range(n // 64):
        dec.feed(bframe)
    print(f"codec ROCKETMQ header decode (struct path, whole frame): {(time.perf_counter() - t) / (n // 64 * 64) * 1e6:.2f} us/frame")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inflight", default="1,16,128")
    ap.add_argument("--seconds", type=float, default=3.0, help="time bound per level")
    ap.add_argument("--max-requests", type=int, default=400_000, help="count bound per level")
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--mode", choices=["coro", "callback"], default="coro")
    ap.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    ap.add_argument("--codec", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="runs per level; the best req/s is printed")
    args = ap.parse_args()

    if args.codec:
        codec_micro(args.body)

    ctx = mp.get_context("spawn")
    port_q, stop_ev = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=server_main, args=(port_q, stop_ev, args.loop), daemon=True)
    proc.start()
    try:
        port = port_q.get(timeout=30)
        addr = f"127.0.0.1:{port}"
        body = os.urandom(args.body)
        print(
            f"echo {args.body} B body each way, server pid {proc.pid}, client pid {os.getpid()}, "
            f"loop={args.loop}, client mode={args.mode}, cpus={os.cpu_count()}"
        )
        print(
            f"{'inflight':>8} {'requests':>9} {'req/s':>10} {'p50 us':>9} {'p99 us':>9} {'mean us':>9}"
            f" {'cli cpu us/req':>15} {'srv cpu us/req':>15}"
        )
        with asyncio.Runner(loop_factory=_loop_factory(args.loop)) as r:
            for level in (int(x) for x in args.inflight.split(",")):
                runs = [
                    r.run(run_level(addr, level, args.seconds, args.max_requests, body, args.mode, proc.pid))
                    for _ in range(max(1, args.repeat))
                ]
                res = max(runs, key=lambda x: x["rps"])
                print(
                    f"{res['inflight']:>8} {res['requests']:>9} {res['rps']:>10.0f} {res['p50_us']:>9.1f} "
                    f"{res['p99_us']:>9.1f} {res['mean_us']:>9.1f} {res['client_cpu_us']:>15.1f} "
                    f"{res['server_cpu_us']:>15.1f}",
                    flush=True,
                )
    finally:
        stop_ev.set()
        proc.join(10)
        if proc.is_alive():
            proc.kill()


if __name__ == "__main__":
    main()

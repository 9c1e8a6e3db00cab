"""Overload: a pipelined flood against one broker, and a well-behaved canary beside it.

16 connections keep 2,000 sends each in flight (each answer sends the next one) for ``--seconds``
(and at most ``--max-ops`` per connection); a canary connection sends one message at a time
meanwhile. Prints the canary's p50/p99, the flood's answers by code (SYSTEM_BUSY = 2), what was
acknowledged against what the queues hold afterwards (acked and lost), and the broker's peak RSS.
Goal (issue 17): canary p99 <= 100 ms, memory bounded, nothing acknowledged lost.

    .venv/bin/python bench/bench_overload.py [--flush SYNC_FLUSH] [--seconds 10] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import broker_load  # noqa: E402
from bench.bench_broker import RssSampler, create_topic, pct, rss_anon_kib, start_broker, stop_broker  # noqa: E402

FLOOD_TOPIC, CANARY_TOPIC, QUEUES = "FloodTopic", "CanaryTopic", 8


def run_flood(addr: str, conns: int, inflight: int, seconds: float, max_ops: int, body_size: int, worker: int) -> dict:
    """``conns`` connections with ``inflight`` pipelined sends each, bounded in time and count."""

    async def main() -> dict:
        body = os.urandom(body_size)
        loop = asyncio.get_running_loop()
        host, port = addr.rsplit(":", 1)
        t0 = time.monotonic()
        protos, transports, dones = [], [], []
        for c in range(conns):
            qid = (worker * conns + c) % QUEUES
            parts = [broker_load._frame_parts(broker_load.RequestCode.SEND_MESSAGE_V2,
                                              broker_load.send_header(FLOOD_TOPIC, qid))] * inflight
            done = loop.create_future()
            tr, pr = await loop.create_connection(
                lambda parts=parts, done=done: broker_load._SendProtocol(parts, body, t0 + seconds, max_ops, done),
                host, int(port))
            protos.append(pr)
            transports.append(tr)
            dones.append(done)
        try:
            await asyncio.wait_for(asyncio.gather(*dones), seconds + 60)
        finally:
            for tr in transports:
                tr.close()
        codes: dict[int, int] = {}
        for p in protos:
            for k, v in p.codes.items():
                codes[k] = codes.get(k, 0) + v
        answered = sum(len(p.lat) for p in protos)
        return {"answered": answered, "acked": answered - sum(codes.values()), "codes": codes,
                "lost_conn": sum(len(p.inflight) for p in protos)}

    loop = broker_load._loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def run_canary(addr: str, seconds: float, body_size: int, start_after: float) -> dict:
    """One message at a time on its own connection while the flood runs."""
    from remoting.client import RemotingClient
    from remoting.command import RemotingCommand

    async def main() -> dict:
        body = os.urandom(body_size)
        lat: list[int] = []
        codes: dict[int, int] = {}
        timeouts = 0
        async with RemotingClient() as c:
            await asyncio.sleep(start_after)  # let the flood build up first (a bench, not a test)
            deadline = time.monotonic() + seconds
            i = 0
            while time.monotonic() < deadline and i < 100_000:
                i += 1
                cmd = RemotingCommand.request(broker_load.RequestCode.SEND_MESSAGE_V2,
                                              broker_load.send_header(CANARY_TOPIC, i % QUEUES), body)
                t0 = time.perf_counter_ns()
                try:
                    r = await c.invoke(addr, cmd, 10)
                except Exception:  # noqa: BLE001 - a timeout counts against the canary
                    timeouts += 1
                    lat.append(10_000_000)
                    continue
                lat.append((time.perf_counter_ns() - t0) // 1000)
                codes[r.code] = codes.get(r.code, 0) + 1
        return {"lat": lat, "codes": codes, "timeouts": timeouts}

    loop = broker_load._loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def stored(addr: str, topic: str) -> int:
    from remoting.client import RemotingClient
    from remoting.command import RemotingCommand

    async def go() -> int:
        total = 0
        async with RemotingClient() as c:
            for q in range(QUEUES):
                r = await c.invoke(addr, RemotingCommand.request(
                    broker_load.RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": q}), 10)
                total += int(r.ext_fields["offset"])
        return total

    return asyncio.run(go())


def one_run(args, run: int) -> dict:
    workdir = tempfile.mkdtemp(prefix="bench-overload-")
    broker, port, _ = start_broker(workdir, args.flush, dict(kv.split("=", 1) for kv in args.broker_prop))
    addr = f"127.0.0.1:{port}"
    try:
        create_topic(addr, FLOOD_TOPIC, QUEUES)
        create_topic(addr, CANARY_TOPIC, QUEUES)
        idle = rss_anon_kib(broker.pid)
        sampler = RssSampler(broker.pid)
        sampler.start()
        ctx = mp.get_context("fork")
        per = args.conns // args.procs
        with ctx.Pool(args.procs + 1) as pool:
            canary = pool.apply_async(run_canary, (addr, args.seconds - 1.0, args.body, 1.0))
            floods = [pool.apply_async(run_flood, (addr, per, args.inflight, args.seconds, args.max_ops, args.body, w))
                      for w in range(args.procs)]
            fl = [f.get(args.seconds + 120) for f in floods]
            ca = canary.get(args.seconds + 120)
        peak = sampler.stop()
        codes: dict[int, int] = {}
        for f in fl:
            for k, v in f["codes"].items():
                codes[k] = codes.get(k, 0) + v
        acked = sum(f["acked"] for f in fl)
        # the reput may still be dispatching the last appends
        deadline = time.monotonic() + 30
        held = stored(addr, FLOOD_TOPIC)
        while held < acked and time.monotonic() < deadline:
            time.sleep(0.2)
            held = stored(addr, FLOOD_TOPIC)
        canary_acked = ca["codes"].get(0, 0)
        canary_held = stored(addr, CANARY_TOPIC)
        r = {"canary_p50": pct(ca["lat"], 0.5), "canary_p99": pct(ca["lat"], 0.99), "canary_n": len(ca["lat"]),
             "canary_codes": ca["codes"], "canary_timeouts": ca["timeouts"],
             "answered": sum(f["answered"] for f in fl), "busy": codes.get(2, 0), "codes": codes, "acked": acked,
             "stored": held, "lost": max(0, acked - held) + max(0, canary_acked - canary_held),
             "rss_idle_mib": idle / 1024, "rss_peak_mib": peak / 1024}
        print(f"run {run}: canary p50 {r['canary_p50']:.1f} ms p99 {r['canary_p99']:.1f} ms "
              f"({r['canary_n']} sends, codes {r['canary_codes']}, timeouts {r['canary_timeouts']}); "
              f"flood answered {r['answered']}, SYSTEM_BUSY {r['busy']}, other codes "
              f"{ {k: v for k, v in codes.items() if k != 2} }, acked {acked}, stored {held}, lost {r['lost']}; "
              f"broker RSS idle {r['rss_idle_mib']:.0f} MiB, peak {r['rss_peak_mib']:.0f} MiB", flush=True)
        return r
    finally:
        stop_broker(broker)
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--inflight", type=int, default=2000, help="pipelined sends per flood connection")
    ap.add_argument("--procs", type=int, default=2, help="flood client processes")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--max-ops", type=int, default=200_000, help="cap on sends per flood connection")
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--flush", default="ASYNC_FLUSH", choices=["ASYNC_FLUSH", "SYNC_FLUSH"])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--broker-prop", action="append", default=[], metavar="KEY=VALUE",
                    help="extra broker config, e.g. serverRequestTurnBudget=16 (repeatable)")
    args = ap.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.conns} connections x "
          f"{args.inflight} in flight, {args.body} B bodies, {args.flush}, {args.seconds:.0f} s per run", flush=True)
    rs = [one_run(args, i + 1) for i in range(args.runs)]
    if len(rs) > 1:
        med = {k: statistics.median(r[k] for r in rs) for k in ("canary_p50", "canary_p99", "busy", "acked",
                                                                 "rss_peak_mib", "lost")}
        print("median: " + ", ".join(f"{k} {v:.1f}" for k, v in med.items()))


if __name__ == "__main__":
    main()

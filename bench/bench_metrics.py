"""What the Prometheus endpoint costs. Prints figures, asserts nothing.

1. Hot path, A/B in one run: two brokers of this checkout, metricsExporterType DISABLE (A) and
   PROM (B), both up, loaded in turn in 250 ms windows A B B A ... by the same senders (1 KiB,
   16 and 64 senders, ``--ab-seconds`` each, split over ``--ab-restarts`` pairs of fresh
   processes; bench/bench_ab.py): sends/s and broker CPU per message of each, and B/A with
   95 % intervals; then the same with PROM on A, and the two orientations' geometric mean.
   ``--rounds``: the older form, a fresh broker per round alternated A B, B A (``--reps``
   pairs), medians.
2. Scrape, with ``--topics`` topics (one message each) and ``--groups`` groups (each
   committing on ``--topics // --groups`` topics): the scrape's wall time (client side),
   size and series count; and how long the broker's event loop is held, seen as the round
   trip of a probe request sent back to back while scrapes and the periodic refresh run
   (against the same probe without scraping).

Usage::

    .venv/bin/python bench/bench_metrics.py [--ab-seconds 120] [--ab-restarts 4] [--procs 4] [--topics 1000] [--groups 200]
        [--scrapes 20] [--skip-ab] [--skip-scrape] [--rounds [--seconds 4] [--reps 2]]
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
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.bench_broker import (  # noqa: E402
    cpu_line,
    cpu_seconds,
    create_topic,
    free_port,
    send_round,
    start_broker,
    stop_broker,
)


def _metrics_props(on: bool, port: int, refresh_ms: int = 5000) -> dict[str, str]:
    if not on:
        return {"metricsExporterType": "DISABLE"}
    return {"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1",
            "metricsPromExporterPort": str(port), "metricsRefreshIntervalMillis": str(refresh_ms)}


def ab_rounds(args) -> None:
    ctx = mp.get_context("fork")
    # (mode, senders) -> per round (sends/s, broker CPU us/msg, client CPU us/msg)
    results: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    order = []
    for rep in range(args.reps):
        # A B, then B A: a load that drifts during the run weighs on both sides alike
        for mode in (("off", "on") if rep % 2 == 0 else ("on", "off")):
            order.append(mode)
            workdir = tempfile.mkdtemp(prefix="bench-metrics-")
            broker, port, _ = start_broker(workdir, "ASYNC_FLUSH", _metrics_props(mode == "on", free_port(), args.ab_refresh_ms))
            addr = f"127.0.0.1:{port}"
            try:
                create_topic(addr, "BenchTopic", 8)
                with ctx.Pool(args.procs) as pool:
                    for senders in (16, 64):
                        r = send_round(pool, addr, "BenchTopic", senders, args.procs, args.seconds, 1024, 1, 8,
                                       args.max_ops, broker.pid)
                        n = max(r["msgs"], 1)
                        rate = r["msgs"] / r["elapsed"]
                        cpu, client = r["broker_cpu"] / n * 1e6, r["client_cpu"] / n * 1e6
                        results.setdefault((mode, senders), []).append((rate, cpu, client))
                        print(f"  rep {rep + 1} metrics {mode:3s} {senders:2d} senders: {rate:8.0f} sends/s  "
                              f"p50 {r['p50']:.2f} p99 {r['p99']:.2f} ms  errors {r['errors']}\n  {cpu_line(r)}",
                              flush=True)
            finally:
                stop_broker(broker)
                shutil.rmtree(workdir, ignore_errors=True)
    print(f"order: {' '.join(order)}")
    med = statistics.median
    for senders in (16, 64):
        off = results[("off", senders)]
        on = results[("on", senders)]
        r_off, r_on = med(x[0] for x in off), med(x[0] for x in on)
        c_off, c_on = med(x[1] for x in off), med(x[1] for x in on)
        k_off = med(x[2] for x in off)
        pair = med(b[0] / a[0] - 1 for a, b in zip(off, on, strict=True)) * 100
        # broker and senders share the cores: each message costs the machine broker + sender CPU,
        # so with the cores busy sends/s falls by the broker's extra CPU over that sum
        implied = -(c_on - c_off) / (c_off + k_off) * 100
        print(f"{senders:2d} senders: median sends/s off {r_off:.0f}, on {r_on:.0f} ({(r_on / r_off - 1) * 100:+.1f} %; "
              f"median of the {len(off)} pairs {pair:+.1f} %); broker CPU/msg off {c_off:.2f} us, on {c_on:.2f} us "
              f"({(c_on / c_off - 1) * 100:+.1f} %), senders {k_off:.1f} us/msg: CPU-bound sends/s {implied:+.1f} %")


async def _setup_tables(addr: str, topics: int, groups: int) -> None:
    from remoting.client import RemotingClient
    from remoting.codes import RequestCode
    from remoting.command import RemotingCommand

    async with RemotingClient() as c:
        sem = asyncio.Semaphore(64)

        async def one(i: int) -> None:
            async with sem:
                t = f"ScrapeT{i:04d}"
                h = {"topic": t, "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4, "perm": 6,
                     "topicFilterType": "SINGLE_TAG", "order": "false"}
                await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h), 10)
                sh = {"a": "pg", "b": t, "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": int(time.time() * 1000),
                      "h": 0, "i": ""}
                await c.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, sh, b"x" * 512), 10)

        await asyncio.gather(*(one(i) for i in range(topics)))
        per = max(1, topics // groups)

        async def commit(g: int) -> None:
            async with sem:
                for k in range(per):
                    t = f"ScrapeT{(g * per + k) % topics:04d}"
                    h = {"consumerGroup": f"ScrapeG{g:03d}", "topic": t, "queueId": 0, "commitOffset": 0}
                    await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, h), 10)

        await asyncio.gather(*(commit(g) for g in range(groups)))


async def _probe(addr: str, stop: threading.Event, out: list[float]) -> None:
    from remoting.client import RemotingClient
    from remoting.codes import RequestCode
    from remoting.command import RemotingCommand

    async with RemotingClient() as c:
        while not stop.is_set() and len(out) < 200_000:
            t0 = time.perf_counter()
            await c.invoke(addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET,
                                                         {"topic": "ScrapeT0000", "queueId": 0}), 5)
            out.append((time.perf_counter() - t0) * 1000.0)


def _probe_for(addr: str, seconds: float, during=None) -> list[float]:
    stop = threading.Event()
    out: list[float] = []
    th = threading.Thread(target=lambda: asyncio.run(_probe(addr, stop, out)), daemon=True)
    th.start()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if during is not None:
            during()
        else:
            time.sleep(0.05)
    stop.set()
    th.join(10)
    return out


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def probe_baseline(args) -> None:
    """The same tables on a broker without metrics: the probe's figures on this machine as it is."""
    workdir = tempfile.mkdtemp(prefix="bench-scrape-base-")
    broker, port, _ = start_broker(workdir, "ASYNC_FLUSH", _metrics_props(False, 0))
    addr = f"127.0.0.1:{port}"
    try:
        asyncio.run(_setup_tables(addr, args.topics, args.groups))
        xs = _probe_for(addr, args.probe_seconds)
        print(f"probe round trip (metrics DISABLE, same tables): {len(xs)} probes, p50 {_pct(xs, 0.5):.2f} ms  "
              f"p99 {_pct(xs, 0.99):.2f} ms  max {max(xs):.2f} ms")
    finally:
        stop_broker(broker)
        shutil.rmtree(workdir, ignore_errors=True)


def scrape_round(args) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    workdir = tempfile.mkdtemp(prefix="bench-scrape-")
    mport = free_port()
    broker, port, _ = start_broker(workdir, "ASYNC_FLUSH", _metrics_props(True, mport, args.refresh_ms))
    addr = f"127.0.0.1:{port}"
    try:
        t0 = time.perf_counter()
        asyncio.run(_setup_tables(addr, args.topics, args.groups))
        print(f"set-up: {args.topics} topics (1 message each), {args.groups} groups: "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        time.sleep(args.refresh_ms / 1000.0 * 2 + 0.5)  # bench only: let two refreshes see the tables
        times, size, series = [], 0, 0
        idle_t0, idle_c0 = time.monotonic(), cpu_seconds(broker.pid)
        time.sleep(2.0)  # bench only: the broker's CPU rate without scrapes (refresh included)
        idle_rate = (cpu_seconds(broker.pid) - idle_c0) / (time.monotonic() - idle_t0)
        t_all, c0 = time.monotonic(), cpu_seconds(broker.pid)
        for _ in range(args.scrapes):
            t0 = time.perf_counter()
            with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=30) as r:
                body = r.read()
            times.append((time.perf_counter() - t0) * 1000.0)
            size = len(body)
        cpu = cpu_seconds(broker.pid) - c0 - idle_rate * (time.monotonic() - t_all)
        series = sum(len(f.samples) for f in text_string_to_metric_families(body.decode()))
        print(f"scrape: {series} series, {size / 1024:.0f} KiB; wall median {statistics.median(times):.1f} ms, "
              f"max {max(times):.1f} ms over {len(times)} scrapes; broker CPU {cpu / len(times) * 1000:.1f} ms "
              f"per scrape (idle rate {idle_rate * 1000:.0f} ms/s subtracted)")
        idle = _probe_for(addr, args.probe_seconds)

        def scrape_once():
            with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=30) as r:
                r.read()

        busy = _probe_for(addr, args.probe_seconds, scrape_once)
        for name, xs in (("no scrapes", idle), ("scraping back to back", busy)):
            print(f"probe round trip ({name}; refresh every {args.refresh_ms} ms): {len(xs)} probes, "
                  f"p50 {_pct(xs, 0.5):.2f} ms  p99 {_pct(xs, 0.99):.2f} ms  max {max(xs):.2f} ms")
    finally:
        stop_broker(broker)
        shutil.rmtree(workdir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--max-ops", type=int, default=2_000_000)
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--groups", type=int, default=200)
    ap.add_argument("--scrapes", type=int, default=20)
    ap.add_argument("--refresh-ms", type=int, default=1000)
    ap.add_argument("--ab-refresh-ms", type=int, default=5000,
                    help="metricsRefreshIntervalMillis of the A/B rounds (the broker default: 5000)")
    ap.add_argument("--probe-seconds", type=float, default=5.0)
    ap.add_argument("--skip-ab", action="store_true")
    ap.add_argument("--ab-seconds", type=float, default=120.0,
                    help="hot path: length of each interleaved round (bench_ab: both brokers up, loaded in turn)")
    ap.add_argument("--ab-restarts", type=int, default=4,
                    help="hot path: the round split over this many pairs of fresh broker processes")
    ap.add_argument("--rounds", action="store_true",
                    help="hot path: the older form, a fresh broker per round (--reps pairs of --seconds rounds); "
                         "on a shared host its rounds move by more than the effect")
    ap.add_argument("--skip-scrape", action="store_true")
    args = ap.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    if not args.skip_ab:
        if args.rounds:
            ab_rounds(args)
        else:
            from bench import bench_ab

            # the same broker code twice, metrics off and PROM, loaded in turn in short windows; then
            # again with the sides swapped (broker B has measured ~1 % slower than A in A/A runs)
            prom = f"metricsExporterType=PROM,metricsRefreshIntervalMillis={args.ab_refresh_ms}"
            common = ["--seconds", str(args.ab_seconds), "--restarts", str(args.ab_restarts), "--procs", str(args.procs)]
            print("metrics PROM on broker B:", flush=True)
            on_b = bench_ab.compare(bench_ab.options(["--b-conf", prom, *common]))
            print("metrics PROM on broker A:", flush=True)
            on_a = bench_ab.compare(bench_ab.options(["--a-conf", prom, *common]))
            for senders, b in on_b.items():
                a = on_a.get(senders)
                if a is None or b is None:
                    continue
                # on/off from each orientation, then their geometric mean (the side's bias cancels)
                rate = (b[0] / a[0]) ** 0.5
                cpu = (b[1] / a[1]) ** 0.5
                print(f"{senders} senders, both orientations: metrics on/off sends/s {(rate - 1) * 100:+.1f} % "
                      f"(on as B {(b[0] - 1) * 100:+.1f} %, on as A {(1 / a[0] - 1) * 100:+.1f} %), broker CPU/msg "
                      f"{(cpu - 1) * 100:+.1f} %", flush=True)
    if not args.skip_scrape:
        probe_baseline(args)
        scrape_round(args)


if __name__ == "__main__":
    main()

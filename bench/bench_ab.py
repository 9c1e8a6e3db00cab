"""Two brokers side by side, loaded in turn: A/B figures that hold on a noisy shared machine.

Prints (never asserts). Broker A and broker B run at the same time, each on its own store
(``--a-root``/``--b-root``: two checkouts, e.g. git worktrees of two commits; ``--a-conf``/
``--b-conf``: extra broker properties, e.g. ``metricsExporterType=PROM``). The sender processes
(bench/broker_load.py's kind: raw frames, exactly N requests in flight) hold a connection to
each and load one broker at a time, in short windows (``--window``, default 0.25 s) in the order
A B B A A B B A ..., every process switching at the same instants. A drift of the machine's speed
(other tenants of the host, memory the host hands out cold) that lasts longer than a window
weighs on both alike, which rounds of several seconds run one after the other cannot promise:
here the same code measured twice in separate rounds moved by ±15 %.

Two processes of the same code also differ, by a percent or two and now and then more (memory
layout, hash seed): ``--restarts N`` splits each round over N pairs of fresh brokers (new stores)
and sums them, which averages that out.

For each sender count: messages/s of each broker over its own windows; its CPU per message
(utime+stime of all its threads, from /proc/<pid>/task/*/schedstat, read at every switch) over
its active windows, and over the whole run (its idle windows included: periodic work counts
too); the ratios B/A of messages/s and of CPU per message over the active windows, each with
a 95 % bootstrap interval (the process pairs drawn again with replacement, then the window pairs
within them); and, with several process pairs, each pair's own ratio.

Usage::

    .venv/bin/python bench/bench_ab.py [--a-root DIR] [--b-root DIR] [--a-conf k=v,k=v] [--b-conf k=v]
        [--senders 16,64] [--batch 1] [--body 1024] [--seconds 20] [--window 0.25] [--procs 4]
        [--flush ASYNC_FLUSH|SYNC_FLUSH] [--restarts N]

Bounded: every round lasts ``--seconds`` (plus a drain) and sends at most ``--max-ops`` requests.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import broker_load  # noqa: E402
from bench.bench_broker import cpu_times, create_topic, free_port, host_memory_note, start_broker  # noqa: E402
from common.message import encode_batch_body  # noqa: E402
from remoting.codes import RequestCode  # noqa: E402

# window k goes to broker _ORDER[k % 4]: A B B A, so neither broker always follows the other
_ORDER = (0, 1, 1, 0)


def parse_conf(text: str) -> dict[str, str]:
    out = {}
    for item in filter(None, (s.strip() for s in (text or "").split(","))):
        k, sep, v = item.partition("=")
        if not sep:
            raise SystemExit(f"--a-conf/--b-conf/--a-env/--b-env: {item!r} is not key=value")
        out[k.strip()] = v.strip()
    return out


def run_ns(pid: int) -> int:
    """CPU time of every thread of ``pid`` so far, in ns (schedstat: user and kernel, ns resolution)."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return total


class _Windowed(broker_load._SendProtocol):
    """_SendProtocol that sends only inside the windows it is given (``begin``), on one connection."""

    def __init__(self, parts, body):
        super().__init__(parts, body, 0.0, 1 << 62, None)

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.write = transport.writelines

    def begin(self, deadline: float, max_ops: int, done: asyncio.Future) -> None:
        self.deadline, self.max_ops, self.done = deadline, max_ops, done
        out: list = []
        for slot in range(len(self.parts)):
            self._frame(slot, out)
        self.write(out)


def run_windows(addrs: list[str], topic: str, senders: int, t0: float, window: float, nwin: int, max_ops: int,
                body_size: int, batch: int, queues: int, worker: int) -> dict:
    """Worker process: ``senders`` requests in flight to broker ``_ORDER[k % 4]`` during window k
    (window k is [t0 + k * window, t0 + (k + 1) * window) on the shared monotonic clock).
    Returns the stored messages of each window and each broker's latencies (µs)."""

    async def main() -> dict:
        body = os.urandom(body_size)
        code = RequestCode.SEND_BATCH_MESSAGE if batch > 1 else RequestCode.SEND_MESSAGE_V2
        payload = encode_batch_body([broker_load._Msg(body, i) for i in range(batch)]) if batch > 1 else body
        headers = [broker_load.send_header(topic, (worker * senders + sid) % queues, "UNIQ_KEY\x01x", batch > 1)
                   for sid in range(senders)]
        parts = [broker_load._frame_parts(code, h) for h in headers]
        loop = asyncio.get_running_loop()
        protos = []
        for addr in addrs:
            host, port = addr.rsplit(":", 1)
            _, proto = await loop.create_connection(lambda: _Windowed(parts, payload), host, int(port))
            protos.append(proto)
        per_window = []
        budget = max_ops
        cpu0 = time.process_time()
        for k in range(nwin):
            start = t0 + k * window
            delay = start - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            p = protos[_ORDER[k % 4]]
            before_ok = len(p.lat) - p.errors
            done = loop.create_future()
            sent0 = p.sent
            p.begin(start + window, p.sent + budget, done)
            await asyncio.wait_for(done, window + 30)
            budget -= p.sent - sent0
            per_window.append((len(p.lat) - p.errors - before_ok) * max(batch, 1))
            if budget <= 0:
                break
        for p in protos:
            p.transport.close()
        return {"per_window": per_window, "lat": [p.lat for p in protos], "errors": [p.errors for p in protos],
                "codes": [p.codes for p in protos], "cpu": time.process_time() - cpu0}

    loop = broker_load._loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def _sample_cpu(pids: list[int], t0: float, window: float, nwin: int, out: list[list[int]]) -> None:
    """At every window edge (k = 0 .. nwin), each broker's CPU ns so far."""
    for k in range(nwin + 1):
        delay = t0 + k * window - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # bench only: the sampler waits for the next window edge
        out.append([run_ns(pid) for pid in pids])


def _boot_ratio_ci(groups: list[list[tuple[float, float, float, float]]],
                   reps: int = 2000) -> tuple[list[float], ...]:
    """95 % intervals of the whole-run ratios B/A of messages/s and of CPU per message: the process
    pairs drawn again with replacement, then the window pairs (A msgs, A CPU, B msgs, B CPU) within
    each, so both a process's luck (memory layout, hash seed) and the windows' noise count."""
    rnd = random.Random(7)
    groups = [g for g in groups if g]
    rates, cpus = [], []
    for _ in range(reps):
        am = ac = bm = bc = 0.0
        for g in rnd.choices(groups, k=len(groups)):
            for a_m, a_c, b_m, b_c in rnd.choices(g, k=len(g)):
                am += a_m
                ac += a_c
                bm += b_m
                bc += b_c
        rates.append(bm / am)
        cpus.append((bc / bm) / (ac / am))
    rates.sort()
    cpus.sort()
    lo, hi = int(0.025 * reps), int(0.975 * reps) - 1
    return [rates[lo], rates[hi]], [cpus[lo], cpus[hi]]


def _pct(xs: list[int], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] / 1000.0 if xs else float("nan")


def ab_round(pool, args, addrs: list[str], pids: list[int], senders: int, seconds: float) -> dict:
    """One interleaved round on the running brokers; the figures of each side, to sum over rounds."""
    nwin = max(4, int(seconds / args.window) // 4 * 4)
    t0 = time.monotonic() + 0.5  # every worker connected before the first window
    per = max(1, senders // args.procs)
    total0 = [run_ns(pid) for pid in pids]
    ut0 = [cpu_times(pid) for pid in pids]
    edges: list[list[int]] = []
    sampler = threading.Thread(target=_sample_cpu, args=(pids, t0, args.window, nwin, edges), daemon=True)
    sampler.start()
    jobs = [(addrs, "BenchTopic", per, t0, args.window, nwin, args.max_ops // args.procs, args.body, args.batch, 8, w)
            for w in range(args.procs)]
    results = pool.starmap(run_windows, jobs)
    sampler.join(args.window * 2 + 5)
    total1 = [run_ns(pid) for pid in pids]
    ut1 = [cpu_times(pid) for pid in pids]
    n = min(len(r["per_window"]) for r in results)
    msgs = [sum(r["per_window"][k] for r in results) for k in range(n)]
    cpu = [(edges[k + 1][_ORDER[k % 4]] - edges[k][_ORDER[k % 4]]) / 1e3 for k in range(min(n, len(edges) - 1))]
    acc = {"msgs": [0, 0], "cpu": [0.0, 0.0], "win": [0, 0], "pairs": [], "whole": [0.0, 0.0],
           "user": [0.0, 0.0], "kern": [0.0, 0.0]}
    for k in range(len(cpu)):
        s = _ORDER[k % 4]
        acc["msgs"][s] += msgs[k]
        acc["cpu"][s] += cpu[k]
        acc["win"][s] += 1
    # pairs: windows (0,1), (2,3), ...: one of each broker, A B then B A
    for k in range(0, len(cpu) - 1, 2):
        a, b = (k, k + 1) if _ORDER[k % 4] == 0 else (k + 1, k)
        if msgs[a] and msgs[b]:
            acc["pairs"].append((msgs[a], cpu[a], msgs[b], cpu[b]))
    for i in range(2):
        acc["whole"][i] = (total1[i] - total0[i]) / 1e3
        acc["user"][i] = (ut1[i][0] - ut0[i][0]) * 1e6
        acc["kern"][i] = (ut1[i][1] - ut0[i][1]) * 1e6
    acc["errors"] = [sum(r["errors"][i] for r in results) for i in range(2)]
    acc["lat"] = [[x for r in results for x in r["lat"][i]] for i in range(2)]
    acc["client"] = sum(r["cpu"] for r in results)
    return acc


def _ratios(acc: dict) -> tuple[float, float]:
    m, c, w = acc["msgs"], acc["cpu"], acc["win"]
    return (m[1] / w[1]) / (m[0] / w[0]), (c[1] / m[1]) / (c[0] / m[0])


def report(args, senders: int, rounds: list[dict]) -> tuple[float, float] | None:
    """Print one sender count's figures over every process pair's round; (B/A msgs/s, B/A CPU/msg)."""
    tot: dict = {k: [sum(r[k][i] for r in rounds) for i in range(2)]
                 for k in ("msgs", "cpu", "win", "whole", "user", "kern", "errors")}
    lat = [[x for r in rounds for x in r["lat"][i]] for i in range(2)]
    groups = [r["pairs"] for r in rounds]
    all_msgs = sum(tot["msgs"])
    print(f"{senders} senders x {args.batch} msg(s) of {args.body} B, {sum(tot['win'])} windows of "
          f"{args.window * 1000:.0f} ms ({sum(len(g) for g in groups)} pairs) over {len(rounds)} process pair(s); "
          f"senders' CPU {sum(r['client'] for r in rounds) / max(all_msgs, 1) * 1e6:.1f} us/msg")
    for i, name in enumerate("AB"):
        n = max(tot["msgs"][i], 1)
        print(f"  {name}: {tot['msgs'][i] / max(tot['win'][i] * args.window, 1e-9):9.0f} msgs/s  broker CPU "
              f"{tot['cpu'][i] / n:6.2f} us/msg in its windows, {tot['whole'][i] / n:6.2f} over the whole run "
              f"(user {tot['user'][i] / n:.1f}, kernel {tot['kern'][i] / n:.1f})  p50 {_pct(lat[i], 0.5):.2f} ms "
              f"p99 {_pct(lat[i], 0.99):.2f} ms  errors {tot['errors'][i]}")
    if all(g for g in groups) and tot["msgs"][0] and tot["msgs"][1]:
        rate, cpu_ratio = _ratios(tot)
        rate_ci, cpu_ci = _boot_ratio_ci(groups)
        for label, x, (lo, hi) in (("msgs/s", rate, rate_ci), ("CPU/msg", cpu_ratio, cpu_ci)):
            print(f"  B/A {label:8s} {(x - 1) * 100:+6.1f} %  (95 % interval {(lo - 1) * 100:+.1f} .. "
                  f"{(hi - 1) * 100:+.1f} %)")
        if len(rounds) > 1:
            each = [_ratios(r) for r in rounds]
            print("  B/A msgs/s of each process pair: " + ", ".join(f"{(x - 1) * 100:+.1f} %" for x, _ in each))
        sys.stdout.flush()
        return rate, cpu_ratio
    sys.stdout.flush()
    return None


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a-root", default=ROOT, help="checkout whose bin/mqbroker is broker A")
    ap.add_argument("--b-root", default=ROOT, help="checkout whose bin/mqbroker is broker B")
    ap.add_argument("--a-conf", default="", help="extra properties of broker A: k=v,k=v")
    ap.add_argument("--b-conf", default="", help="extra properties of broker B: k=v,k=v")
    ap.add_argument("--a-env", default="", help="extra environment of broker A: K=V,K=V")
    ap.add_argument("--b-env", default="", help="extra environment of broker B: K=V,K=V")
    ap.add_argument("--senders", default="16,64", help="comma list: one round per sender count")
    ap.add_argument("--batch", type=int, default=1, help="messages per request (SEND_BATCH_MESSAGE when > 1)")
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--seconds", type=float, default=20.0,
                    help="length of each sender count's round (both brokers), split over --restarts process pairs")
    ap.add_argument("--restarts", type=int, default=1, help="process pairs: fresh brokers and stores for each")
    ap.add_argument("--window", type=float, default=0.25)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--max-ops", type=int, default=5_000_000, help="cap on requests per round")
    ap.add_argument("--flush", default="ASYNC_FLUSH", choices=["ASYNC_FLUSH", "SYNC_FLUSH"])
    return ap


def main() -> None:
    args = parser().parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if note := host_memory_note():
        print(note)
    compare(args)


def compare(args: argparse.Namespace) -> dict[int, tuple[float, float] | None]:
    """Start both brokers, run one interleaved round per sender count, print the figures, stop them
    (``args``: this module's options, also built by bench_metrics); per sender count, the ratios
    B/A of msgs/s and of CPU per message."""
    confs = [parse_conf(args.a_conf), parse_conf(args.b_conf)]
    for c in confs:  # a metrics port of 0 would be taken by both: give each its own
        if c.get("metricsExporterType", "").upper() == "PROM" and "metricsPromExporterPort" not in c:
            c["metricsPromExporterPort"] = str(free_port())
            c.setdefault("metricsPromExporterHost", "127.0.0.1")
    print(f"A: {args.a_root} {confs[0] or ''} {args.a_env}\nB: {args.b_root} {confs[1] or ''} {args.b_env}")
    senders_list = [int(x) for x in args.senders.split(",")]
    rounds: dict[int, list[dict]] = {n: [] for n in senders_list}
    envs = (parse_conf(args.a_env), parse_conf(args.b_env))
    with mp.get_context("fork").Pool(args.procs) as pool:
        for _ in range(args.restarts):
            # fresh processes each time: two processes of the same code differ by a percent or two
            # (memory layout, hash seed); several pairs average that out and the interval shows it
            dirs = [tempfile.mkdtemp(prefix="bench-ab-") for _ in range(2)]
            procs: list[subprocess.Popen] = []
            try:
                addrs = []
                for root, d, c, e in zip((args.a_root, args.b_root), dirs, confs, envs, strict=True):
                    p, port, _ = start_broker(d, args.flush, c, env={**os.environ, "PYTHONPATH": root, **e},
                                              root=root)
                    procs.append(p)
                    addrs.append(f"127.0.0.1:{port}")
                    create_topic(addrs[-1], "BenchTopic", 8)
                for senders in senders_list:
                    rounds[senders].append(ab_round(pool, args, addrs, [p.pid for p in procs], senders,
                                                    args.seconds / args.restarts))
            finally:
                for p in procs:
                    p.terminate()
                for p in procs:
                    try:
                        p.wait(30)
                    except subprocess.TimeoutExpired:
                        p.kill()
                for d in dirs:
                    shutil.rmtree(d, ignore_errors=True)
    return {senders: report(args, senders, rounds[senders]) for senders in senders_list}


def options(argv: list[str] | None = None) -> argparse.Namespace:
    return parser().parse_args(argv)


if __name__ == "__main__":
    main()

"""Broker benchmark: a real bin/mqbroker process driven over loopback by several client processes.

Prints (never asserts):

* start-up time: process start -> accepting connections (``--startup``: several
  starts on an empty store and on a store of ``--startup-msgs`` messages; where
  PYTHONDONTWRITEBYTECODE is set, every start compiles every module, so the
  figure with a warm bytecode cache in a temporary PYTHONPYCACHEPREFIX, what any
  normal install has, is printed too);
* sends/s and p50/p99 latency, 1 KiB messages, 16 and 64 concurrent senders spread over client processes;
* batch sends (16 messages per request);
* pull throughput draining the backlog;
* end-to-end latency send -> long-poll delivery at a fixed rate (default 5,000 msgs/s);
* broker anonymous memory (RssAnon) at idle and the peak under load;
* per round, the broker's CPU time per message (utime+stime from /proc) and the
  sender processes' own CPU per message: on a small shared machine the
  throughput figure moves with whatever else runs, the CPU per message much less.

The senders (bench/broker_load.py) are raw asyncio protocols with precomputed
frames keeping exactly N requests in flight, so that they cost the machine as
little as possible. Bounded in time and count. Usage::

    .venv/bin/python bench/bench_broker.py [--seconds 5] [--procs 4] [--body 1024] [--e2e-rate 5000]
        [--flush ASYNC_FLUSH|SYNC_FLUSH] [--keep] [--only-send | --only-batch] [--profile FILE]
        [--startup [--startup-runs 5] [--startup-msgs 100000]]

``--profile FILE`` runs the broker under cProfile (stats written at its shutdown) and prints
where its time went per stored message, by stage: frame parse, header decode, processor, store
append, dispatch (CQ + index), response encode, socket writes, the event loop
(bench/profile_breakdown.py; ``python -m pstats FILE`` for the raw stats).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import broker_load  # noqa: E402
from bench.profile_breakdown import report as profile_report  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def rss_anon_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class RssSampler(threading.Thread):
    """Samples the broker's RssAnon every 100 ms; ``peak`` is the maximum seen."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(0.1):
            self.peak = max(self.peak, rss_anon_kib(self.pid))

    def stop(self) -> int:
        self._halt.set()
        self.join(1)
        return self.peak


def cpu_times(pid: int, task: int | None = None) -> tuple[float, float]:
    """(utime, stime) of a process (or of its thread ``task``), in seconds (from /proc)."""
    try:
        with open(f"/proc/{pid}/stat" if task is None else f"/proc/{pid}/task/{task}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tck = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / tck, int(fields[12]) / tck
    except (OSError, IndexError, ValueError):
        return float("nan"), float("nan")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    return sum(cpu_times(pid))


def host_memory_note() -> str:
    """A line on the machine's memory where it moves the figures, else ''.

    A virtual machine whose balloon driver reports free pages to the host hands them back:
    the next time the guest allocates such a page (every new page of the page cache, which
    a broker writing a new store allocates all the time) the host faults it in again.
    Measured on a 2-core VM: writing 2 GB into a new file took 4.2 s of system time with
    the pages cold against 0.36 s warm, about 8 us a 4 KiB page, 2 us a 1 KiB message,
    in every broker alike (the Java broker's too). The figure then moves with the host."""
    try:
        with open("/sys/module/page_reporting/parameters/page_reporting_order") as f:
            order = int(f.read())
    except (OSError, ValueError):
        return ""
    if order > 10:  # above the largest buddy order: nothing is ever reported
        return ""
    return ("memory: the host takes back free guest pages (free page reporting, order "
            f"{order}): each new page-cache page may cost a host fault, in the kernel share of the "
            "broker CPU below")


def pct(values: list[int], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] / 1000.0


def start_broker(workdir: str, flush: str, extra: dict[str, str], profile: str | None = None,
                 env: dict[str, str] | None = None, root: str = ROOT) -> tuple[subprocess.Popen, int, float]:
    """bin/mqbroker of checkout ``root`` (this one by default) on a store in ``workdir``;
    (process, port, seconds until it accepted connections)."""
    port = free_port()
    props = {
        "brokerClusterName": "BenchCluster",
        "brokerName": "bench-broker",
        "listenPort": str(port),
        "brokerIP1": "127.0.0.1",
        "storePathRootDir": os.path.join(workdir, "store"),
        "flushDiskType": flush,
        **extra,
    }
    conf = os.path.join(workdir, "broker.conf")
    with open(conf, "w") as f:
        f.write("".join(f"{k}={v}\n" for k, v in props.items()))
    log = open(os.path.join(workdir, "broker.log"), "wb")
    t0 = time.monotonic()
    cmd = [os.path.join(root, "bin", "mqbroker"), "-c", conf]
    if profile:
        # the broker under cProfile (stats written when it shuts down on SIGTERM)
        cmd = [sys.executable, "-m", "cProfile", "-o", profile, "-m", "broker", "-c", conf]
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=root,
                         env=env or {**os.environ, "PYTHONPATH": root})
    deadline = t0 + 30
    while not port_open(port):
        if p.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"broker did not start, see {workdir}/broker.log")
        time.sleep(0.005)
    return p, port, time.monotonic() - t0


def create_topic(addr: str, topic: str, queues: int) -> None:
    import asyncio

    from remoting.client import RemotingClient
    from remoting.codes import RequestCode
    from remoting.command import RemotingCommand

    async def go():
        async with RemotingClient() as c:
            h = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues, "writeQueueNums": queues,
                 "perm": 6, "topicFilterType": "SINGLE_TAG", "order": "false"}
            r = await c.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, h), 5)
            assert r.code == 0, r.remark

    asyncio.run(go())


def max_offset(addr: str, topic: str) -> int:
    import asyncio

    from remoting.client import RemotingClient
    from remoting.codes import RequestCode
    from remoting.command import RemotingCommand

    async def go():
        async with RemotingClient() as c:
            r = await c.invoke(addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": 0}), 5)
            return int(r.ext_fields["offset"])

    return asyncio.run(go())


def send_round(pool, addr, topic, total_senders, procs, seconds, body, batch, queues, max_ops, broker_pid):
    per = max(1, total_senders // procs)
    args = [(addr, topic, per, seconds, max_ops // procs, body, batch, queues, w) for w in range(procs)]
    u0, s0 = cpu_times(broker_pid)
    mu0, ms0 = cpu_times(broker_pid, broker_pid)  # the main thread (the event loop) alone
    results = pool.starmap(broker_load.run_senders, args)
    u1, s1 = cpu_times(broker_pid)
    mu1, ms1 = cpu_times(broker_pid, broker_pid)
    broker_cpu = (u1 - u0) + (s1 - s0)
    lat = [x for r in results for x in r["lat"]]
    elapsed = max(r["elapsed"] for r in results)
    msgs = sum(r["msgs"] for r in results)
    errors = sum(r["errors"] for r in results)
    codes: dict[int, int] = {}
    for r in results:
        for k, v in r["codes"].items():
            codes[k] = codes.get(k, 0) + v
    return {"requests": len(lat), "msgs": msgs, "elapsed": elapsed, "p50": pct(lat, 0.5), "p99": pct(lat, 0.99),
            "errors": errors, "codes": codes, "broker_cpu": broker_cpu, "broker_sys": s1 - s0,
            "main_cpu": (mu1 - mu0) + (ms1 - ms0), "main_sys": ms1 - ms0,
            "client_cpu": sum(r.get("cpu", 0.0) for r in results)}


def cpu_line(r: dict) -> str:
    """Broker CPU per message (the figure the machine's load does not distort much) and utilisation."""
    n = max(r["msgs"], 1)
    per_msg = r["broker_cpu"] / n * 1e6
    # the event loop's thread, and the rest (flush/fsync threads: a commit-log flush costs per page written)
    threads = (f"event loop {r['main_cpu'] / n * 1e6:.1f} ({r['main_sys'] / n * 1e6:.1f} in the kernel), "
               f"other threads {(r['broker_cpu'] - r['main_cpu']) / n * 1e6:.1f}")
    return (f"  broker CPU {per_msg:.1f} us/msg ({r['broker_cpu'] / r['elapsed']:.2f} cores, "
            f"{r['broker_sys'] / max(r['broker_cpu'], 1e-9):.0%} in the kernel; {threads}), "
            f"clients {r['client_cpu'] / max(r['msgs'], 1) * 1e6:.1f} us/msg")


def stop_broker(p: subprocess.Popen) -> None:
    p.terminate()
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def startup_times(workdir: str, runs: int, env: dict[str, str] | None = None) -> list[float]:
    """Start and stop a broker on ``workdir``'s store ``runs`` times; start-up seconds of each."""
    times = []
    for _ in range(runs):
        p, _port, s = start_broker(workdir, "ASYNC_FLUSH", {}, env=env)
        times.append(s)
        stop_broker(p)
    return times


def fmt_ms(times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    return f"min {ms[0]:.0f} ms, median {ms[len(ms) // 2]:.0f} ms, max {ms[-1]:.0f} ms ({len(ms)} starts)"


def startup_bench(args) -> None:
    """Start-up on an empty store and on a store of ``--startup-msgs`` 1 KiB messages."""
    workdir = tempfile.mkdtemp(prefix="bench-broker-start-")
    envs = [("", None)]
    cache = None
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        cache = tempfile.mkdtemp(prefix="bench-pycache-")
        warm = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        warm.update(PYTHONPATH=ROOT, PYTHONPYCACHEPREFIX=cache)
        envs = [(" (PYTHONDONTWRITEBYTECODE set: every module compiled)", None),
                (" (bytecode cached)", warm)]
        startup_times(workdir, 1, warm)  # fills the cache
    try:
        for label, env in envs:
            print(f"start-up, empty store{label}: {fmt_ms(startup_times(workdir, args.startup_runs, env))}")
        p, port, _ = start_broker(workdir, "ASYNC_FLUSH", {})
        addr = f"127.0.0.1:{port}"
        create_topic(addr, "BenchTopic", 8)
        ctx = mp.get_context("fork")
        sent = 0
        with ctx.Pool(args.procs) as pool:
            while sent < args.startup_msgs:
                r = send_round(pool, addr, "BenchTopic", 64, args.procs, 60.0, 1024, 16, 8,
                               (args.startup_msgs - sent + 15) // 16, p.pid)
                if r["msgs"] == 0:
                    raise SystemExit(f"no messages stored: {r['codes']}")
                sent += r["msgs"]
        stop_broker(p)
        for label, env in envs:
            print(f"start-up, store of {sent} messages{label}: {fmt_ms(startup_times(workdir, args.startup_runs, env))}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        if cache:
            shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0, help="duration of each send round")
    ap.add_argument("--procs", type=int, default=4, help="client processes per round")
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--e2e-rate", type=int, default=5000)
    ap.add_argument("--e2e-seconds", type=float, default=4.0)
    ap.add_argument("--max-ops", type=int, default=2_000_000, help="cap on requests per round")
    ap.add_argument("--senders", default="16,64",
                    help="comma-separated sender counts of the single-send rounds (a few senders show the "
                         "per-read fixed cost: one request a read)")
    ap.add_argument("--flush", default="ASYNC_FLUSH", choices=["ASYNC_FLUSH", "SYNC_FLUSH"])
    ap.add_argument("--keep", action="store_true", help="keep the store directory")
    ap.add_argument("--profile", metavar="FILE", help="run the broker under cProfile, stats to FILE")
    ap.add_argument("--only-send", action="store_true", help="skip the pull and end-to-end rounds")
    ap.add_argument("--only-batch", action="store_true",
                    help="only the batch round (implies --only-send): its CPU per message and profile alone")
    ap.add_argument("--startup", action="store_true", help="only the start-up figures (empty and filled store)")
    ap.add_argument("--startup-runs", type=int, default=5)
    ap.add_argument("--startup-msgs", type=int, default=100_000)
    args = ap.parse_args()
    if args.only_batch:
        args.only_send = True
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if note := host_memory_note():
        print(note)
    if args.startup:
        startup_bench(args)
        return

    workdir = tempfile.mkdtemp(prefix="bench-broker-")
    broker, port, start_s = start_broker(workdir, args.flush, {}, args.profile)
    addr = f"127.0.0.1:{port}"
    print(f"broker start -> accepting connections: {start_s * 1000:.0f} ms")
    idle_rss = rss_anon_kib(broker.pid)
    topic, queues = "BenchTopic", 8
    create_topic(addr, topic, queues)
    create_topic(addr, "BenchE2E", 1)
    sampler = RssSampler(broker.pid)
    sampler.start()
    stored = 0  # messages the broker stored (the profile breakdown's denominator)
    ctx = mp.get_context("fork")
    try:
        with ctx.Pool(args.procs) as pool:
            for senders in () if args.only_batch else [int(n) for n in args.senders.split(",")]:
                r = send_round(pool, addr, topic, senders, args.procs, args.seconds, args.body, 1, queues, args.max_ops,
                               broker.pid)
                stored += r["msgs"]
                print(f"send 1 KiB, {senders:3d} senders / {args.procs} procs: {r['msgs'] / r['elapsed']:9.0f} msgs/s  "
                      f"p50 {r['p50']:.2f} ms  p99 {r['p99']:.2f} ms  errors {r['errors']} {r['codes'] or ''}"
                      + cpu_line(r))
            r = send_round(pool, addr, topic, 16, args.procs, args.seconds, args.body, 16, queues, args.max_ops // 16,
                           broker.pid)
            stored += r["msgs"]
            print(f"batch x16, 16 senders / {args.procs} procs:   {r['msgs'] / r['elapsed']:9.0f} msgs/s  "
                  f"({r['requests'] / r['elapsed']:.0f} req/s)  p50 {r['p50']:.2f} ms  p99 {r['p99']:.2f} ms  "
                  f"errors {r['errors']}" + cpu_line(r))
            if args.only_send:
                lat, prod = None, None
            else:
                halves = [list(range(queues))[i::2] for i in range(2)]
                cpu0 = cpu_seconds(broker.pid)
                res = pool.starmap(broker_load.run_puller, [(addr, topic, q, 60.0, 50_000_000) for q in halves])
                pull_cpu = cpu_seconds(broker.pid) - cpu0
                msgs = sum(x["msgs"] for x in res)
                el = max(x["elapsed"] for x in res)
                print(f"pull backlog, 2 procs x 4 queues:           {msgs / el:9.0f} msgs/s  ({msgs} msgs, "
                      f"{sum(x['bytes'] for x in res) / el / 1e6:.0f} MB/s)  broker CPU {pull_cpu / max(msgs, 1) * 1e6:.1f} us/msg")
                start_off = max_offset(addr, "BenchE2E")
                n = int(args.e2e_rate * args.e2e_seconds)
                cons = pool.apply_async(broker_load.run_e2e_consumer, (addr, "BenchE2E", start_off, n, args.e2e_seconds + 15))
                prod = broker_load.run_e2e_producer(addr, "BenchE2E", args.e2e_rate, args.e2e_seconds, args.body)
                stored += prod["sent"]
                lat = cons.get(args.e2e_seconds + 30)["lat"]
        if lat is not None:
            print(f"end-to-end send -> long-poll delivery at {args.e2e_rate}/s (producer and consumer processes): "
                  f"p50 {pct(lat, 0.5):.2f} ms  p99 {pct(lat, 0.99):.2f} ms  max {max(lat) / 1000 if lat else float('nan'):.2f} ms  "
                  f"delivered {len(lat)}/{prod['sent']}  send errors {prod['errors']}")
        peak = sampler.stop()
        print(f"broker RssAnon: idle {idle_rss / 1024:.0f} MiB, peak under load {peak / 1024:.0f} MiB")
    finally:
        broker.terminate()
        sampler.stop()
        try:
            broker.wait(30)
        except subprocess.TimeoutExpired:
            broker.kill()
        if args.profile and os.path.exists(args.profile):
            print(profile_report(args.profile, stored))
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print("store kept in", workdir)


if __name__ == "__main__":
    main()

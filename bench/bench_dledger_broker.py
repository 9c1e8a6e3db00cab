"""DLedger broker benchmark: three bin/mqbroker nodes in DLedger mode plus a NameServer, on loopback.

Prints (never asserts):

* replicated send throughput and p50/p99 latency, 1 KiB messages, 64 concurrent senders spread
  over a few client processes, three DLedger nodes versus one plain broker (ASYNC_FLUSH master);
* failover time over N kill -9 and N SIGSTOP of the master under continuous synchronous sends:
  from the fault to the new master registered in the NameServer, and to the first acknowledged
  send on it (p50 / p99 / max); a killed node is restarted, a paused one resumed (its return
  must not move the new leader's term), and it rejoins as a slave between rounds.

Bounded in time and count. Usage::

    .venv/bin/python bench/bench_dledger_broker.py [--seconds 5] [--senders 64] [--procs 4]
        [--body 1024] [--kills 20] [--failover-modes kill,pause] [--dledger-timing] [--batch-push]
        [--batch-push-size BYTES]
        [--profile DIR [--profile-clock cpu|wall]] [--skip-tps] [--skip-failover] [--skip-single]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import broker_load  # noqa: E402
from bench.profile_breakdown import report as profile_report  # noqa: E402
from remoting import fastjson  # noqa: E402
from remoting.body.cluster import ClusterInfo  # noqa: E402
from remoting.client import RemotingClient  # noqa: E402
from remoting.codes import RequestCode, ResponseCode  # noqa: E402
from remoting.command import RemotingCommand  # noqa: E402
from remoting.errors import RemotingError  # noqa: E402

BROKER_NAME = "RaftNode00"


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


def wait_for(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.01)


# the broker under cProfile with a chosen clock: "cpu" (the main thread's CPU time, so time spent
# waiting in epoll or descheduled on a loaded machine is not charged to whatever ran last) or "wall"
# (cProfile's default); the stats are written when the broker returns after SIGTERM
_PROFILED_BROKER = """
import cProfile, runpy, sys, time
clock, out = sys.argv[1], sys.argv[2]
sys.argv = ["broker", *sys.argv[3:]]
prof = cProfile.Profile(time.thread_time) if clock == "cpu" else cProfile.Profile()
prof.enable()
try:
    runpy.run_module("broker", run_name="__main__", alter_sys=True)
finally:
    prof.disable()
    prof.dump_stats(out)
"""


class Cluster:
    """Processes under ``root``; ``dledger`` False gives one plain broker (the baseline)."""

    def __init__(self, root: str, dledger: bool = True, nodes: int = 3, extra: dict | None = None,
                 profile_dir: str | None = None, profile_clock: str = "cpu"):
        self.root = root
        self.profile_dir = profile_dir
        self.profile_clock = profile_clock
        self.dledger = dledger
        self.n = nodes if dledger else 1
        self.ns_port = free_port()
        self.ns_addr = f"127.0.0.1:{self.ns_port}"
        self.ports = [free_port() for _ in range(self.n)]
        self.dl_ports = dl_ports = [free_port() for _ in range(self.n)]
        peers = ";".join(f"n{i}-127.0.0.1:{p}" for i, p in enumerate(dl_ports))
        self.confs = []
        for i in range(self.n):
            props = {
                "brokerClusterName": "RaftCluster", "brokerName": BROKER_NAME, "listenPort": self.ports[i],
                "brokerIP1": "127.0.0.1", "namesrvAddr": self.ns_addr,
                "storePathRootDir": os.path.join(root, f"node{i}"), "sendMessageThreadPoolNums": 16,
            }
            if dledger:
                props |= {"enableDLegerCommitLog": "true", "dLegerGroup": BROKER_NAME, "dLegerPeers": peers,
                          "dLegerSelfId": f"n{i}", **(extra or {})}
            path = os.path.join(root, f"broker-n{i}.conf")
            with open(path, "w") as f:
                f.write("".join(f"{k}={v}\n" for k, v in props.items()))
            self.confs.append(path)
        self.procs: list[subprocess.Popen | None] = [None] * self.n
        self.stored = 0
        self.leader = -1
        self.ns: subprocess.Popen | None = None
        self._logs = []

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(os.path.join(self.root, f"{name}.log"), "ab")
        self._logs.append(log)
        env = dict(os.environ, ROCKETMQ_LOG_LEVEL="WARNING")
        return subprocess.Popen([os.path.join(ROOT, "bin", args[0]), *args[1:]], stdout=log,
                                stderr=subprocess.STDOUT, cwd=ROOT, env=env)

    def start(self) -> None:
        ns_conf = os.path.join(self.root, "namesrv.conf")
        with open(ns_conf, "w") as f:
            f.write(f"listenPort={self.ns_port}\nkvConfigPath={self.root}/ns/kv.json\n"
                    f"configStorePath={self.root}/ns/namesrv.properties\n")
        self.ns = self._spawn("namesrv", ["mqnamesrv", "-c", ns_conf])
        wait_for(lambda: port_open(self.ns_port), 30, "namesrv")
        for i in range(self.n):
            self.start_node(i, wait=False)
        for i in range(self.n):
            wait_for(lambda i=i: port_open(self.ports[i]), 30, f"node {i}")

    def start_node(self, i: int, wait: bool = True) -> None:
        if self.profile_dir:
            # the node under cProfile (stats written when it shuts down on SIGTERM)
            prof = os.path.join(self.profile_dir, f"{'n' if self.dledger else 'single'}{i}.prof")
            log = open(os.path.join(self.root, f"n{i}.log"), "ab")
            self._logs.append(log)
            env = dict(os.environ, ROCKETMQ_LOG_LEVEL="WARNING", PYTHONPATH=ROOT)
            self.procs[i] = subprocess.Popen(
                [sys.executable, "-c", _PROFILED_BROKER, self.profile_clock, prof, "-c", self.confs[i]],
                stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
        else:
            self.procs[i] = self._spawn(f"n{i}", ["mqbroker", "-c", self.confs[i]])
        if wait:
            wait_for(lambda: port_open(self.ports[i]), 30, f"node {i}")

    def kill(self, i: int) -> None:
        p = self.procs[i]
        p.send_signal(signal.SIGKILL)
        p.wait(10)

    def addr(self, i: int) -> str:
        return f"127.0.0.1:{self.ports[i]}"

    def stop(self) -> None:
        for p in [*self.procs, self.ns]:
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in [*self.procs, self.ns]:
            if p is not None:
                try:
                    p.wait(60 if self.profile_dir else 15)
                except subprocess.TimeoutExpired:
                    p.kill()
        for f in self._logs:
            f.close()


async def broker_addrs(c: RemotingClient, ns_addr: str) -> dict[int, str]:
    try:
        r = await c.invoke(ns_addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 2)
    except (OSError, RemotingError):
        return {}
    if r.code != ResponseCode.SUCCESS or not r.body:
        return {}
    bd = ClusterInfo.from_json(r.body).brokerAddrTable.get(BROKER_NAME)
    return dict(bd.brokerAddrs) if bd else {}


async def wait_master(c: RemotingClient, ns_addr: str, timeout: float, not_addr: str | None = None) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = (await broker_addrs(c, ns_addr)).get(0)
        if m and m != not_addr:
            return m
        await asyncio.sleep(0.01)
    raise SystemExit("no master registered in the NameServer")


async def send_once(c: RemotingClient, addr: str, body: bytes, timeout: float = 3.0) -> bool:
    h = broker_load.send_header("BenchDLedgerFailover", 0)
    try:
        r = await c.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, h, body), timeout)
    except (OSError, RemotingError):
        return False
    return r.code == ResponseCode.SUCCESS


def percentile(sorted_vals: list[int], q: float) -> float:
    if not sorted_vals:
        return 0.0
    return sorted_vals[min(len(sorted_vals) - 1, int(q * len(sorted_vals)))] / 1000.0


def cpu_times(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process so far (from /proc; zeros where unavailable)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        tck = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / tck, int(fields[12]) / tck
    except (OSError, ValueError, IndexError):
        return 0.0, 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (from /proc; 0 where unavailable)."""
    return sum(cpu_times(pid))


def tps_run(addr: str, args, label: str, cl: Cluster | None = None) -> None:
    procs = max(1, min(args.procs, args.senders))
    per = [args.senders // procs + (1 if i < args.senders % procs else 0) for i in range(procs)]
    topic = "BenchDLedger"
    with mp.get_context("spawn").Pool(procs) as pool:
        # warm-up (topic creation, connections)
        warm = pool.starmap(broker_load.run_senders,
                            [(addr, topic, 4, 1.0, 2000, args.body, 1, 8, w) for w in range(procs)])
        pids = [p.pid for p in cl.procs] if cl is not None else []
        cpu0 = [cpu_times(pid) for pid in pids]
        res = pool.starmap(broker_load.run_senders,
                           [(addr, topic, per[w], args.seconds, 10_000_000, args.body, 1, 8, w) for w in range(procs)])
        cpu1 = [cpu_times(pid) for pid in pids]
    msgs = sum(r["msgs"] for r in res)
    if cl is not None:
        cl.stored = msgs + sum(r["msgs"] for r in warm)  # what a profile of the whole run is divided by
    errors = sum(r["errors"] for r in res)
    elapsed = max(r["elapsed"] for r in res)
    lat = sorted(x for r in res for x in r["lat"])
    codes: dict[int, int] = {}
    for r in res:
        for k, v in r["codes"].items():
            codes[k] = codes.get(k, 0) + v
    print(f"{label:<34} {msgs / elapsed:>9.0f} sends/s   p50 {percentile(lat, 0.5):6.2f} ms   "
          f"p99 {percentile(lat, 0.99):6.2f} ms   errors {errors}{' ' + str(codes) if codes else ''}", flush=True)
    if cl is not None:
        for i, p in enumerate(cl.procs):
            if p is not None and p.poll() is not None:
                log = os.path.join(cl.root, f"n{i}.log")
                tail = open(log, errors="replace").read()[-2000:] if os.path.exists(log) else ""
                print(f"!! node {i} exited with code {p.returncode} during the run; log tail:\n{tail}", flush=True)
    if cl is not None and msgs:
        # broker CPU per acknowledged send (user + sys): robust to other load on the machine, unlike sends/s
        per_node = [(sum(b) - sum(a)) * 1e6 / msgs for a, b in zip(cpu0, cpu1, strict=True)]
        sys_share = [(b[1] - a[1]) * 1e6 / msgs for a, b in zip(cpu0, cpu1, strict=True)]
        leader = cl.leader = cl.ports.index(int(addr.rpartition(":")[2]))
        others = [f"{u:.0f}" for i, u in enumerate(per_node) if i != leader]
        print(f"{'':34} broker CPU per send: leader {per_node[leader]:.0f} us"
              + (f", followers {' / '.join(others)} us" if others else "")
              + f", total {sum(per_node):.0f} us (of which system {sum(sys_share):.0f} us, "
              f"leader {sys_share[leader]:.0f} us)", flush=True)


async def _failover_sender(c: RemotingClient, ns_addr: str, body: bytes, state: dict) -> None:
    """Continuous synchronous sends (the load during a failover), following the NameServer's master."""
    while not state["stop"]:
        addr = state["addr"]
        if not await send_once(c, addr, body, timeout=3.0):
            m = (await broker_addrs(c, ns_addr)).get(0)
            if m:
                state["addr"] = m
            await asyncio.sleep(0.005)  # retry pacing


async def _first_send_on_new_master(c: RemotingClient, ns_addr: str, old: str, body: bytes) -> float:
    """Time of the first send acknowledged by a master other than ``old``: a probe asks the NameServer
    every 20 ms and sends with a 0.5 s timeout (the load's own request to a paused master waits out its
    3 s timeout, as any client's would; this measures when the group could take writes again)."""
    while True:
        m = (await broker_addrs(c, ns_addr)).get(0)
        if m and m != old and await send_once(c, m, body, timeout=0.5):
            return time.monotonic()
        await asyncio.sleep(0.02)


async def _master_of(ns_addr: str) -> str:
    async with RemotingClient() as c:
        return await wait_master(c, ns_addr, 30)


async def _dledger_term(c: RemotingClient, port: int) -> tuple[int, str | None]:
    """(term, leaderId) as the DLedger member on ``port`` sees them (DLedger METADATA request)."""
    r = await c.invoke(f"127.0.0.1:{port}", RemotingCommand.request(50000), 3)  # DLedger METADATA
    d = fastjson.loads(r.body) if r.body else {}
    return int(d.get("term", -1)), d.get("leaderId")


async def failover_rounds(cl: Cluster, rounds: int, mode: str) -> None:
    """``mode`` "kill": kill -9 of the master, restarted between rounds; "pause": SIGSTOP of the master
    (its ports stay open), SIGCONT after the new master took writes: it must rejoin as a follower
    without moving the new leader's term."""
    reg: list[float] = []
    first: list[float] = []
    moved = 0
    async with RemotingClient() as c:
        master = await wait_master(c, cl.ns_addr, 30)
        body = os.urandom(1024)
        for rnd in range(rounds):
            while not await send_once(c, master, body):
                master = await wait_master(c, cl.ns_addr, 30)
            old_master = master
            state = {"addr": master, "stop": False}
            task = asyncio.get_running_loop().create_task(_failover_sender(c, cl.ns_addr, body, state))
            for _ in range(50):  # let it run a little before the fault
                await asyncio.sleep(0.01)
            old = cl.ports.index(int(old_master.rpartition(":")[2]))
            probe = asyncio.get_running_loop().create_task(_first_send_on_new_master(c, cl.ns_addr, old_master, body))
            fault_at = time.monotonic()
            if mode == "kill":
                cl.kill(old)
            else:
                cl.procs[old].send_signal(signal.SIGSTOP)
            master = await wait_master(c, cl.ns_addr, 30, not_addr=old_master)
            reg_s = time.monotonic() - fault_at
            try:
                first_s = await asyncio.wait_for(probe, 30) - fault_at
            except TimeoutError:
                first_s = float("inf")
            state["stop"] = True
            await task
            reg.append(reg_s)
            first.append(first_s)
            new = cl.ports.index(int(master.rpartition(":")[2]))
            extra = ""
            if mode == "kill":
                cl.start_node(old)
            else:
                term, _ = await _dledger_term(c, cl.dl_ports[new])
                cl.procs[old].send_signal(signal.SIGCONT)
            slave_id = old + 1
            deadline = time.monotonic() + 30
            while (await broker_addrs(c, cl.ns_addr)).get(slave_id) != cl.addr(old):
                if time.monotonic() > deadline:
                    raise SystemExit(f"node {old} did not rejoin as slave")
                await asyncio.sleep(0.05)
            if mode == "pause":
                while (await _dledger_term(c, cl.dl_ports[old]))[1] != f"n{new}":
                    if time.monotonic() > deadline:
                        raise SystemExit(f"node {old} does not follow n{new}")
                    await asyncio.sleep(0.05)
                after, _ = await _dledger_term(c, cl.dl_ports[new])
                moved += after != term
                extra = f", term {term} -> {after} after its return"
            print(f"  {mode} {rnd + 1:>2}: new master registered {reg_s:5.2f} s, first acknowledged send "
                  f"{first_s:5.2f} s after the fault{extra}", flush=True)
    for label, vals in (("to new master in the NameServer", reg), ("to first acknowledged send", first)):
        vals = sorted(vals)
        print(f"failover ({mode}) {label:<32} p50 {statistics.median(vals):5.2f} s   "
              f"p99 {vals[min(len(vals) - 1, int(0.99 * len(vals)))]:5.2f} s   max {vals[-1]:5.2f} s   "
              f"({len(vals)} rounds)", flush=True)
    if mode == "pause":
        print(f"failover (pause) rounds where the returning node moved the term: {moved} of {rounds}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--senders", type=int, default=64)
    ap.add_argument("--procs", type=int, default=4, help="client processes sharing the senders")
    ap.add_argument("--body", type=int, default=1024)
    ap.add_argument("--kills", type=int, default=20, help="failover rounds per mode")
    ap.add_argument("--failover-modes", default="kill,pause", help="kill (kill -9) and/or pause (SIGSTOP)")
    ap.add_argument("--dledger-timing", action="store_true",
                    help="DLedger's own timing (2000 ms x 3 heartbeats, 300-1000 ms votes, no pre-vote) for an A/B")
    ap.add_argument("--batch-push", action="store_true", help="enableBatchPush=true on the DLedger nodes")
    ap.add_argument("--batch-push-size", type=int, metavar="BYTES",
                    help="maxBatchPushSize of the DLedger nodes (DLedger's default 4096); implies --batch-push")
    ap.add_argument("--profile", metavar="DIR", help="throughput runs: every broker under cProfile, stats in DIR")
    ap.add_argument("--profile-clock", choices=("cpu", "wall"), default="cpu",
                    help="cProfile's clock: the main thread's CPU time (default) or wall time")
    ap.add_argument("--skip-tps", action="store_true")
    ap.add_argument("--skip-failover", action="store_true")
    ap.add_argument("--skip-single", action="store_true", help="throughput: only the DLedger group, not the baseline")
    args = ap.parse_args()
    push_extra: dict = {}
    if args.batch_push or args.batch_push_size:
        push_extra["enableBatchPush"] = "true"
    if args.batch_push_size:
        push_extra["maxBatchPushSize"] = args.batch_push_size
    print(f"cpus {os.cpu_count()}, body {args.body} B, {args.senders} senders over {args.procs} client processes",
          flush=True)
    if not args.skip_tps:
        runs = ((True, "three DLedger nodes (replicated)"), (False, "single broker (ASYNC_FLUSH)"))
        for dledger, label in runs[:1] if args.skip_single else runs:
            root = tempfile.mkdtemp(prefix="bench-dledger-")
            cl = Cluster(root, dledger=dledger, extra=push_extra or None,
                         profile_dir=args.profile, profile_clock=args.profile_clock)
            try:
                cl.start()
                addr = asyncio.run(_master_of(cl.ns_addr))
                tps_run(addr, args, label, cl)
            finally:
                cl.stop()
                shutil.rmtree(root, ignore_errors=True)
            if args.profile:
                # per stage and stored message (warm-up included, as the profile is), leader first
                for i in sorted(range(cl.n), key=lambda i: i != cl.leader):
                    prof = os.path.join(args.profile, f"{'n' if dledger else 'single'}{i}.prof")
                    if os.path.exists(prof) and cl.stored:
                        role = "leader" if i == cl.leader else "follower"
                        print(f"--- node {i} ({role}, {args.profile_clock} clock)\n{profile_report(prof, cl.stored)}",
                              flush=True)
    if not args.skip_failover and args.kills > 0:
        extra = dict(push_extra)
        if args.dledger_timing:
            extra |= {"heartBeatTimeIntervalMs": 2000, "maxHeartBeatLeak": 3, "minVoteIntervalMs": 300,
                      "maxVoteIntervalMs": 1000, "enablePreVote": "false"}
        for mode in [m.strip() for m in args.failover_modes.split(",") if m.strip()]:
            if mode not in ("kill", "pause"):
                raise SystemExit(f"unknown failover mode {mode!r} (kill, pause)")
            root = tempfile.mkdtemp(prefix="bench-dledger-")
            cl = Cluster(root, dledger=True, extra=extra)
            try:
                cl.start()
                asyncio.run(failover_rounds(cl, args.kills, mode))
            finally:
                for p in cl.procs:
                    if p is not None and p.poll() is None:
                        p.send_signal(signal.SIGCONT)  # a paused node must be able to stop
                cl.stop()
                shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

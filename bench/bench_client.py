"""Client benchmark: bin/mqbench against a real bin/mqnamesrv + bin/mqbroker on loopback.

Prints (never asserts) what mqbench prints for: producer, 1 KiB messages, 16 and
64 concurrent senders (over ``--procs`` worker processes); then the push
consumer draining that backlog. Bounded by ``--seconds`` per run.

    .venv/bin/python bench/bench_client.py [--seconds 5] [--procs 2] [--size 1024]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"process exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"port {port} not open after {timeout}s")


def summary(out: str) -> str:
    return next((line for line in out.splitlines() if line.startswith("Summary")), out.strip()[-300:])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--size", type=int, default=1024)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-client-")
    ns_port, b_port = free_port(), free_port()
    with open(os.path.join(tmp, "ns.conf"), "w") as f:
        f.write(f"listenPort={ns_port}\nkvConfigPath={tmp}/kv.json\nconfigStorePath={tmp}/ns.properties\n")
    with open(os.path.join(tmp, "b.conf"), "w") as f:
        f.write(f"brokerClusterName=BenchCluster\nbrokerName=bench\nlistenPort={b_port}\nbrokerIP1=127.0.0.1\n"
                f"namesrvAddr=127.0.0.1:{ns_port}\nstorePathRootDir={tmp}/store\n"
                f"mappedFileSizeCommitLog={512 * 1024 * 1024}\n")
    logs = open(os.path.join(tmp, "servers.log"), "wb")
    procs = [subprocess.Popen([os.path.join(BIN, "mqnamesrv"), "-c", f"{tmp}/ns.conf"], stdout=logs, stderr=logs)]
    try:
        wait_port(ns_port, procs[0])
        procs.append(subprocess.Popen([os.path.join(BIN, "mqbroker"), "-c", f"{tmp}/b.conf"], stdout=logs, stderr=logs))
        wait_port(b_port, procs[1])
        ns = f"127.0.0.1:{ns_port}"
        env = dict(os.environ, NAMESRV_ADDR=ns)
        print(f"client benchmark: {a.size} B messages, {a.procs} worker processes, {a.seconds}s per run, "
              f"{os.cpu_count()} CPUs (broker and load share them)")
        for senders in (16, 64):
            r = subprocess.run([os.path.join(BIN, "mqbench"), "producer", "-t", "BenchClient", "-w", str(senders),
                                "-s", str(a.size), "-d", str(a.seconds), "-P", str(a.procs)],
                               capture_output=True, text=True, env=env, timeout=a.seconds + 60)
            print(f"producer, {senders:>2} senders: {summary(r.stdout)}")
        r = subprocess.run([os.path.join(BIN, "mqbench"), "consumer", "-t", "BenchClient", "-f", "-g", "bench_client_c",
                            "-d", str(a.seconds), "-P", str(a.procs)],
                           capture_output=True, text=True, env=env, timeout=a.seconds + 60)
        print(f"consumer (draining the backlog): {summary(r.stdout)}")
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
        logs.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

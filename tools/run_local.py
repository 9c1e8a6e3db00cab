"""`make run`: a NameServer and a Broker on the embedded default config, in the foreground.

Starts ``bin/mqnamesrv`` and, once it accepts connections, ``bin/mqbroker -c
conf/broker.conf``. Ctrl-C (SIGINT) or SIGTERM stops both cleanly (broker
first, so it can unregister); if either exits on its own, the other is stopped
and the exit code is passed on.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _wait_port(port: int, proc: subprocess.Popen, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def _stop(proc: subprocess.Popen | None, name: str, timeout: float = 20.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        print(f"run: {name} did not stop in {timeout:.0f}s, killing it", file=sys.stderr)
        proc.kill()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run a NameServer and a Broker in the foreground.")
    ap.add_argument("--namesrv-port", type=int, default=9876)
    ap.add_argument("--broker-conf", default=str(ROOT / "conf" / "broker.conf"))
    ap.add_argument("--namesrv-only", action="store_true", help="start the NameServer alone")
    args = ap.parse_args(argv)

    # Children ignore the terminal's SIGINT (own process group); we stop them in order.
    def spawn(cmd: list[str]) -> subprocess.Popen:
        return subprocess.Popen(cmd, cwd=str(ROOT), start_new_session=True)

    stopping = False

    def on_signal(signum, _frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    namesrv = spawn([str(ROOT / "bin" / "mqnamesrv"), "-n", str(args.namesrv_port)])
    broker = None
    rc = 0
    try:
        if not _wait_port(args.namesrv_port, namesrv, 30):
            print("run: the NameServer did not start (see its output above)", file=sys.stderr)
            return namesrv.poll() or 1
        print(f"run: NameServer listening on 127.0.0.1:{args.namesrv_port}", flush=True)
        broker_main = ROOT / "broker" / "__main__.py"
        if not args.namesrv_only and broker_main.exists():
            broker = spawn(
                [str(ROOT / "bin" / "mqbroker"), "-c", args.broker_conf, "-n", f"127.0.0.1:{args.namesrv_port}"]
            )
            print("run: Broker starting with", os.path.relpath(args.broker_conf, ROOT), flush=True)
        print("run: press Ctrl-C to stop", flush=True)
        while not stopping:
            for name, p in (("NameServer", namesrv), ("Broker", broker)):
                if p is not None and p.poll() is not None:
                    print(f"run: {name} exited with code {p.returncode}", file=sys.stderr)
                    rc = p.returncode or 1
                    stopping = True
            time.sleep(0.2)
    finally:
        _stop(broker, "Broker")
        _stop(namesrv, "NameServer")
        print("run: stopped", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())

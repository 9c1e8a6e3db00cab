"""`bin/mqdledger start|stop|status|run`: a NameServer plus the three DLedger nodes on loopback.

The counterpart of RocketMQ's ``dledger/fast-try.sh``: the nodes use the
shipped ``conf/dledger/broker-n0.conf`` .. ``broker-n2.conf`` (cluster
RaftCluster, group RaftNode00, brokers 30911/30921/30931, DLedger peers
40911-40913). ``start`` runs them in the background and records their pids
under ``run/dledger/``; ``stop`` sends SIGTERM (SIGKILL after a bound);
``run`` keeps them in the foreground until Ctrl-C.
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
CONF_DIR = ROOT / "conf" / "dledger"
NODES = ("n0", "n1", "n2")
NODE_PORTS = {"n0": 30911, "n1": 30921, "n2": 30931}


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


class Cluster:
    """The four processes, their logs and pid files under ``state_dir``."""

    def __init__(self, state_dir: Path, namesrv_port: int):
        self.state_dir = state_dir
        self.namesrv_port = namesrv_port
        self.namesrv_addr = f"127.0.0.1:{namesrv_port}"

    def _pid_file(self, name: str) -> Path:
        return self.state_dir / f"{name}.pid"

    def commands(self) -> list[tuple[str, list[str], int]]:
        cmds = [("namesrv", [str(ROOT / "bin" / "mqnamesrv"), "-n", str(self.namesrv_port)], self.namesrv_port)]
        for node in NODES:
            conf = CONF_DIR / f"broker-{node}.conf"
            cmds.append(
                (node, [str(ROOT / "bin" / "mqbroker"), "-c", str(conf), "-n", self.namesrv_addr], NODE_PORTS[node])
            )
        return cmds

    def running(self) -> dict[str, int]:
        out = {}
        for name, _cmd, _port in self.commands():
            f = self._pid_file(name)
            if f.exists():
                try:
                    pid = int(f.read_text().strip())
                except ValueError:
                    continue
                if _alive(pid):
                    out[name] = pid
        return out

    def start(self, timeout: float = 60.0) -> list[subprocess.Popen]:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        already = self.running()
        if already:
            raise SystemExit(f"mqdledger: already running ({', '.join(already)}); run 'mqdledger stop' first")
        procs = []
        for name, cmd, port in self.commands():
            if _port_open(port):
                raise SystemExit(f"mqdledger: port {port} for {name} is already in use")
            log = open(self.state_dir / f"{name}.log", "ab")
            p = subprocess.Popen(cmd, cwd=str(ROOT), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            self._pid_file(name).write_text(f"{p.pid}\n")
            procs.append(p)
            if name == "namesrv" and not self._wait(port, p, timeout):
                raise SystemExit(f"mqdledger: the NameServer did not start; see {self.state_dir / 'namesrv.log'}")
        for (name, _cmd, port), p in zip(self.commands(), procs, strict=True):
            if not self._wait(port, p, timeout):
                raise SystemExit(f"mqdledger: {name} did not start; see {self.state_dir / (name + '.log')}")
        return procs

    @staticmethod
    def _wait(port: int, proc: subprocess.Popen, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            if _port_open(port):
                return True
            time.sleep(0.05)
        return False

    def stop(self, timeout: float = 30.0) -> None:
        pids = self.running()
        # Brokers first, so they unregister while the NameServer still listens.
        order = [n for n in (*NODES, "namesrv") if n in pids]
        for name in order:
            try:
                os.kill(pids[name], signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        for name in order:
            while _alive(pids[name]) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(pids[name]):
                os.kill(pids[name], signal.SIGKILL)
            self._pid_file(name).unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="mqdledger", description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["start", "stop", "status", "run"])
    ap.add_argument("--dir", default=str(ROOT / "run" / "dledger"), help="where pids and logs go")
    ap.add_argument("--namesrv-port", type=int, default=9876)
    args = ap.parse_args(argv)
    cluster = Cluster(Path(args.dir), args.namesrv_port)

    if args.action == "status":
        running = cluster.running()
        for name, _cmd, port in cluster.commands():
            state = f"running pid {running[name]}" if name in running else "stopped"
            print(f"{name:<8} 127.0.0.1:{port:<6} {state}")
        return 0
    if args.action == "stop":
        cluster.stop()
        print("mqdledger: stopped")
        return 0
    procs = cluster.start()
    print(f"mqdledger: NameServer {cluster.namesrv_addr}, nodes " + ", ".join(f"127.0.0.1:{NODE_PORTS[n]}" for n in NODES))
    if args.action == "start":
        return 0
    stop = False

    def on_signal(_s, _f):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    while not stop and all(p.poll() is None for p in procs):
        time.sleep(0.2)
    cluster.stop()
    print("mqdledger: stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())

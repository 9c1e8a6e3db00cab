"""Dashboard benchmark: API answer times and admin RPCs per page view, as topics and groups grow.

For each size (default 200 topics / 50 groups, then 2,000 topics / 500 groups) it starts
a NameServer, two brokers whose config files already hold the topics, the groups and
their committed offsets (each group on two topics), and bin/mqdashboard; then it views
the topic page (GET /api/topics), the consumer-group page (GET /api/groups, first page
of 50: as served, from the sampler's tables of the last 10 s; and ``groups*``, read live
with ``fresh=1``) and the cluster page (GET /api/cluster) ``--views`` times each, one after the
other, and prints p50 / p95 / max of the answer time, the admin RPCs the dashboard
made for each view (its X-RPC-Count header) and the CPU time a view cost the dashboard
and the two brokers (from /proc where there is one; the sampler's work counts in too).
On a shared machine the answer times follow the load, the CPU time much less.
Prints, never asserts; bounded in count.

    .venv/bin/python bench/bench_dashboard.py [--sizes 200:50,2000:500] [--views 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from remoting.body.subscription_group import SubscriptionGroupConfig  # noqa: E402
from remoting.body.topic_config import TopicConfig  # noqa: E402
from tests.client.cluster import BrokerProc, NamesrvProc  # noqa: E402
from tests.support import Proc, free_port, wait_until  # noqa: E402

PAGES = [("topics", "/api/topics?kind=normal"), ("groups", "/api/groups?limit=50"),
         ("groups*", "/api/groups?limit=50&fresh=1"), ("cluster", "/api/cluster")]


def seed_broker_config(root: Path, name: str, topics: int, groups: int) -> None:
    """Write the broker's topics.json, subscriptionGroup.json and consumerOffset.json before it starts."""
    cfg = root / f"{name}-store" / "config"
    cfg.mkdir(parents=True, exist_ok=True)
    tt = {f"BenchTopic{i:05d}": TopicConfig(topicName=f"BenchTopic{i:05d}", readQueueNums=4, writeQueueNums=4).to_obj()
          for i in range(topics)}
    (cfg / "topics.json").write_text(json.dumps({"topicConfigTable": tt}))
    gt = {f"BenchGroup{g:04d}": SubscriptionGroupConfig(groupName=f"BenchGroup{g:04d}").to_obj()
          for g in range(groups)}
    (cfg / "subscriptionGroup.json").write_text(json.dumps({"subscriptionGroupTable": gt}))
    offsets = {}
    for g in range(groups):
        for t in (g % topics, (g * 7 + 1) % topics):
            offsets[f"BenchTopic{t:05d}@BenchGroup{g:04d}"] = {str(q): 0 for q in range(4)}
    (cfg / "consumerOffset.json").write_text(json.dumps({"offsetTable": offsets}))


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux /proc), None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_total(pids: list[int]) -> float | None:
    times = [cpu_seconds(p) for p in pids]
    return None if None in times else sum(times)


def view(url: str) -> tuple[float, int, int]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as r:
        body = r.read()
        rpcs = int(r.headers["X-RPC-Count"])
    return (time.perf_counter() - t0) * 1000, rpcs, len(body)


def run_size(topics: int, groups: int, views: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-dash-") as tmp:
        root = Path(tmp)
        ns = NamesrvProc(root).start()
        brokers = []
        procs = []
        try:
            for name in ("brokera", "brokerb"):
                seed_broker_config(root, name, topics, groups)
                brokers.append(BrokerProc(root, name, ns.addr).start())
            port = free_port()
            dash = Proc("dashboard", ["mqdashboard", "-n", ns.addr, "--port", str(port), "--sample-interval", "5"],
                        root)
            procs.append(dash)
            dash.wait_port(port)
            base = f"http://127.0.0.1:{port}"

            def registered():
                _ms, _r, _n = view(base + "/api/topics?kind=normal")
                with urllib.request.urlopen(base + "/api/topics?kind=normal", timeout=60) as r:
                    data = json.loads(r.read())
                return data["total"] >= topics and all(len(t["brokers"]) == 2 for t in data["topics"])

            wait_until(registered, 120, 0.5, "topics on both brokers")
            print(f"\n{topics} topics, {groups} groups, 2 brokers ({views} views per page, one at a time)")
            print(f"  {'page':<8s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s} {'RPCs/view':>10s} {'body KiB':>9s} "
                  f"{'CPU ms/view':>12s}")
            pids = [dash.pid] + [b.proc.pid for b in brokers]  # bin/ scripts exec the interpreter: same pid
            for page, path in PAGES:
                view(base + path)  # warm the connection pool
                times, rpcs, size = [], set(), 0
                cpu0 = cpu_total(pids)
                for _ in range(views):
                    ms, n, size = view(base + path)
                    times.append(ms)
                    rpcs.add(n)
                cpu1 = cpu_total(pids)
                cpu = "-" if cpu0 is None or cpu1 is None else f"{(cpu1 - cpu0) * 1000 / views:.1f}"
                times.sort()
                p95 = times[min(len(times) - 1, int(round(0.95 * len(times))) - 1)]
                print(f"  {page:<8s} {statistics.median(times):8.1f} {p95:8.1f} {times[-1]:8.1f} "
                      f"{'/'.join(map(str, sorted(rpcs))):>10s} {size / 1024:9.1f} {cpu:>12s}")
        finally:
            for p in procs:
                p.stop()
            for b in brokers:
                b.stop()
            ns.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="200:50,2000:500", help="topics:groups pairs, comma separated")
    ap.add_argument("--views", type=int, default=40)
    a = ap.parse_args()
    for pair in a.sizes.split(","):
        t, g = (int(x) for x in pair.split(":"))
        run_size(t, g, max(1, min(a.views, 1000)))


if __name__ == "__main__":
    main()

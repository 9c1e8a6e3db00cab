"""DLedger nemesis: three bin/mqbroker nodes in DLedger mode whose peer links all run through
fault-injecting proxies (tests/soak/netproxy.py: node i reaches node j through its own proxy).

Each round injects one fault for SOAK_NEMESIS_FAULT_S, then heals for SOAK_NEMESIS_HEAL_S:
leader kill -9 (restarted at heal), SIGSTOP of the leader for 5-20 s (SIGCONT), the leader isolated
(every link to and from it blackholed), a follower isolated (minority), the leader's links reset,
one-way loss (the leader's requests dropped, answers pass), 200 ms delay on every link. Sequential
producers send all along to the master the NameServer names. At the end everything heals, the
nodes catch up, every node is drained and, stopped, their DLedger logs are compared.

Goals: lost = unexpected = 0 (and no duplicate, no two messages at one (queue, offset), no torn body),
DLedger logs identical up to the commit index on every node, time to a new master after a kill and
after a pause <= 3 s p99 (the pause goal needs the pre-vote / heartbeat work of issue 17 defect 10).

SOAK_NEMESIS_ROUNDS (12), SOAK_NEMESIS_FAULT_S (12), SOAK_NEMESIS_HEAL_S (8), SOAK_NEMESIS_PACE_S (0.02); the issue's full size
is 30 rounds of 30 s + 30 s.
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest

from dledger.mmap_file_store import DLedgerMmapFileStore
from remoting.client import RemotingClient
from remoting.errors import RemotingError
from tests.dledger_broker.cluster import TOPIC, DLedgerCluster, max_offset, send
from tests.soak.checker import History, check
from tests.soak.load import Producers, drain, env_float, env_int, percentile
from tests.soak.netproxy import LinkProxy
from tests.support import async_wait_until, free_port

pytestmark = pytest.mark.soak

ROUNDS = env_int("SOAK_NEMESIS_ROUNDS", 12)
FAULT_S = env_float("SOAK_NEMESIS_FAULT_S", 12)
HEAL_S = env_float("SOAK_NEMESIS_HEAL_S", 8)
# kill and pause (the measured failovers) come round most often
FAULTS = ("kill", "pause", "isolate_leader", "isolate_follower", "kill", "pause", "reset_leader", "oneway_leader",
          "kill", "pause", "delay")
KINDS = tuple(dict.fromkeys(FAULTS))
QUEUES = 4
PACE_S = env_float("SOAK_NEMESIS_PACE_S", 0.02)  # per producer: <= ~200 messages/s in all
FAILOVER_GOAL_S = 3.0


class ProxiedCluster(DLedgerCluster):
    """DLedgerCluster whose node i names every other node j by the port of proxy (i, j)."""

    def __init__(self, procs, root: Path, **extra):
        super().__init__(procs, root, **extra)
        self.proxy_ports = {(i, j): free_port() for i in range(self.n) for j in range(self.n) if i != j}
        self.proxies: dict[tuple[int, int], LinkProxy] = {}
        for i, conf in enumerate(self.confs):
            peers = ";".join(f"n{j}-127.0.0.1:{self.dledger_ports[j] if j == i else self.proxy_ports[i, j]}"
                             for j in range(self.n))
            lines = [f"dLegerPeers={peers}" if ln.startswith("dLegerPeers=") else ln
                     for ln in conf.read_text().splitlines()]
            conf.write_text("\n".join(lines) + "\n")

    async def start_proxies(self) -> None:
        for (i, j), port in self.proxy_ports.items():
            self.proxies[i, j] = await LinkProxy(self.dledger_ports[j], f"n{i}->n{j}").start(port)

    def links_of(self, k: int):
        return [p for (i, j), p in self.proxies.items() if k in (i, j)]

    def heal_links(self) -> None:
        for p in self.proxies.values():
            p.set("pass")

    async def close_proxies(self) -> None:
        for p in self.proxies.values():
            await p.close()

    def store_dir(self, i: int) -> Path:
        return self.root / f"node{i}" / f"dledger-n{i}"


def _open_log(d: Path) -> DLedgerMmapFileStore:
    data = sorted((d / "data").glob("*"))
    index = sorted((d / "index").glob("*"))
    return DLedgerMmapFileStore(str(d), data_file_size=data[0].stat().st_size if data else 1 << 20,
                                index_file_size=index[0].stat().st_size if index else 32 * 1024)


@pytest.mark.timeout(600 + ROUNDS * (FAULT_S + HEAL_S) * 1.5)
async def test_dledger_nemesis(procs, tmp_path):
    rng = random.Random(17)
    cl = ProxiedCluster(procs, tmp_path)
    await cl.start_proxies()
    h = History()
    failover: dict[str, list[float]] = {f: [] for f in KINDS}
    master = {"addr": ""}
    stop_watch = False

    async with RemotingClient() as c:
        await asyncio.to_thread(cl.start)
        master["addr"] = await cl.wait_master(c, 60)

        async def watch() -> None:  # what a client's route refresh does: follow the NameServer's master
            while not stop_watch:
                try:
                    m = (await cl.broker_addrs(c)).get(0)
                except (OSError, RemotingError):
                    m = None
                if m:
                    master["addr"] = m
                await asyncio.sleep(0.05)

        watcher = asyncio.get_running_loop().create_task(watch())

        async def send_v2(addr, queue_id, body, timeout):
            return (await send(c, addr, body, queue_id=queue_id, timeout=timeout)).code

        prod = Producers(h, c, lambda: master["addr"], TOPIC, n=4, queues=QUEUES, timeout=3.0, retry_pause=0.1,
                         send_fn=send_v2, pace=PACE_S).start()
        try:
            # faults hit a group in service: a group whose very first leader dies before anything was
            # committed waits (by design, #17 defect 7) up to 5 s for the dead member's divided offset
            await async_wait_until(lambda: len(h.acked) >= 200, 60, 0.05, "the group serving sends")
            for rnd in range(ROUNDS):
                fault = FAULTS[rnd % len(FAULTS)]
                old = master["addr"]
                leader = cl.index_of(old)
                follower = next(i for i in range(cl.n) if i != leader)
                duration = FAULT_S
                t0 = time.monotonic()
                if fault == "kill":
                    cl.kill(leader)
                elif fault == "pause":
                    duration = min(FAULT_S, rng.uniform(5, 20))
                    cl.pause(leader)
                elif fault == "isolate_leader":
                    for p in cl.links_of(leader):
                        p.set("blackhole")
                elif fault == "isolate_follower":
                    for p in cl.links_of(follower):
                        p.set("blackhole")
                elif fault == "reset_leader":
                    for p in cl.links_of(leader):
                        p.set("reset")
                elif fault == "oneway_leader":
                    for (i, _j), p in cl.proxies.items():
                        if i == leader:
                            p.set("drop_forward")
                elif fault == "delay":
                    for p in cl.proxies.values():
                        p.set("delay", 0.2)
                if fault in ("kill", "pause", "isolate_leader"):
                    try:
                        await cl.wait_master(c, duration, not_addr=old)
                        failover[fault].append(time.monotonic() - t0)
                    except AssertionError:
                        failover[fault].append(float("inf"))  # no new master within the fault
                left = duration - (time.monotonic() - t0)
                if left > 0:
                    await asyncio.sleep(left)  # the fault lasts this long (not a synchronisation)
                if fault == "kill":
                    await asyncio.to_thread(cl.start_node, leader)
                elif fault == "pause":
                    cl.resume(leader)
                else:
                    cl.heal_links()
                print(f"[nemesis] round {rnd} {fault} on n{leader if fault != 'isolate_follower' else follower}: "
                      f"failover {failover[fault][-1] if fault in ('kill', 'pause', 'isolate_leader') else '-'} "
                      f"acked so far {len(h.acked)} codes {prod.codes}")
                await asyncio.sleep(HEAL_S)  # the heal lasts this long
        finally:
            await prod.stop()
            stop_watch = True
            await watcher
        # heal and drain: every node up and caught up with the master
        cl.heal_links()
        m = await cl.wait_master(c, 30)
        for _ in range(3):  # a write in the current term commits everything before it
            await send(c, m, b"heal-probe-no-key")

        async def caught_up():
            ends = [[await max_offset(c, cl.addr(i), TOPIC, q) for q in range(QUEUES)] for i in range(cl.n)]
            return all(e == ends[0] and -1 not in e for e in ends)

        await async_wait_until(caught_up, 60, 0.2, "every node caught up")
        reads = []
        for i in range(cl.n):
            reads.extend(await drain(c, cl.addr(i), TOPIC, QUEUES))
    rep = check(h, [r for r in reads if not r.body.startswith(b"heal-probe")])
    # the DLedger logs, nodes stopped: identical up to the smallest commit index
    for p in list(procs):
        p.stop()
    await cl.close_proxies()
    logs = [_open_log(cl.store_dir(i)) for i in range(cl.n)]
    committed = [s.committed_index for s in logs]
    begin = max(s.ledger_begin_index for s in logs)
    diverged = [k for k in range(begin, min(committed) + 1)
                if any(s.get(k) is None for s in logs) or len({(s.get(k).term, s.get(k).body) for s in logs}) != 1]
    for s in logs:
        s.close()
    kill_pause = [x for f in ("kill", "pause") for x in failover[f]]
    fig = {f: (f"p50={percentile(v, 50):.2f}s p99={percentile(v, 99):.2f}s n={len(v)}" if v else "-")
           for f, v in failover.items() if f in ("kill", "pause", "isolate_leader")}
    print(f"\n[dledger nemesis] rounds={ROUNDS} fault={FAULT_S}s heal={HEAL_S}s {rep.summary()} codes={prod.codes} "
          f"committed={committed} diverged={len(diverged)} failover {fig}")
    assert rep.acked > ROUNDS * 10
    assert not (rep.lost or rep.unexpected or rep.duplicated or rep.corrupt or rep.inconsistent), rep.detail()
    assert not diverged, f"DLedger logs differ at indexes {diverged[:5]} (commit indexes {committed})"
    assert percentile(failover["kill"], 99) <= FAILOVER_GOAL_S, f"kill -9 failover {failover['kill']}"
    assert percentile(kill_pause, 99) <= FAILOVER_GOAL_S, f"pause failover {failover['pause']} (defect 10)"

"""EmbeddedCluster: a NameServer and brokers inside the current Python process, on loopback.

The same code as ``bin/mqnamesrv`` and ``bin/mqbroker`` (NamesrvController, broker.broker_startup's
config loading, create_broker, real sockets, real store files), only started on the caller's
event loop instead of in processes of their own: a cluster that is up in a fraction of a second,
for application tests and the developer loop. Each broker gets a config file of its own in the
cluster's directory, read exactly as ``mqbroker -c`` reads it.

Shapes: ``brokers`` masters (broker-a, broker-b, ...), each with ``slaves`` slaves; or, with
``dledger_group=N`` (N >= 1), each broker name is a DLedger (Raft) group of N nodes.

Two ways to run it::

    async with EmbeddedCluster(brokers=1) as cluster:   # on the running loop
        await cluster.kill(cluster.brokers[0]); await cluster.restart(cluster.brokers[0])

    with EmbeddedCluster(dledger_group=3) as cluster:   # on a loop thread of its own
        cluster.kill(cluster.leader()); cluster.wait_leader()

In the blocking form the same methods block and return their result; in the async form they
return awaitables.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker.broker_controller import BrokerController, create_broker
from broker.broker_startup import load_configs
from broker.errors import BrokerStartError
from common.config import ConfigError, format_properties
from namesrv.config import NamesrvConfig
from namesrv.namesrv_controller import NamesrvController

__all__ = ["EmbeddedCluster", "EmbeddedBroker", "ConfigError", "free_port_block"]

log = logging.getLogger("embedded")

LOOPBACK = "127.0.0.1"

#: What an embedded broker uses unless the caller says otherwise: small CommitLog files (a test
#: store reserves its files' space on disk), and quick re-registration.
EMBEDDED_DEFAULTS: dict[str, str] = {
    "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
    "autoCreateTopicEnable": "true",
    "brokerIP1": LOOPBACK,
    "brokerIP2": LOOPBACK,
}

#: Keys the cluster decides itself: a caller setting them would break the cluster's shape.
_OWNED_KEYS = frozenset({
    "brokerClusterName", "brokerName", "brokerId", "listenPort", "namesrvAddr",
    "storePathRootDir", "storePathCommitLog", "storePathDLedgerCommitLog", "enableDLegerCommitLog",
    "dLegerGroup", "dLegerPeers", "dLegerSelfId", "haMasterAddress",
})
#: Set per broker by the cluster, but a master may choose it (ASYNC_MASTER or SYNC_MASTER).
_MASTER_ROLE_KEY = "brokerRole"


def _ephemeral_range() -> tuple[int, int]:
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def free_port_block(taken: set[int] | None = None) -> int:
    """A loopback port P with P-2..P+1 bindable now (a broker also binds P-2, its fast port, and P+1,
    HA), none of them in ``taken`` (which gets the four added).

    Taken below the kernel's ephemeral range, so outgoing connections (of this process or another)
    cannot grab the port or a neighbour between this call and the bind.
    """
    taken = set() if taken is None else taken
    lo, _hi = _ephemeral_range()
    low, high = (12000, lo - 2) if lo > 14000 else (1024, 65533)
    rnd = random.Random()
    for _ in range(500):
        p = rnd.randrange(low + 2, high)
        block = {p - 2, p - 1, p, p + 1}
        if not block & taken and all(_bindable(q) for q in block):
            taken.update(block)
            return p
    raise OSError("no free block of four loopback ports found")


def _prop(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    text = str(v)
    if "\n" in text or "\r" in text:
        raise ConfigError(f"bad value for config key: a line break in {text!r}")
    return text


@dataclass
class EmbeddedBroker:
    """One broker of an embedded cluster: its config file and, while it runs, its BrokerController."""

    name: str  # brokerName
    node: str  # unique within the cluster: broker-a-0, broker-a-1 (slave), RaftNode00-n1, ...
    port: int
    config_file: Path
    dledger_self_id: str = ""
    peer_port: int = 0  # DLedger peer port (DLedger nodes only)
    metrics_port: int = 0  # the Prometheus endpoint's port when metricsExporterType=PROM
    broker: BrokerController | None = field(default=None, repr=False)

    @property
    def addr(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def running(self) -> bool:
        return self.broker is not None

    @property
    def is_master(self) -> bool:
        """A running master (in DLedger mode: the leader, after it took over as master)."""
        b = self.broker
        return b is not None and b.role.is_master and b.role.broker_id == 0

    @property
    def dledger_role(self) -> str | None:
        """"leader" / "follower" / "candidate" for a running DLedger node, else None."""
        b = self.broker
        if b is None or not b.configs.store.enableDLegerCommitLog:
            return None
        server = b.store.commit_log.server
        if server is None or server.core is None:
            return None
        return server.core.role.value.lower()


class EmbeddedCluster:
    """A NameServer plus brokers in this process; see the module docstring."""

    def __init__(
        self,
        brokers: int = 1,
        dledger_group: int = 0,
        slaves: int = 0,
        *,
        cluster_name: str = "DefaultCluster",
        store_root: str | os.PathLike[str] | None = None,
        namesrv_port: int = 0,
        listen_port: int | None = None,
        **broker_config: Any,
    ) -> None:
        if brokers < 0:
            raise ConfigError(f"bad value for brokers: {brokers} (0 runs the NameServer alone)")
        if dledger_group < 0 or slaves < 0:
            raise ConfigError("bad value for dledger_group/slaves: must be >= 0")
        if dledger_group and slaves:
            raise ConfigError("bad value for slaves: a DLedger group replicates by itself (use dledger_group alone)")
        owned = sorted(k for k in broker_config if k in _OWNED_KEYS)
        if owned:
            raise ConfigError(f"bad config key {owned[0]}: the embedded cluster sets it itself")
        # fixed ports (make run): the NameServer's, and the first broker's (the next ones 10 apart)
        self.namesrv_port = namesrv_port
        self.listen_port = listen_port
        self.n_brokers = brokers
        self.dledger_group = dledger_group
        self.n_slaves = slaves
        self.cluster_name = cluster_name
        self._props = {**EMBEDDED_DEFAULTS, **{k: _prop(v) for k, v in broker_config.items()}}
        self._own_root = store_root is None
        self._root_arg = store_root
        self.root: Path | None = None
        self.namesrv: NamesrvController | None = None
        self.brokers: list[EmbeddedBroker] = []
        # the blocking form: a loop of our own on a thread
        self._thread: threading.Thread | None = None
        self._tloop: asyncio.AbstractEventLoop | None = None

    # -- addresses ------------------------------------------------------------------------------

    @property
    def namesrv_addr(self) -> str:
        if self.namesrv is None:
            raise RuntimeError("the embedded cluster is not running")
        return f"{LOOPBACK}:{self.namesrv.port}"

    def masters(self) -> list[EmbeddedBroker]:
        return [b for b in self.brokers if b.is_master]

    def leader(self, name: str | None = None) -> EmbeddedBroker | None:
        """The running master of broker ``name`` (default: the first broker name): in DLedger mode
        the elected leader once it has taken over as master; None while there is none."""
        if not self.brokers:
            return None
        name = name or self.brokers[0].name
        for b in self.brokers:
            if b.name == name and b.is_master and b.dledger_role in (None, "leader"):
                return b
        return None

    # -- life cycle (async) -----------------------------------------------------------------------

    async def start(self) -> EmbeddedCluster:
        if self._root_arg:
            self.root = Path(self._root_arg)
            self.root.mkdir(parents=True, exist_ok=True)
        else:
            self.root = Path(tempfile.mkdtemp(prefix="rocketmq-embedded-"))
        try:
            self._plan()
            ns = NamesrvConfig(listenPort=self.namesrv_port, bindAddress=LOOPBACK)
            ns.kvConfigPath = str(self.root / "namesrv" / "kvConfig.json")
            ns.configStorePath = str(self.root / "namesrv" / "namesrv.properties")
            self.namesrv = NamesrvController(ns)
            await self.namesrv.start()
            self._write_configs()
            await asyncio.gather(*(self._start_broker(b) for b in self.brokers))
            if self.dledger_group:
                for name in dict.fromkeys(b.name for b in self.brokers):
                    await self._wait_leader(name, 30.0)
        except BaseException:
            await self.stop()
            raise
        return self

    async def stop(self) -> None:
        """Stop every broker (cleanly: flush, persist, unregister), then the NameServer."""
        await asyncio.gather(*(self._stop_broker(b) for b in self.brokers if b.broker is not None),
                             return_exceptions=True)
        if self.namesrv is not None:
            with contextlib.suppress(Exception):
                await self.namesrv.stop(grace=1.0)
            self.namesrv = None
        if self._own_root and self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    async def __aenter__(self) -> EmbeddedCluster:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- failover helpers ------------------------------------------------------------------------

    def kill(self, broker: EmbeddedBroker) -> Any:
        """Stop ``broker`` at once: its connections are reset and in-flight requests get no answer;
        peers and the NameServer see it vanish. (Its store is still closed cleanly: for crash
        consistency, kill -9 a real process.)"""
        return self._call(self._kill(broker))

    def restart(self, broker: EmbeddedBroker) -> Any:
        """Start ``broker`` again from its config file and store (stopping it first if it runs)."""
        return self._call(self._restart(broker))

    def wait_leader(self, name: str | None = None, timeout: float = 15.0) -> Any:
        """Wait until broker ``name`` has a master again (a DLedger leader that took over); returns it."""
        return self._call(self._wait_leader(name or self.brokers[0].name, timeout))

    async def _kill(self, broker: EmbeddedBroker) -> None:
        b = broker.broker
        if b is None:
            return
        for srv in (b.fast_server, b.server):
            if srv is not None:
                for conn in list(srv.connections):
                    conn.abort()
        b.configs.broker.shutdownGraceSeconds = 0
        await self._stop_broker(broker)

    async def _restart(self, broker: EmbeddedBroker) -> EmbeddedBroker:
        if broker.broker is not None:
            await self._stop_broker(broker)
        await self._start_broker(broker)
        return broker

    async def _wait_leader(self, name: str, timeout: float) -> EmbeddedBroker:
        deadline = time.monotonic() + timeout
        while True:
            b = self.leader(name)
            if b is not None:
                return b
            if time.monotonic() > deadline:
                raise TimeoutError(f"no master for broker {name} after {timeout}s")
            await asyncio.sleep(0.01)

    # -- internals ---------------------------------------------------------------------------------

    def _plan(self) -> None:
        taken: set[int] = set()
        fixed = iter(range(self.listen_port, 65535, 10)) if self.listen_port else None

        def port() -> int:
            return next(fixed) if fixed is not None else free_port_block(taken)
        for i in range(self.n_brokers):
            if self.dledger_group:
                name = f"RaftNode{i:02d}"
                for n in range(self.dledger_group):
                    self.brokers.append(EmbeddedBroker(
                        name, f"{name}-n{n}", port(), self.root / f"{name}-n{n}.conf", f"n{n}"))
            else:
                name = f"broker-{chr(ord('a') + i)}" if i < 26 else f"broker-{i}"
                for sid in range(self.n_slaves + 1):
                    self.brokers.append(EmbeddedBroker(
                        name, f"{name}-{sid}", port(), self.root / f"{name}-{sid}.conf"))
        if self._props.get("metricsExporterType", "DISABLE").upper() == "PROM":
            for b in self.brokers:
                b.metrics_port = free_port_block(taken) if fixed is None else 0
        if self.dledger_group:
            for b in self.brokers:
                b.peer_port = b.port + 30000 if fixed is not None and b.port < 35535 else free_port_block(taken)

    def _write_configs(self) -> None:
        for b in self.brokers:
            store = self.root / b.node
            props = dict(self._props)
            props.update({
                "brokerClusterName": self.cluster_name,
                "brokerName": b.name,
                "listenPort": str(b.port),
                "namesrvAddr": self.namesrv_addr,
                "storePathRootDir": str(store),
                "storePathCommitLog": str(store / "commitlog"),
            })
            if props.get("metricsExporterType", "DISABLE").upper() == "PROM":
                # each broker serves its own registry on its own port: the given one for a single
                # broker (make run's 5557), else the given one + the broker's place, else a free one
                # (fixed-port clusters without a given port keep the broker's default)
                given = self._props.get("metricsPromExporterPort")
                if given and len(self.brokers) == 1:
                    props["metricsPromExporterPort"] = given
                elif given:
                    props["metricsPromExporterPort"] = str(int(given) + self.brokers.index(b))
                elif b.metrics_port:
                    props["metricsPromExporterPort"] = str(b.metrics_port)
                props.setdefault("metricsPromExporterHost", LOOPBACK)
            if self.dledger_group:
                group = [x for x in self.brokers if x.name == b.name]
                props.update({
                    "enableDLegerCommitLog": "true",
                    "dLegerGroup": b.name,
                    "dLegerPeers": ";".join(f"{x.dledger_self_id}-{LOOPBACK}:{x.peer_port}" for x in group),
                    "dLegerSelfId": b.dledger_self_id,
                })
            else:
                sid = int(b.node.rsplit("-", 1)[1])
                props["brokerId"] = str(sid)
                if sid > 0:
                    props[_MASTER_ROLE_KEY] = "SLAVE"
                elif props.get(_MASTER_ROLE_KEY, "ASYNC_MASTER") == "SLAVE":
                    raise ConfigError("bad value for config key brokerRole: SLAVE (use slaves=N for slaves)")
            b.config_file.write_text("# written by EmbeddedCluster\n" + format_properties(props), encoding="utf-8")

    async def _start_broker(self, b: EmbeddedBroker) -> None:
        configs, unknown = load_configs(str(b.config_file))
        if unknown:
            raise ConfigError(f"unknown config key {unknown[0]}")
        broker = create_broker(configs)
        try:
            await broker.start()
            if not configs.store.enableDLegerCommitLog:
                # registered before start/restart returns: a client asking for routes then finds it
                # (DLedger nodes register when their role is settled; start waits for the leader)
                await self._wait_registered(broker.identity.broker_addr, 10.0)
        except BaseException:
            with contextlib.suppress(Exception):
                await broker.shutdown()
            raise
        b.broker = broker

    async def _wait_registered(self, addr: str, timeout: float) -> None:
        live = self.namesrv.route_info_manager.broker_live_table
        deadline = time.monotonic() + timeout
        while addr not in live:
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker {addr} did not register with the NameServer in {timeout}s")
            await asyncio.sleep(0.005)

    async def _stop_broker(self, b: EmbeddedBroker) -> None:
        broker, b.broker = b.broker, None
        if broker is not None:
            await broker.shutdown()

    # -- the blocking form -------------------------------------------------------------------------

    def _call(self, coro: Any) -> Any:
        if self._tloop is None:
            return coro
        return asyncio.run_coroutine_threadsafe(coro, self._tloop).result()

    def __enter__(self) -> EmbeddedCluster:
        ready = threading.Event()

        def run() -> None:
            try:
                import uvloop

                loop = uvloop.new_event_loop()
            except ImportError:  # pragma: no cover - uvloop is a dependency
                loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._tloop = loop
            ready.set()
            loop.run_forever()
            # what a failed start or a stray callback left behind ends with the loop, not at exit
            left = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in left:
                t.cancel()
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

        self._thread = threading.Thread(target=run, name="rocketmq-embedded", daemon=True)
        self._thread.start()
        ready.wait()
        try:
            asyncio.run_coroutine_threadsafe(self.start(), self._tloop).result()
        except BaseException:
            self._end_thread()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self.stop(), self._tloop).result()
        finally:
            self._end_thread()

    def _end_thread(self) -> None:
        loop, self._tloop = self._tloop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None


def broker_config_from(mapping: Mapping[str, Any]) -> dict[str, str]:
    """Broker config values as the properties text a file would hold (for the pytest plugin)."""
    return {k: _prop(v) for k, v in mapping.items()}


__all__ += ["BrokerStartError", "broker_config_from"]

"""A broker whose start fails part-way undoes what it started: the store lock is released, the ports it
opened are closed, so a second start in the same directory succeeds (in-process brokers on loopback)."""

from __future__ import annotations

import socket

import pytest

from broker.broker_controller import create_broker
from broker.config import BrokerConfigs
from broker.errors import BrokerStartError
from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.broker.helpers import send
from tests.support import free_port


def _configs(tmp_path, port: int, **broker) -> BrokerConfigs:
    cfg = BrokerConfigs()
    cfg.broker.brokerName = "startfail"
    cfg.broker.brokerIP1 = "127.0.0.1"
    for k, v in broker.items():
        setattr(cfg.broker, k, v)
    cfg.netty_server.listenPort = port
    cfg.store.storePathRootDir = str(tmp_path / "store")
    cfg.store.mappedFileSizeCommitLog = 1024 * 1024
    return cfg


def _listener(port: int) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen()
    return s


def _bindable(port: int) -> bool:
    """True when nothing listens on ``port`` any more (bound as the broker binds: all addresses)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
            s.listen()
        except OSError:
            return False
    return True


async def _serves(port: int) -> None:
    async with RemotingClient() as c:
        assert (await send(c, f"127.0.0.1:{port}", "StartT", b"m")).code == ResponseCode.SUCCESS


async def test_listen_port_taken_releases_the_store_and_the_ha_port(tmp_path):
    port = free_port()
    blocker = _listener(port)
    try:
        b = create_broker(_configs(tmp_path, port))
        with pytest.raises(BrokerStartError, match=f"cannot listen on port {port}"):
            await b.start()
        assert _bindable(port + 1)  # the HA port, opened before the main one, is closed again
        assert _bindable(port - 2)  # the fast port was never opened
    finally:
        blocker.close()
    # the store lock is free: a second broker loads the same directory, starts and serves
    b2 = create_broker(_configs(tmp_path, port))
    await b2.start()
    try:
        await _serves(port)
    finally:
        await b2.shutdown()
    assert not (tmp_path / "store" / "abort").exists()


async def test_metrics_port_taken_stops_the_started_services(tmp_path):
    port, metrics_port = free_port(), free_port()
    blocker = _listener(metrics_port)
    prom = {"metricsExporterType": "PROM", "metricsPromExporterHost": "127.0.0.1",
            "metricsPromExporterPort": metrics_port}
    try:
        b = create_broker(_configs(tmp_path, port, **prom))
        with pytest.raises(BrokerStartError, match="metricsPromExporterPort"):
            await b.start()
        # the services started before the metrics (delayed delivery, the transaction check) are stopped
        assert not b.semantics.schedule.started and not b.semantics.tx_check.started
        assert _bindable(port + 1) and _bindable(port) and _bindable(port - 2)
    finally:
        blocker.close()
    b2 = create_broker(_configs(tmp_path, port, **prom))
    await b2.start()
    try:
        await _serves(port)
        assert b2.metrics_manager is not None and b2.semantics.schedule.started
    finally:
        await b2.shutdown()


async def test_a_failed_build_releases_the_store_lock(tmp_path):
    """delayOffset.json (read after the store loaded) is corrupt: create_broker fails and leaves the lock free."""
    port = free_port()
    config_dir = tmp_path / "store" / "config"
    config_dir.mkdir(parents=True)
    for name in ("delayOffset.json", "delayOffset.json.bak"):
        (config_dir / name).write_text("{not json")
    with pytest.raises(BrokerStartError, match="delayOffset.json"):
        create_broker(_configs(tmp_path, port))
    for name in ("delayOffset.json", "delayOffset.json.bak"):
        (config_dir / name).unlink()
    b = create_broker(_configs(tmp_path, port))
    await b.start()
    try:
        await _serves(port)
    finally:
        await b.shutdown()

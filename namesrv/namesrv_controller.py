"""NamesrvController: wires the NameServer together and runs its lifecycle.

Composition only: builds the KV config manager, the route manager, the request
processor and the remoting server, registers the handlers, hooks connection
close to the route model (RocketMQ's onChannelDestroy) and runs the periodic
inactive-broker scan. ``start()`` / ``stop()`` are the whole lifecycle.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from common.metrics_exporter import validate_metrics_keys
from common.util import cancel_and_wait, now_ms, write_file_atomic
from namesrv.config import NamesrvConfig
from namesrv.default_request_processor import DefaultRequestProcessor
from namesrv.kv_config_manager import KVConfigManager
from namesrv.metrics import NamesrvMetrics
from namesrv.route_info_manager import RouteInfoManager
from remoting.server import RemotingServer
from remoting.tls import TlsSystemConfig

__all__ = ["NamesrvController"]

log = logging.getLogger("namesrv")

#: RocketMQ runs the first scan 5 s after start; a shorter configured interval wins.
FIRST_SCAN_DELAY_MS = 5_000


class NamesrvController:
    """One NameServer: ``await start()``, serve until ``await stop()``."""

    def __init__(self, config: NamesrvConfig, *, clock: Callable[[], int] = now_ms,
                 tls: TlsSystemConfig | None = None):
        self.config = config
        self._config_store_path = config.configStorePath
        self.kv_config_manager = KVConfigManager(config.kvConfigPath)
        self.route_info_manager = RouteInfoManager(config.brokerChannelExpiredTime, clock)
        # One worker keeps file writes in order (later snapshots land last).
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="namesrv-io")
        self.processor = DefaultRequestProcessor(
            self.route_info_manager,
            self.kv_config_manager,
            config,
            run_io=self._run_io,
            persist_config=self._persist_config,
        )
        self.server = RemotingServer(config.bindAddress, config.listenPort, name="namesrv", tls=tls)
        self.processor.register(self.server)
        self.server.add_connection_listener(on_close=self._on_channel_close)
        self._scan_task: asyncio.Task | None = None
        self.metrics: NamesrvMetrics | None = None
        if validate_metrics_keys(config):
            self.metrics = NamesrvMetrics(config, self.route_info_manager, f"{config.bindAddress}:{config.listenPort}")
            self.metrics.rpc_hook.install(self.server)

    @property
    def port(self) -> int:
        """The port actually listened on (useful with ``listenPort=0``)."""
        return self.server.port

    async def _run_io(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._io, fn, *args)

    def _persist_config(self, data: bytes) -> None:
        # The path of start-up, never one read back from the config object later.
        write_file_atomic(self._config_store_path, data)

    async def start(self) -> None:
        """Load the KV config, listen, start the scan; raises OSError if the port is taken."""
        self.kv_config_manager.load()
        if self.metrics is not None:  # MetricsStartError when its port is taken
            await self.metrics.start()
        await self.server.start()
        self._scan_task = asyncio.create_task(self._scan_loop(), name="namesrv-scan-not-active-broker")
        log.info("The Name Server boot success. listening on %s:%d", self.config.bindAddress, self.port)

    async def stop(self, grace: float = 5.0) -> None:
        """Stop scanning, close the server, finish pending file writes."""
        await cancel_and_wait(self._scan_task)
        self._scan_task = None
        await self.server.stop(grace)
        if self.metrics is not None:
            await self.metrics.stop()
        self._io.shutdown(wait=True)
        log.info("The Name Server stopped")

    def _on_channel_close(self, conn: Any) -> None:
        removed = self.route_info_manager.on_channel_destroy(getattr(conn, "remote_addr", None), conn)
        if removed:
            log.info("channel %s closed, brokers removed: %s", getattr(conn, "remote_addr", "?"), removed)

    def scan_not_active_broker(self) -> list[str]:
        """One scan: drop brokers silent too long and close their connections."""
        self.route_info_manager.broker_channel_expired_time = self.config.brokerChannelExpiredTime
        expired = self.route_info_manager.scan_not_active_broker()
        for _addr, channel in expired:
            close = getattr(channel, "close", None)
            if close is not None and not getattr(channel, "closed", False):
                try:
                    close()
                except Exception:  # a dying connection must not stop the scan
                    log.exception("closing expired broker channel failed")
        return [addr for addr, _ in expired]

    async def _scan_loop(self) -> None:
        delay = min(FIRST_SCAN_DELAY_MS, self.config.scanNotActiveBrokerInterval)
        while True:
            await asyncio.sleep(delay / 1000.0)
            try:
                self.scan_not_active_broker()
            except Exception:
                log.exception("scanNotActiveBroker failed")
            delay = self.config.scanNotActiveBrokerInterval

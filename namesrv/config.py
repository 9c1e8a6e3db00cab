"""NamesrvConfig: the NameServer's typed configuration (config-reference.md §8).

Paths, the listen port/address and anything fixed at start-up are
``wire=False``: UPDATE_NAMESRV_CONFIG refuses them (CVE-2023-37582 let a
remote caller point ``configStorePath`` at a file it then wrote).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from common.config import ConfigError, cfg
from common.metrics_exporter import validate_metrics_keys

__all__ = ["NamesrvConfig", "default_home"]


def default_home() -> str:
    """``$HOME`` as Java's ``user.home``."""
    return os.path.expanduser("~")


@dataclass
class NamesrvConfig:
    """NamesrvConfig plus the server keys of NettyServerConfig this NameServer uses."""

    listenPort: int = cfg(9876, wire=False)
    # Not in 4.9.7 (it always binds every interface); lets tests bind loopback only.
    bindAddress: str = cfg("0.0.0.0", wire=False)
    rocketmqHome: str = cfg(factory=lambda: os.environ.get("ROCKETMQ_HOME", ""), wire=False)
    kvConfigPath: str = cfg(
        factory=lambda: os.path.join(default_home(), "namesrv", "kvConfig.json"), wire=False
    )
    configStorePath: str = cfg(
        factory=lambda: os.path.join(default_home(), "namesrv", "namesrv.properties"), wire=False
    )
    productEnvName: str = cfg("center")
    clusterTest: bool = cfg(False, wire=False)
    orderMessageEnable: bool = cfg(False)
    # Liveness (fixed 10 s / 120 s in 4.9.7; configurable here for tests).
    scanNotActiveBrokerInterval: int = cfg(10_000)
    brokerChannelExpiredTime: int = cfg(120_000)
    # RocketMQ 5.x's metrics keys (PROM only here); they open a port: never over the wire.
    metricsExporterType: str = cfg("DISABLE", wire=False)
    metricsPromExporterHost: str = cfg("", wire=False)  # "" = 127.0.0.1
    metricsPromExporterPort: int = cfg(5557, wire=False)
    metricsLabel: str = cfg("", wire=False)

    def validate(self) -> None:
        """Raise ConfigError for values that cannot work."""
        if not 0 <= self.listenPort <= 65535:
            raise ConfigError(f"bad value for config key listenPort: {self.listenPort} is not a TCP port")
        if self.scanNotActiveBrokerInterval <= 0:
            raise ConfigError("bad value for config key scanNotActiveBrokerInterval: must be > 0")
        if self.brokerChannelExpiredTime <= 0:
            raise ConfigError("bad value for config key brokerChannelExpiredTime: must be > 0")
        validate_metrics_keys(self)
        if not self.kvConfigPath:
            raise ConfigError("bad value for config key kvConfigPath: empty")

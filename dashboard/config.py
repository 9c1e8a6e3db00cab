"""DashboardConfig: the one typed config object of the dashboard."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

__all__ = ["DashboardConfig", "is_loopback"]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(slots=True)
class DashboardConfig:
    namesrv_addr: str
    host: str = "127.0.0.1"
    port: int = 8082
    admin_token: str | None = None
    rpc_timeout: float = 5.0
    sample_interval: float = 5.0  # seconds between TPS / lag samples for the sparklines
    sample_points: int = 60

    def check(self) -> None:
        """Refuse what would expose the cluster: a non-loopback bind without an admin token."""
        if not self.namesrv_addr:
            raise ValueError("no NameServer address: use -n or set NAMESRV_ADDR")
        if not is_loopback(self.host) and not self.admin_token:
            raise ValueError(f"refusing to bind {self.host} without --admin-token: write operations would be open "
                             "to the network (bind 127.0.0.1, or set a token)")
        if not 0 < self.port < 65536:
            raise ValueError(f"bad port {self.port}")

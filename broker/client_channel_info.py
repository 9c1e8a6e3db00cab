"""ClientChannelInfo: one client connection as the broker knows it from heartbeats."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from common.util import now_ms

__all__ = ["ClientChannelInfo", "CHANNEL_EXPIRED_TIMEOUT_MS"]

#: A client silent for this long is dropped (RocketMQ's channelExpiredTimeout).
CHANNEL_EXPIRED_TIMEOUT_MS = 120_000


@dataclass(slots=True, eq=False)
class ClientChannelInfo:
    """``channel`` is a remoting ``Connection`` (remote_addr, invoke_oneway, close)."""

    channel: Any
    client_id: str
    language: str = "JAVA"
    version: int = 0
    last_update_timestamp: int = 0

    def __post_init__(self) -> None:
        if not self.last_update_timestamp:
            self.last_update_timestamp = now_ms()

    @property
    def client_addr(self) -> str:
        return getattr(self.channel, "remote_addr", "")

"""ClientChannelInfo: one client connection as the broker knows it from heartbeats."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from common.util import now_ms
from remoting.command import RemotingCommand

__all__ = ["ClientChannel", "ClientChannelInfo", "CHANNEL_EXPIRED_TIMEOUT_MS"]

#: A client silent for this long is dropped (RocketMQ's channelExpiredTimeout).
CHANNEL_EXPIRED_TIMEOUT_MS = 120_000


class ClientChannel(Protocol):
    """What the broker uses of a client's connection (a remoting ``Connection``)."""

    remote_addr: str
    closed: bool

    async def invoke(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand: ...

    def invoke_oneway(self, cmd: RemotingCommand) -> None: ...

    def close(self) -> None: ...


@dataclass(slots=True, eq=False)
class ClientChannelInfo:
    """One client connection: ``channel`` is the client's :class:`ClientChannel`."""

    channel: ClientChannel
    client_id: str
    language: str = "JAVA"
    version: int = 0
    last_update_timestamp: int = 0

    def __post_init__(self) -> None:
        if not self.last_update_timestamp:
            self.last_update_timestamp = now_ms()

    @property
    def client_addr(self) -> str:
        return self.channel.remote_addr

"""REGISTER_FILTER_SERVER (301): the legacy filter-server registration (FilterServerManager).

RocketMQ up to 4.9.5 let filter-server processes (class-filter mode) register with their
broker every 10 s; the broker answered with its name and id and advertised the live ones
in its REGISTER_BROKER body (``filterServerList``). 4.9.6 removed filter servers and
answers REQUEST_CODE_NOT_SUPPORTED; the spec lists the code as served by the broker, so
this answers as 4.9.5 did and keeps the table (an entry lives 30 s after its last
registration, or until its connection closes). :meth:`FilterServerManager.build_new_filter_server_list`
is what a register body would carry.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from broker.client_channel_info import ClientChannel
from broker.config import BrokerConfig
from broker.role_state import RoleState
from common.util import now_ms
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header.admin_extra import RegisterFilterServerRequestHeader, RegisterFilterServerResponseHeader

__all__ = ["FilterServerManager", "FilterServerProcessor", "FILTER_SERVER_MAX_IDLE_TIME_MS"]

log = logging.getLogger(__name__)

FILTER_SERVER_MAX_IDLE_TIME_MS = 30_000


@dataclass(slots=True)
class _FilterServerInfo:
    filter_server_addr: str
    last_update_timestamp: int


class FilterServerManager:
    """Connection -> registered filter server address, with RocketMQ's 30 s idle expiry."""

    def __init__(self, max_idle_ms: int = FILTER_SERVER_MAX_IDLE_TIME_MS):
        self.max_idle_ms = max_idle_ms
        self.table: dict[ClientChannel, _FilterServerInfo] = {}

    def register_filter_server(self, channel: ClientChannel, filter_server_addr: str) -> None:
        info = self.table.get(channel)
        if info is None:
            self.table[channel] = _FilterServerInfo(filter_server_addr, now_ms())
            log.info("Receive a New Filter Server<%s>", filter_server_addr)
        else:
            info.filter_server_addr = filter_server_addr
            info.last_update_timestamp = now_ms()

    def scan_not_active_channel(self) -> list[ClientChannel]:
        """Drop entries idle too long or whose connection closed; returns their channels."""
        now = now_ms()
        gone = [ch for ch, info in self.table.items()
                if now - info.last_update_timestamp > self.max_idle_ms or ch.closed]
        for ch in gone:
            info = self.table.pop(ch)
            log.warning("The Filter Server<%s> expired, remove it", info.filter_server_addr)
        return gone

    def do_channel_close_event(self, channel: ClientChannel) -> None:
        info = self.table.pop(channel, None)
        if info is not None:
            log.warning("The Filter Server<%s> connection closed, remove it", info.filter_server_addr)

    def build_new_filter_server_list(self) -> list[str]:
        """Addresses of the live filter servers (what REGISTER_BROKER's filterServerList would hold)."""
        self.scan_not_active_channel()
        return [info.filter_server_addr for info in self.table.values()]


class FilterServerProcessor:
    """Answers REGISTER_FILTER_SERVER with the broker's name and current id."""

    def __init__(self, broker_config: BrokerConfig, manager: FilterServerManager | None = None,
                 role: RoleState | None = None):
        self.broker_config = broker_config
        self.role = role if role is not None else RoleState()
        self.manager = manager if manager is not None else FilterServerManager()

    def register_filter_server(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(RegisterFilterServerRequestHeader)
        addr = h.filterServerAddr.strip()
        if not addr:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "filterServerAddr is empty")
        self.manager.scan_not_active_channel()  # no periodic scan here: prune on each registration
        self.manager.register_filter_server(conn, addr)
        resp = RegisterFilterServerResponseHeader(brokerName=self.broker_config.brokerName,
                                                  brokerId=self.role.broker_id)
        return req.response_to(ResponseCode.SUCCESS, header=resp)

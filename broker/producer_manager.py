"""ProducerManager: producer groups and their client channels (from HEART_BEAT)."""

from __future__ import annotations

import logging

from broker.client_channel_info import CHANNEL_EXPIRED_TIMEOUT_MS, ClientChannel, ClientChannelInfo
from common.util import now_ms

__all__ = ["ProducerManager"]

log = logging.getLogger(__name__)


class ProducerManager:
    """Group -> {channel: ClientChannelInfo}, plus clientId -> channel for broker->producer calls."""

    def __init__(self) -> None:
        self.group_channel_table: dict[str, dict[ClientChannel, ClientChannelInfo]] = {}
        self.client_channel_table: dict[str, ClientChannel] = {}

    def register_producer(self, group: str, info: ClientChannelInfo) -> None:
        chans = self.group_channel_table.get(group)
        if chans is None:
            chans = self.group_channel_table[group] = {}
        old = chans.get(info.channel)
        if old is None:
            chans[info.channel] = info
            self.client_channel_table[info.client_id] = info.channel
            log.info("new producer connected, group %s %s %s", group, info.client_id, info.client_addr)
        else:
            old.last_update_timestamp = now_ms()

    def unregister_producer(self, group: str, channel: ClientChannel) -> None:
        chans = self.group_channel_table.get(group)
        if chans is None:
            return
        info = chans.pop(channel, None)
        if info is not None:
            self.client_channel_table.pop(info.client_id, None)
        if not chans:
            del self.group_channel_table[group]

    def do_channel_close_event(self, channel: ClientChannel) -> None:
        for group in list(self.group_channel_table):
            self.unregister_producer(group, channel)

    def scan_not_active_channel(self, timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS) -> list[ClientChannel]:
        now = now_ms()
        expired = []
        for group in list(self.group_channel_table):
            for ch, info in list(self.group_channel_table[group].items()):
                if now - info.last_update_timestamp > timeout_ms:
                    log.warning("producer channel %s of group %s expired", info.client_addr, group)
                    self.unregister_producer(group, ch)
                    expired.append(ch)
        return expired

    def get_connections(self, group: str) -> list[ClientChannelInfo]:
        return list(self.group_channel_table.get(group, {}).values())

    def get_available_channel(self, group: str) -> ClientChannel | None:
        """One live channel of ``group`` (for CHECK_TRANSACTION_STATE)."""
        for ch in self.group_channel_table.get(group, {}):
            if not ch.closed:
                return ch
        return None

    def find_channel(self, client_id: str) -> ClientChannel | None:
        return self.client_channel_table.get(client_id)

"""ConsumerManager: consumer groups, their client channels and subscriptions (from HEART_BEAT).

When a group's channel set or subscription set changes, every channel of the
group gets NOTIFY_CONSUMER_IDS_CHANGED (oneway) so clients rebalance at once.
Channels silent for 120 s are dropped by :meth:`scan_not_active_channel`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from broker.client_channel_info import CHANNEL_EXPIRED_TIMEOUT_MS, ClientChannel, ClientChannelInfo
from common.util import now_ms

if TYPE_CHECKING:  # imported where used: not needed to start a broker
    from remoting.body.heartbeat import SubscriptionData

__all__ = ["ConsumerGroupInfo", "ConsumerManager"]

log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class ConsumerGroupInfo:
    """One consumer group: channels (by connection) and subscriptions (by topic)."""

    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    channel_info_table: dict[ClientChannel, ClientChannelInfo] = field(default_factory=dict)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    last_update_timestamp: int = field(default_factory=now_ms)

    def find_subscription_data(self, topic: str) -> SubscriptionData | None:
        return self.subscription_table.get(topic)

    def all_client_ids(self) -> list[str]:
        return [c.client_id for c in self.channel_info_table.values()]

    def all_channels(self) -> list[Any]:
        return list(self.channel_info_table)

    def update_channel(self, info: ClientChannelInfo, consume_type: str, message_model: str, cfw: str) -> bool:
        """Add or refresh a channel; True when it is new."""
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = cfw
        old = self.channel_info_table.get(info.channel)
        updated = False
        if old is None:
            self.channel_info_table[info.channel] = info
            log.info("new consumer connected, group %s %s %s", self.group_name, info.client_id, info.client_addr)
            updated = True
            old = info
        elif old.client_id != info.client_id:
            log.warning("consumer channel %s changed client id %s -> %s", info.client_addr, old.client_id, info.client_id)
            self.channel_info_table[info.channel] = info
            old = info
        now = now_ms()
        self.last_update_timestamp = now
        old.last_update_timestamp = now
        return updated

    def update_subscription(self, subs: list[SubscriptionData]) -> bool:
        """Merge a heartbeat's subscriptions; True when a topic was added or removed."""
        updated = False
        for sub in subs:
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                updated = True
            elif sub.subVersion > old.subVersion:
                self.subscription_table[sub.topic] = sub
        wanted = {s.topic for s in subs}
        for topic in [t for t in self.subscription_table if t not in wanted]:
            del self.subscription_table[topic]
            updated = True
        self.last_update_timestamp = now_ms()
        return updated

    def unregister_channel(self, channel: ClientChannel) -> bool:
        return self.channel_info_table.pop(channel, None) is not None


class ConsumerManager:
    """Group name -> ConsumerGroupInfo; ``notify(group, channels)`` sends the ids-changed notices."""

    def __init__(
        self,
        notify: Callable[[str, list[Any]], None] | None = None,
        on_group_removed: Callable[[str], None] | None = None,
    ):
        self.table: dict[str, ConsumerGroupInfo] = {}
        self.notify = notify
        self.on_group_removed = on_group_removed

    def get_consumer_group_info(self, group: str) -> ConsumerGroupInfo | None:
        return self.table.get(group)

    def find_subscription_data(self, group: str, topic: str) -> SubscriptionData | None:
        g = self.table.get(group)
        return None if g is None else g.subscription_table.get(topic)

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        g = self.table.get(group)
        if g is None:
            return None
        for info in g.channel_info_table.values():
            if info.client_id == client_id:
                return info
        return None

    def register_consumer(
        self,
        group: str,
        info: ClientChannelInfo,
        consume_type: str,
        message_model: str,
        consume_from_where: str,
        subs: list[SubscriptionData],
        notify_enabled: bool,
    ) -> bool:
        g = self.table.get(group)
        if g is None:
            g = self.table[group] = ConsumerGroupInfo(group, consume_type, message_model, consume_from_where)
        r1 = g.update_channel(info, consume_type, message_model, consume_from_where)
        r2 = g.update_subscription(subs)
        if (r1 or r2) and notify_enabled:
            self._notify(group, g.all_channels())
        return r1 or r2

    def unregister_consumer(self, group: str, channel: ClientChannel, notify_enabled: bool) -> None:
        g = self.table.get(group)
        if g is None:
            return
        if g.unregister_channel(channel):
            if not g.channel_info_table:
                self._remove_group(group)
            elif notify_enabled:
                self._notify(group, g.all_channels())

    def do_channel_close_event(self, channel: ClientChannel, notify_enabled: Callable[[str], bool] | None = None) -> None:
        """A connection closed: drop it from every group and notify the remaining members."""
        for group in list(self.table):
            g = self.table[group]
            if g.unregister_channel(channel):
                if not g.channel_info_table:
                    self._remove_group(group)
                elif notify_enabled is None or notify_enabled(group):
                    self._notify(group, g.all_channels())

    def scan_not_active_channel(self, timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS) -> list[Any]:
        """Drop channels without a heartbeat for ``timeout_ms``; returns them (the caller closes them)."""
        now = now_ms()
        expired = []
        for group in list(self.table):
            g = self.table[group]
            for ch, info in list(g.channel_info_table.items()):
                if now - info.last_update_timestamp > timeout_ms:
                    log.warning("consumer channel %s of group %s expired", info.client_addr, group)
                    del g.channel_info_table[ch]
                    expired.append(ch)
            if not g.channel_info_table:
                self._remove_group(group)
        return expired

    def query_topic_consume_by_who(self, topic: str) -> set[str]:
        return {name for name, g in self.table.items() if topic in g.subscription_table}

    def _remove_group(self, group: str) -> None:
        self.table.pop(group, None)
        log.info("consumer group %s has no clients left, removed", group)
        if self.on_group_removed is not None:
            try:
                self.on_group_removed(group)
            except Exception:  # noqa: BLE001
                log.exception("group removal hook failed for %s", group)

    def _notify(self, group: str, channels: list[Any]) -> None:
        if self.notify is not None and channels:
            self.notify(group, channels)

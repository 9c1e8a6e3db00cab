"""SlaveSynchronize: a SLAVE copies the master's metadata every 10 s (first after 3 s).

Topic configs, consumer offsets, delay offsets and subscription groups are
fetched with GET_ALL_* from the master address the NameServer returned at
registration, replace the local copies and are persisted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from broker.consumer_offset_manager import ConsumerOffsetManager
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from common.util import write_file_atomic
from remoting.body.subscription_group import SubscriptionGroupWrapper
from remoting.body.topic_config import DataVersion, TopicConfigSerializeWrapper
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand

__all__ = ["SlaveSynchronize"]

log = logging.getLogger(__name__)


class SlaveSynchronize:
    """Pulls the master's tables; ``master_addr`` is set from the NameServer's register reply."""

    def __init__(
        self,
        client: Any,
        topic_config_manager: TopicConfigManager,
        consumer_offset_manager: ConsumerOffsetManager,
        subscription_group_manager: SubscriptionGroupManager,
        delay_offset_path: str,
        timeout_s: float = 3.0,
    ):
        self.client = client
        self.topics = topic_config_manager
        self.offsets = consumer_offset_manager
        self.groups = subscription_group_manager
        self.delay_offset_path = delay_offset_path
        self.timeout_s = timeout_s
        self.master_addr: str | None = None
        self._gone: frozenset[str] = frozenset()  # masters known to be replaced (see forget_master)

    def forget_master(self, gone: set[str] | frozenset[str]) -> None:
        """The master changed (a DLedger failover): stop syncing from the old one at once, and
        refuse the addresses in ``gone`` until another master is offered: the NameServer keeps
        naming a paused old master until the new one registers."""
        self._gone = frozenset(gone)
        self.master_addr = None

    def offer_master(self, addr: str | None) -> bool:
        """The master address a NameServer returned at registration (None: it knows no master).
        Returns True when it is a new master to sync from."""
        if addr is not None and addr in self._gone:
            return False
        changed = bool(addr) and addr != self.master_addr
        self.master_addr = addr or None
        if changed:
            self._gone = frozenset()
        return changed

    async def _get(self, code: int) -> bytes | None:
        addr = self.master_addr
        if not addr:
            return None  # the master was forgotten meanwhile (a failover): nothing to ask
        r = await self.client.invoke(addr, RemotingCommand.request(code), self.timeout_s)
        if r.code != ResponseCode.SUCCESS:
            log.debug("master %s answered %s to %s: %s", addr, r.code, code, r.remark)
            return None
        if addr != self.master_addr:
            return None  # an answer of a master replaced meanwhile: not applied
        return r.body

    async def sync_all(self) -> None:
        addr = self.master_addr
        if not addr:
            return
        for name, fn in (
            ("topic config", self.sync_topic_config),
            ("consumer offsets", self.sync_consumer_offset),
            ("delay offsets", self.sync_delay_offset),
            ("subscription groups", self.sync_subscription_group_config),
        ):
            try:
                await fn()
            except Exception as e:  # noqa: BLE001 - the master may be down; try again next round
                log.warning("sync %s from master %s failed: %s", name, addr, e)

    async def _sync_versioned(self, code: int, read: Callable[[bytes], tuple[DataVersion, dict]],
                              manager: TopicConfigManager | SubscriptionGroupManager, what: str) -> None:
        """Replace a versioned table with the master's when the master's data version differs."""
        body = await self._get(code)
        if not body:
            return
        version, table = read(body)
        if version != manager.data_version:
            manager.table = dict(table)
            manager.data_version.assign_from(version)
            manager.persist()
            log.info("synced %s from master %s", what, self.master_addr)

    async def sync_topic_config(self) -> None:
        def read(body: bytes) -> tuple[DataVersion, dict]:
            w = TopicConfigSerializeWrapper.from_json(body)
            return w.dataVersion, w.topicConfigTable

        await self._sync_versioned(RequestCode.GET_ALL_TOPIC_CONFIG, read, self.topics, "topic config")

    async def sync_consumer_offset(self) -> None:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.admin import ConsumerOffsetSerializeWrapper

        body = await self._get(RequestCode.GET_ALL_CONSUMER_OFFSET)
        if not body:
            return
        self.offsets.table.update(ConsumerOffsetSerializeWrapper.from_json(body).offsetTable)
        self.offsets.persist()

    async def sync_delay_offset(self) -> None:
        body = await self._get(RequestCode.GET_ALL_DELAY_OFFSET)
        if not body:
            return
        text = bytes(body).decode("utf-8")
        old = None
        if os.path.exists(self.delay_offset_path):
            with open(self.delay_offset_path, encoding="utf-8") as f:
                old = f.read()
        if old != text:
            write_file_atomic(self.delay_offset_path, text)

    async def sync_subscription_group_config(self) -> None:
        def read(body: bytes) -> tuple[DataVersion, dict]:
            w = SubscriptionGroupWrapper.from_json(body)
            return w.dataVersion, w.subscriptionGroupTable

        await self._sync_versioned(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, read, self.groups,
                                   "subscription groups")

"""SubscriptionGroupManager: consumer-group settings, persisted as ``config/subscriptionGroup.json``."""

from __future__ import annotations

import logging
from typing import Any

from broker.config import BrokerConfig
from broker.config_manager import VersionedConfigManager
from common import mixall, topic_validator
from remoting.body.subscription_group import SubscriptionGroupConfig, SubscriptionGroupWrapper
from remoting.body.topic_config import DataVersion

__all__ = ["SubscriptionGroupManager"]

log = logging.getLogger(__name__)

# Groups every RocketMQ broker knows; the last four consume in broadcast mode too.
_DEFAULT_GROUPS = (
    mixall.TOOLS_CONSUMER_GROUP,
    mixall.FILTERSRV_CONSUMER_GROUP,
    mixall.SELF_TEST_CONSUMER_GROUP,
    mixall.ONS_HTTP_PROXY_GROUP,
    mixall.CID_ONSAPI_PULL_GROUP,
    mixall.CID_ONSAPI_PERMISSION_GROUP,
    mixall.CID_ONSAPI_OWNER_GROUP,
)


class SubscriptionGroupManager(VersionedConfigManager[SubscriptionGroupConfig]):
    """Group name -> SubscriptionGroupConfig; unknown groups are created on use when allowed."""

    table_key = "subscriptionGroupTable"
    entry_kind = "subscription group"

    def __init__(self, broker_config: BrokerConfig, path: str):
        super().__init__(path)
        self.broker_config = broker_config
        for g in _DEFAULT_GROUPS:
            self.table[g] = SubscriptionGroupConfig(groupName=g)

    def find_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config; auto-created (and persisted) when ``autoCreateSubscriptionGroup`` is on.

        Illegal names are never created: they would end up in retry-topic names and files.
        """
        sgc = self.table.get(group)
        if sgc is not None:
            return sgc
        if not self.broker_config.autoCreateSubscriptionGroup and not mixall.is_sys_consumer_group(group):
            return None
        if topic_validator.validate_group(group) is not None:
            return None
        sgc = SubscriptionGroupConfig(groupName=group)
        self.table[group] = sgc
        log.info("auto-created subscription group %s", group)
        self.bump()
        return sgc

    def update_subscription_group_config(self, sgc: SubscriptionGroupConfig) -> None:
        self.put_entry(sgc.groupName, sgc)
        self.bump()

    def delete_subscription_group_config(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        log.info("deleted subscription group %s", group)
        self.bump()
        return True

    def contains(self, group: str) -> bool:
        return group in self.table

    def build_wrapper(self) -> SubscriptionGroupWrapper:
        return SubscriptionGroupWrapper(subscriptionGroupTable=dict(self.table), dataVersion=self.data_version.copy())

    def read_file(self, tree: Any) -> tuple[DataVersion, dict[str, SubscriptionGroupConfig]]:
        wrapper = SubscriptionGroupWrapper.from_obj(tree)
        return wrapper.dataVersion, wrapper.subscriptionGroupTable

    def invalid_name(self, name: str) -> str | None:
        return topic_validator.validate_group(name)

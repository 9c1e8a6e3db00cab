"""TopicConfigManager: the broker's topic table, persisted as ``config/topics.json``.

Creates RocketMQ's default/system topics at start, auto-creates topics on
first send through the ``TBW102`` template (``createTopicInSendMessageMethod``)
and on send-back (retry/DLQ topics), bumps the DataVersion on every change and
calls ``on_change`` so the broker re-registers with the NameServers at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from broker.config import BrokerConfig
from broker.config_manager import VersionedConfigManager
from common import mixall, topic_validator
from common.perm import PERM_INHERIT, PERM_READ, PERM_WRITE, is_inherited
from remoting.body.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper

__all__ = ["TopicConfigManager"]

log = logging.getLogger(__name__)


class TopicConfigManager(VersionedConfigManager[TopicConfig]):
    """Topic name -> TopicConfig, with the DataVersion the NameServer sees."""

    table_key = "topicConfigTable"
    entry_kind = "topic"

    def __init__(self, broker_config: BrokerConfig, path: str, on_change: Callable[[], None] | None = None):
        super().__init__(path)
        self.broker_config = broker_config
        self.on_change = on_change
        self._init_system_topics()

    # -- defaults -----------------------------------------------------------------

    def _put_system(self, name: str, queues: int, perm: int) -> None:
        topic_validator.add_system_topic(name)
        self.table[name] = TopicConfig(topicName=name, readQueueNums=queues, writeQueueNums=queues, perm=perm)

    def _init_system_topics(self) -> None:
        bc = self.broker_config
        self._put_system(mixall.SELF_TEST_TOPIC, 1, PERM_READ | PERM_WRITE)
        if bc.autoCreateTopicEnable:
            self._put_system(
                mixall.DEFAULT_TOPIC, bc.defaultTopicQueueNums, PERM_INHERIT | PERM_READ | PERM_WRITE
            )
        self._put_system(mixall.BENCHMARK_TOPIC, 1024, PERM_READ | PERM_WRITE)
        self._put_system(
            bc.brokerClusterName, 16, PERM_INHERIT | (PERM_READ | PERM_WRITE if bc.clusterTopicEnable else 0)
        )
        self._put_system(bc.brokerName, 1, PERM_INHERIT | (PERM_READ | PERM_WRITE if bc.brokerTopicEnable else 0))
        self._put_system(mixall.OFFSET_MOVED_EVENT, 1, PERM_READ | PERM_WRITE)
        self._put_system(mixall.SCHEDULE_TOPIC, 18, PERM_READ | PERM_WRITE)
        if bc.traceTopicEnable:
            self._put_system(bc.msgTraceTopicName, 1, PERM_READ | PERM_WRITE)
        self._put_system(mixall.get_reply_topic(bc.brokerClusterName), 1, PERM_READ | PERM_WRITE)

    # -- queries ------------------------------------------------------------------

    def select_topic_config(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def is_order_topic(self, topic: str) -> bool:
        tc = self.table.get(topic)
        return tc is not None and tc.order

    def build_serialize_wrapper(self) -> TopicConfigSerializeWrapper:
        """A snapshot for REGISTER_BROKER / GET_ALL_TOPIC_CONFIG."""
        return TopicConfigSerializeWrapper(topicConfigTable=dict(self.table), dataVersion=self.data_version.copy())

    # -- changes ------------------------------------------------------------------

    def _changed(self, register: bool = True) -> None:
        self.bump()
        if register and self.on_change is not None:
            try:
                self.on_change()
            except Exception:  # noqa: BLE001 - registration problems must not fail the request
                log.exception("topic change hook failed")

    def create_topic_in_send_message_method(
        self, topic: str, default_topic: str, remote_addr: str, client_queue_nums: int, topic_sys_flag: int
    ) -> TopicConfig | None:
        """Create ``topic`` from the template ``default_topic`` (normally TBW102), as RocketMQ does on first send."""
        tc = self.table.get(topic)
        if tc is not None:
            return tc
        default = self.table.get(default_topic)
        if default is None:
            log.warning("create topic %s: default topic %s does not exist (from %s)", topic, default_topic, remote_addr)
            return None
        if default_topic == mixall.DEFAULT_TOPIC and not self.broker_config.autoCreateTopicEnable:
            default.perm = PERM_READ | PERM_WRITE
        if not is_inherited(default.perm):
            log.warning("create topic %s: default topic %s has no inherit perm (%d)", topic, default_topic, default.perm)
            return None
        queue_nums = max(0, min(client_queue_nums, default.writeQueueNums))
        tc = TopicConfig(
            topicName=topic,
            readQueueNums=queue_nums,
            writeQueueNums=queue_nums,
            perm=default.perm & ~PERM_INHERIT,
            topicFilterType=default.topicFilterType,
            topicSysFlag=topic_sys_flag,
        )
        log.info("auto-created topic %s from %s for %s: %s", topic, default_topic, remote_addr, tc)
        self.table[topic] = tc
        self._changed()
        return tc

    def create_topic_in_send_message_back_method(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0
    ) -> TopicConfig:
        """Create a retry/DLQ topic if missing (send-back, heartbeat, first send to %RETRY%)."""
        tc = self.table.get(topic)
        if tc is not None:
            return tc
        tc = TopicConfig(
            topicName=topic, readQueueNums=queue_nums, writeQueueNums=queue_nums, perm=perm, topicSysFlag=topic_sys_flag
        )
        self.table[topic] = tc
        log.info("created topic %s", tc)
        self._changed()
        return tc

    def update_topic_config(self, tc: TopicConfig) -> None:
        """Create or replace a topic (UPDATE_AND_CREATE_TOPIC)."""
        self.put_entry(tc.topicName, tc)
        self._changed()

    def update_order_topic_config(self, order_topics: set[str]) -> None:
        """Mark exactly ``order_topics`` as order topics (from the NameServer's ORDER_TOPIC_CONFIG)."""
        changed = False
        for name, tc in self.table.items():
            want = name in order_topics
            if tc.order != want:
                tc.order = want
                changed = True
        if changed:
            self._changed(register=False)

    def delete_topic_config(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        log.info("deleted topic %s", topic)
        self._changed(register=False)
        return True

    # -- persistence ----------------------------------------------------------------

    def read_file(self, tree: Any) -> tuple[DataVersion, dict[str, TopicConfig]]:
        wrapper = TopicConfigSerializeWrapper.from_obj(tree)
        return wrapper.dataVersion, wrapper.topicConfigTable

    def invalid_name(self, name: str) -> str | None:
        return topic_validator.validate_topic(name)


"""ConsumerFilterManager: SQL92 filters of consumer groups, persisted in consumerFilter.json.

Fed by heartbeats (``register(group, subscriptions)`` on the consumer
manager's REGISTER event, ``unregister(group)`` when the group's last client
goes), read by the pull path (``get(topic, group)``) and by the bitmap
dispatcher (``get_by_topic``). Rules, as RocketMQ 4.9.7's manager:

* only SQL92 subscriptions with a non-empty expression are kept;
* a subscription with a ``subVersion`` not newer than the stored
  ``clientVersion`` changes nothing (except reviving dead data of the same
  version);
* a newer version with a different expression replaces the data (a compile
  error removes it, so pulls answer FILTER_DATA_NOT_EXIST);
* topics a group no longer subscribes, and groups that unregister, are
  marked dead and dropped ``filterDataCleanTimeSpan`` later (on persist);
* on load every entry is treated as dead since 30 s ago, and if the bloom
  filter size changed all persisted data is ignored.

File shape (message-and-store-format.md §10)::

    {"filterDataByTopic":{"T":{"groupFilterData":{"g":{...ConsumerFilterData...}},"topic":"T"}}}
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from broker.config import BrokerConfig
from broker.filter.bloom_filter import BloomFilter

if TYPE_CHECKING:  # imported where used: not needed to start a broker
    from broker.filter.consumer_filter_data import ConsumerFilterData
from common.filter import ExpressionType, SubscriptionData
from common.util import now_ms, read_file_with_bak, write_file_atomic

__all__ = ["ConsumerFilterManager", "consumer_filter_path"]

log = logging.getLogger("rocketmq.filter")

MS_24_HOUR = 24 * 3600 * 1000
_LOAD_DEAD_AGO_MS = 30 * 1000


def consumer_filter_path(store_path_root_dir: str) -> str:
    """``<storePathRootDir>/config/consumerFilter.json``."""
    return os.path.join(store_path_root_dir, "config", "consumerFilter.json")


class ConsumerFilterManager:
    """SQL92 filter data by topic then consumer group."""

    def __init__(
        self,
        config_file_path: str | None = None,
        *,
        bloom_filter: BloomFilter | None = None,
        filter_data_clean_time_span: int = MS_24_HOUR,
        clock: Callable[[], int] = now_ms,
    ):
        self.config_file_path = config_file_path
        self.bloom_filter = bloom_filter if bloom_filter is not None else BloomFilter(20, 32)
        self.filter_data_clean_time_span = filter_data_clean_time_span
        self._clock = clock
        self._lock = threading.RLock()
        # topic -> group -> data
        self._by_topic: dict[str, dict[str, ConsumerFilterData]] = {}

    @classmethod
    def from_broker_config(cls, config_file_path: str | None, broker_config: BrokerConfig, **kw) -> ConsumerFilterManager:
        """Size the bloom filter from BrokerConfig (maxErrorRateOfBloomFilter, expectConsumerNumUseFilter)."""
        return cls(
            config_file_path,
            bloom_filter=BloomFilter(
                broker_config.maxErrorRateOfBloomFilter,
                broker_config.expectConsumerNumUseFilter,
            ),
            filter_data_clean_time_span=broker_config.filterDataCleanTimeSpan,
            **kw,
        )

    # -- registration ------------------------------------------------------------

    def register(self, consumer_group: str, subscriptions: Iterable[SubscriptionData]) -> None:
        """A heartbeat of ``consumer_group``: register its SQL92 subscriptions, kill dropped topics."""
        subs = list(subscriptions)
        with self._lock:
            for sub in subs:
                self.register_topic(sub.topic, consumer_group, sub.subString, sub.expressionType, sub.subVersion)
            topics = {sub.topic for sub in subs}
            now = self._clock()
            for data in self.get_by_group(consumer_group):
                if data.topic not in topics and not data.is_dead():
                    data.deadTime = now
                    log.info("consumer filter of %s on %s is dead: topic no longer subscribed", consumer_group, data.topic)

    def register_topic(
        self, topic: str, consumer_group: str, expression: str | None, expression_type: str | None, client_version: int
    ) -> bool:
        """Register one subscription; True if the stored filter is now this one (new, changed, refreshed)."""
        if ExpressionType.is_tag_type(expression_type) or not expression:
            return False
        with self._lock:
            groups = self._by_topic.setdefault(topic, {})
            bloom = self.bloom_filter.generate(consumer_group + "#" + topic)
            old = groups.get(consumer_group)
            if old is None:
                data = self._build(topic, consumer_group, expression, expression_type, client_version)
                if data is None:
                    return False
                data.bloomFilterData = bloom
                groups[consumer_group] = data
                log.info("new consumer filter: %s on %s: %s", consumer_group, topic, expression)
                return True
            if client_version <= old.clientVersion:
                if client_version == old.clientVersion and old.is_dead():
                    old.deadTime = 0
                    return True
                return False
            changed = (
                old.expression != expression
                or old.expressionType != expression_type
                or old.bloomFilterData != bloom
            )
            if changed:
                data = self._build(topic, consumer_group, expression, expression_type, client_version)
                if data is None:
                    # the new expression does not compile: drop the old one, pulls then report it
                    del groups[consumer_group]
                    return False
                data.bloomFilterData = bloom
                groups[consumer_group] = data
                log.info("consumer filter changed: %s on %s: %s", consumer_group, topic, expression)
                return True
            old.clientVersion = client_version
            if old.is_dead():
                old.deadTime = 0
            return True

    def _build(self, topic, group, expression, expression_type, client_version) -> ConsumerFilterData | None:
        # imported on first use: the SQL92 compiler (lark) stays off start-up (start-up time)
        from broker.filter.consumer_filter_data import build_consumer_filter_data
        from broker.filter.selector_parser import FilterParseError

        try:
            return build_consumer_filter_data(
                topic, group, expression, expression_type, client_version, born_time=self._clock()
            )
        except FilterParseError as e:
            log.warning("bad filter expression of %s on %s: %s", group, topic, e)
            return None

    def unregister(self, consumer_group: str) -> None:
        """The group has no client left: mark all its filters dead."""
        now = self._clock()
        with self._lock:
            for groups in self._by_topic.values():
                data = groups.get(consumer_group)
                if data is not None and not data.is_dead():
                    data.deadTime = now

    # -- queries ---------------------------------------------------------------------

    def get(self, topic: str | None, consumer_group: str) -> ConsumerFilterData | None:
        """Filter data of ``consumer_group`` on ``topic`` (dead or alive), or None."""
        if topic is None:
            return None
        groups = self._by_topic.get(topic)
        if not groups:
            return None
        return groups.get(consumer_group)

    def get_by_topic(self, topic: str) -> list[ConsumerFilterData]:
        """All filter data on ``topic`` (for bitmap calculation)."""
        groups = self._by_topic.get(topic)
        return list(groups.values()) if groups else []

    def get_by_group(self, consumer_group: str) -> list[ConsumerFilterData]:
        """All filter data of ``consumer_group``, one per topic."""
        with self._lock:
            return [g[consumer_group] for g in self._by_topic.values() if consumer_group in g]

    def topics(self) -> list[str]:
        with self._lock:
            return list(self._by_topic)

    # -- persistence ------------------------------------------------------------------

    def clean(self) -> None:
        """Drop data dead for longer than the clean time span, and topics left empty."""
        now = self._clock()
        with self._lock:
            for topic in list(self._by_topic):
                groups = self._by_topic[topic]
                for group in list(groups):
                    if groups[group].how_long_after_death(now) >= self.filter_data_clean_time_span:
                        log.info("removing consumer filter of %s on %s: dead too long", group, topic)
                        del groups[group]
                if not groups:
                    del self._by_topic[topic]

    def encode(self, pretty: bool = False) -> str:
        """consumerFilter.json content (cleans first, as RocketMQ does)."""
        self.clean()
        with self._lock:
            doc = {
                "filterDataByTopic": {
                    topic: {
                        "groupFilterData": {g: d.to_dict() for g, d in groups.items()},
                        "topic": topic,
                    }
                    for topic, groups in self._by_topic.items()
                }
            }
        if pretty:
            return json.dumps(doc, ensure_ascii=False, indent="\t", separators=(",", ":"))
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))

    def decode(self, text: str) -> None:
        """Load persisted content; raises ValueError when it is not valid JSON of the right shape."""
        # imported on first use: the SQL92 compiler (lark) stays off start-up (start-up time)
        from broker.filter.consumer_filter_data import ConsumerFilterData
        from broker.filter.expression import compile_expression
        from broker.filter.selector_parser import FilterParseError

        doc = json.loads(text)
        if not isinstance(doc, dict):
            raise ValueError("consumerFilter.json: not a JSON object")
        raw = doc.get("filterDataByTopic")
        if raw is None:
            return
        if not isinstance(raw, dict):
            raise ValueError("consumerFilter.json: filterDataByTopic is not an object")
        now = self._clock()
        loaded: dict[str, dict[str, ConsumerFilterData]] = {}
        for topic, by_topic in raw.items():
            if not isinstance(by_topic, dict):
                continue
            groups_raw = by_topic.get("groupFilterData") or {}
            if not isinstance(groups_raw, dict):
                continue
            groups: dict[str, ConsumerFilterData] = {}
            for group, entry in groups_raw.items():
                data = ConsumerFilterData.from_dict(entry)
                if data is None:
                    continue
                try:
                    if not ExpressionType.is_tag_type(data.expressionType):
                        data.compiledExpression = compile_expression(data.expressionType, data.expression)
                except FilterParseError as e:
                    log.error("persisted filter of %s on %s does not compile: %s", group, topic, e)
                if not self.bloom_filter.is_valid(data.bloomFilterData):
                    # bit positions were made for another bloom size: none of the old data is usable
                    log.info("bloom filter changed, ignoring persisted consumer filters")
                    return
                if data.deadTime == 0:
                    # nobody has re-registered since the restart yet
                    dead = now - _LOAD_DEAD_AGO_MS
                    data.deadTime = data.bornTime if dead <= data.bornTime else dead
                groups[group] = data
            loaded[topic] = groups
        with self._lock:
            self._by_topic = loaded

    def load(self) -> bool:
        """Read the config file (falling back to ``.bak``); a missing file is an empty manager."""
        if not self.config_file_path:
            return True
        text = read_file_with_bak(self.config_file_path)
        if text is None:
            return True
        try:
            self.decode(text)
            return True
        except (ValueError, TypeError) as e:
            log.error("cannot load %s: %s; trying the backup", self.config_file_path, e)
        try:
            with open(self.config_file_path + ".bak", encoding="utf-8") as f:
                bak = f.read()
        except OSError:
            return False
        try:
            if bak.strip():
                self.decode(bak)
            return True
        except (ValueError, TypeError) as e:
            log.error("cannot load %s.bak: %s", self.config_file_path, e)
            return False

    def persist(self) -> None:
        """Write the config file atomically (previous content kept as ``.bak``)."""
        if not self.config_file_path:
            return
        write_file_atomic(self.config_file_path, self.encode(pretty=True))

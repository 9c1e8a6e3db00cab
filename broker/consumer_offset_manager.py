"""ConsumerOffsetManager: ``topic@group`` -> {queueId: next offset}, persisted as ``config/consumerOffset.json``."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from broker.config_manager import ConfigManager, pretty_json

__all__ = ["ConsumerOffsetManager", "TOPIC_GROUP_SEPARATOR"]

log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetManager(ConfigManager):
    """Committed consumer offsets. Callers validate topic and group names first."""

    def __init__(self, path: str):
        super().__init__(path)
        self.table: dict[str, dict[int, int]] = {}
        self._dirty = False

    @staticmethod
    def key(topic: str, group: str) -> str:
        return topic + TOPIC_GROUP_SEPARATOR + group

    def commit_offset(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        k = topic + TOPIC_GROUP_SEPARATOR + group
        m = self.table.get(k)
        if m is None:
            m = self.table[k] = {}
        m[queue_id] = offset
        self._dirty = True

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when none."""
        m = self.table.get(topic + TOPIC_GROUP_SEPARATOR + group)
        if m is None:
            return -1
        return m.get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(topic + TOPIC_GROUP_SEPARATOR + group, {}))

    def _topic_groups(self) -> Iterator[tuple[str, str]]:
        """(topic, group) of every key of the table (``topic@group``)."""
        for k in self.table:
            t, _, g = k.rpartition(TOPIC_GROUP_SEPARATOR)
            yield t, g

    def which_topic_by_consumer(self, group: str) -> set[str]:
        return {t for t, g in self._topic_groups() if g == group}

    def topics_by_group(self) -> dict[str, set[str]]:
        """group -> its topics, in one pass (which_topic_by_consumer per group is a pass each)."""
        out: dict[str, set[str]] = {}
        for t, g in self._topic_groups():
            out.setdefault(g, set()).add(t)
        return out

    def which_group_by_topic(self, topic: str) -> set[str]:
        return {g for t, g in self._topic_groups() if t == topic}

    def remove_offset(self, group: str) -> None:
        """Drop every topic of ``group`` (DELETE_SUBSCRIPTIONGROUP with removeOffset)."""
        for k in [k for k in self.table if k.rpartition(TOPIC_GROUP_SEPARATOR)[2] == group]:
            del self.table[k]
        self._dirty = True

    def remove_topic(self, topic: str) -> None:
        for k in [k for k in self.table if k.rpartition(TOPIC_GROUP_SEPARATOR)[0] == topic]:
            del self.table[k]
        self._dirty = True

    def clone_offset(self, src_group: str, dest_group: str, topic: str) -> None:
        m = self.table.get(self.key(topic, src_group))
        if m is not None:
            self.table[self.key(topic, dest_group)] = dict(m)
            self._dirty = True

    def persist_if_dirty(self) -> None:
        if self._dirty:
            self._dirty = False
            self.persist()

    def encode(self) -> str:
        return pretty_json({"offsetTable": self.table})

    def encode_wire(self) -> bytes:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.admin import ConsumerOffsetSerializeWrapper

        return ConsumerOffsetSerializeWrapper(offsetTable=self.table).to_json()

    def decode(self, tree: Any) -> None:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.admin import ConsumerOffsetSerializeWrapper

        self.table.update(ConsumerOffsetSerializeWrapper.from_obj(tree).offsetTable)

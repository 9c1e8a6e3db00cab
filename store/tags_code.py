"""The consume-queue tag code of a record (RocketMQ's CommitLog computes it as it dispatches)."""

from __future__ import annotations

from common.message import MessageConst
from common.mixall import SCHEDULE_TOPIC
from common.util import java_string_hash

__all__ = ["TagsCodeCalculator"]


class TagsCodeCalculator:
    """The consume-queue tag code of a record: Java hash of TAGS, or the delivery time in SCHEDULE_TOPIC_XXXX."""

    __slots__ = ("_cache", "_delays")

    def __init__(self, delay_levels_ms: list[int]) -> None:
        self._cache: dict[str, int] = {}
        self._delays = delay_levels_ms

    @property
    def cache(self) -> dict[str, int]:
        """The tag hash cache (the put path reads it directly; misses go through :meth:`tags_hash`)."""
        return self._cache

    def tags_hash(self, tags: str) -> int:
        h = self._cache.get(tags)
        if h is None:
            h = java_string_hash(tags)
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[tags] = h
        return h

    def __call__(self, topic: str, props: dict[str, str], store_timestamp: int) -> int:
        return self.of(topic, props.get(MessageConst.TAGS), props.get(MessageConst.DELAY), store_timestamp)

    def of(self, topic: str, tags: str | None, delay: str | None, store_timestamp: int) -> int:
        """The tag code from the TAGS and DELAY property values (None or "" when absent)."""
        if delay and topic == SCHEDULE_TOPIC:
            try:
                level = int(delay)
            except ValueError:
                level = 0
            if level > 0 and self._delays:
                level = min(level, len(self._delays))
                return store_timestamp + self._delays[level - 1]
        if tags:
            return self.tags_hash(tags)
        return 0

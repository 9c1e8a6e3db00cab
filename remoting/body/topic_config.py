"""TopicConfig, DataVersion and TopicConfigSerializeWrapper (the broker's topic table)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from common.perm import PERM_READ, PERM_WRITE
from common.util import now_ms
from remoting.body import KEYED, BodyError, JsonBody, absent

__all__ = ["TopicFilterType", "DataVersion", "TopicConfig", "TopicConfigSerializeWrapper"]


class TopicFilterType(enum.StrEnum):
    """How tags are filtered for a topic; written by name."""

    SINGLE_TAG = "SINGLE_TAG"
    MULTI_TAG = "MULTI_TAG"

    @classmethod
    def parse(cls, v: Any) -> TopicFilterType:
        if v is None:
            return cls.SINGLE_TAG
        try:
            return cls(str(v))
        except ValueError:
            raise BodyError(f"unknown topicFilterType {v!r}") from None


@dataclass(slots=True, eq=False)
class DataVersion(JsonBody):
    """Version stamp of a config table: ``{"counter":n,"timestamp":ms}``.

    Equal when timestamp and counter are equal (as Java's equals); the 5.x
    ``stateVersion`` is carried when present.
    """

    timestamp: int = field(default_factory=now_ms, metadata=absent(int))
    counter: int = 0
    stateVersion: int | None = None

    def next_version(self) -> None:
        """Bump: new timestamp, counter + 1."""
        self.timestamp = now_ms()
        self.counter += 1

    def assign_from(self, other: DataVersion) -> None:
        self.timestamp = other.timestamp
        self.counter = other.counter
        self.stateVersion = other.stateVersion

    def copy(self) -> DataVersion:
        return DataVersion(self.timestamp, self.counter, self.stateVersion)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DataVersion):
            return NotImplemented
        return self.timestamp == other.timestamp and self.counter == other.counter

    def __hash__(self) -> int:
        return hash((self.timestamp, self.counter))


_LINE_SEPARATOR = " "


@dataclass(slots=True)
class TopicConfig(JsonBody):
    """One topic of a broker; defaults are RocketMQ's (16/16 queues, perm RW)."""

    topicName: str = field(metadata=KEYED)
    readQueueNums: int = 16
    writeQueueNums: int = 16
    perm: int = PERM_READ | PERM_WRITE
    topicFilterType: TopicFilterType = TopicFilterType.SINGLE_TAG
    topicSysFlag: int = 0
    order: bool = False
    attributes: dict[str, str] | None = None  # 5.x only

    def encode_line(self) -> str:
        """The compressed-register line: ``name read write perm filterType`` (space-separated)."""
        return _LINE_SEPARATOR.join(
            (
                self.topicName,
                str(self.readQueueNums),
                str(self.writeQueueNums),
                str(self.perm),
                self.topicFilterType.value,
            )
        )

    @classmethod
    def decode_line(cls, line: str) -> TopicConfig:
        """Parse :meth:`encode_line` output; topicSysFlag and order are not carried."""
        parts = line.split(_LINE_SEPARATOR)
        if len(parts) < 5:
            raise BodyError(f"bad topic config line {line!r}")
        try:
            return cls(
                topicName=parts[0],
                readQueueNums=int(parts[1]),
                writeQueueNums=int(parts[2]),
                perm=int(parts[3]),
                topicFilterType=TopicFilterType.parse(parts[4]),
            )
        except ValueError:
            raise BodyError(f"bad topic config line {line!r}") from None


@dataclass(slots=True)
class TopicConfigSerializeWrapper(JsonBody):
    """``{"dataVersion":DataVersion,"topicConfigTable":{topic:TopicConfig}}``."""

    topicConfigTable: dict[str, TopicConfig] = field(default_factory=dict)
    dataVersion: DataVersion = field(default_factory=DataVersion)

"""ConsumerFilterData: the compiled SQL92 filter of one (topic, consumer group).

Persisted in consumerFilter.json with the fastjson field names (the compiled
expression is transient and rebuilt on load).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker.filter.bloom_filter import BloomFilterData
from broker.filter.expression import Expression, compile_expression
from common.filter import ExpressionType
from common.util import now_ms

__all__ = ["ConsumerFilterData", "build_consumer_filter_data"]


@dataclass(slots=True, eq=False)
class ConsumerFilterData:
    """Filter of ``consumerGroup`` on ``topic``.

    ``deadTime >= bornTime`` means dead (the group stopped subscribing); dead
    data is kept for ``filterDataCleanTimeSpan`` then removed.
    ``clientVersion`` is the subscription's ``subVersion``.
    """

    consumerGroup: str
    topic: str
    expression: str | None
    expressionType: str | None
    bornTime: int = 0
    deadTime: int = 0
    clientVersion: int = 0
    bloomFilterData: BloomFilterData | None = None
    compiledExpression: Expression | None = None

    def is_dead(self) -> bool:
        return self.deadTime >= self.bornTime

    def how_long_after_death(self, now: int) -> int:
        """Milliseconds since death, -1 when alive."""
        return now - self.deadTime if self.is_dead() else -1

    def is_msg_in_live(self, msg_store_time: int) -> bool:
        """The message was stored after this filter existed (so its bitmap saw it)."""
        return msg_store_time > self.bornTime

    def same_filter(self, other: ConsumerFilterData) -> bool:
        """Same persisted content (Java's reflection equals, minus the compiled form)."""
        return self.to_dict() == other.to_dict()

    def to_dict(self) -> dict[str, Any]:
        """fastjson shape: alphabetical keys, ``dead`` from isDead(), nulls omitted."""
        d: dict[str, Any] = {}
        if self.bloomFilterData is not None:
            d["bloomFilterData"] = self.bloomFilterData.to_dict()
        d["bornTime"] = self.bornTime
        d["clientVersion"] = self.clientVersion
        if self.consumerGroup is not None:
            d["consumerGroup"] = self.consumerGroup
        d["dead"] = self.is_dead()
        d["deadTime"] = self.deadTime
        if self.expression is not None:
            d["expression"] = self.expression
        if self.expressionType is not None:
            d["expressionType"] = self.expressionType
        if self.topic is not None:
            d["topic"] = self.topic
        return d

    @classmethod
    def from_dict(cls, d: Any) -> ConsumerFilterData | None:
        """Read one persisted entry (``dead`` is derived, so ignored); None if not an object."""
        if not isinstance(d, dict):
            return None
        return cls(
            consumerGroup=str(d.get("consumerGroup") or ""),
            topic=str(d.get("topic") or ""),
            expression=d.get("expression"),
            expressionType=d.get("expressionType"),
            bornTime=int(d.get("bornTime") or 0),
            deadTime=int(d.get("deadTime") or 0),
            clientVersion=int(d.get("clientVersion") or 0),
            bloomFilterData=BloomFilterData.from_dict(d.get("bloomFilterData")),
        )


def build_consumer_filter_data(
    topic: str,
    consumer_group: str,
    expression: str,
    expression_type: str,
    client_version: int,
    *,
    born_time: int | None = None,
) -> ConsumerFilterData | None:
    """ConsumerFilterManager.build: None for TAG subscriptions, else compiled filter data.

    Raises FilterParseError when the expression does not compile (the pull
    path answers SUBSCRIPTION_PARSE_FAILED with that message). Bloom data is
    not set here.
    """
    if ExpressionType.is_tag_type(expression_type):
        return None
    compiled = compile_expression(expression_type, expression)
    return ConsumerFilterData(
        consumerGroup=consumer_group,
        topic=topic,
        expression=expression,
        expressionType=expression_type,
        bornTime=now_ms() if born_time is None else born_time,
        deadTime=0,
        clientVersion=client_version,
        compiledExpression=compiled,
    )

"""HEART_BEAT body: HeartbeatData with ProducerData, ConsumerData and SubscriptionData."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from common.filter import SUB_ALL
from common.filter import SubscriptionData as _CommonSubscriptionData
from remoting.body import REQUIRED, BodyError, JsonBody, as_bool, as_dict, as_int, as_list, as_str, decoded_by

__all__ = ["SubscriptionData", "ConsumerData", "ProducerData", "HeartbeatData", "SUB_ALL"]


@dataclass(slots=True)
class SubscriptionData(_CommonSubscriptionData, JsonBody):
    """The shared :class:`common.filter.SubscriptionData` with the remoting body protocol.

    No fields of its own: the bean (fields, JSON shape) lives in common.filter, which the
    broker's filter engine and the client also use; this adds ``to_obj``/``from_obj`` with
    :class:`BodyError` on bad input, and the bytes ``to_json``/``from_json`` of :class:`JsonBody`.
    """

    # JsonBody's bytes codec, not common's str one: every remoting body encodes to bytes.
    to_json = JsonBody.to_json
    from_json = JsonBody.__dict__["from_json"]

    def to_obj(self) -> dict:
        return self.to_dict()

    @classmethod
    def from_obj(cls, obj: Any) -> SubscriptionData:
        obj = as_dict(obj, "subscriptionData")
        topic = as_str(obj.get("topic"), None)
        if topic is None:
            raise BodyError("subscriptionData without topic")
        return cls(
            topic=topic,
            subString=as_str(obj.get("subString"), SUB_ALL) or "",
            expressionType=as_str(obj.get("expressionType"), "TAG") or "TAG",
            tagsSet=_dedup(as_str(t, "") for t in as_list(obj.get("tagsSet"), "tagsSet")),
            codeSet=_dedup(as_int(c, 0, "codeSet") for c in as_list(obj.get("codeSet"), "codeSet")),
            subVersion=as_int(obj.get("subVersion"), 0, "subVersion"),
            classFilterMode=as_bool(obj.get("classFilterMode"), False),
        )

    def same_as(self, other: _CommonSubscriptionData) -> bool:
        """Equality as Java's SubscriptionData.equals (subVersion excluded)."""
        return (
            self.topic == other.topic
            and self.subString == other.subString
            and self.expressionType == other.expressionType
            and set(self.tagsSet) == set(other.tagsSet)
            and set(self.codeSet) == set(other.codeSet)
            and self.classFilterMode == other.classFilterMode
        )


def _dedup(items) -> list:
    # tagsSet / codeSet are Java sets: keep the first of duplicates, in order
    out: list = []
    for it in items:
        if it not in out:
            out.append(it)
    return out


# Java enum constants in declaration order: fastjson reads a JSON number as the
# ordinal, and the C++ client sends these three fields as numbers.
CONSUME_TYPES = ("CONSUME_ACTIVELY", "CONSUME_PASSIVELY")
MESSAGE_MODELS = ("BROADCASTING", "CLUSTERING")
CONSUME_FROM_WHERE = (
    "CONSUME_FROM_LAST_OFFSET",
    "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
    "CONSUME_FROM_MIN_OFFSET",
    "CONSUME_FROM_MAX_OFFSET",
    "CONSUME_FROM_FIRST_OFFSET",
    "CONSUME_FROM_TIMESTAMP",
)


def _enum_name(value: Any, names: tuple[str, ...], default: str) -> str:
    """An enum field as its Java name: JSON integers are ordinals, names match case-insensitively.

    fastjson does both; the Go client writes "BroadCasting" / "Clustering".
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value < len(names):
            return names[value]
        raise BodyError(f"enum ordinal {value} out of range for {names[0]}...")
    text = as_str(value, default)
    upper = text.upper()
    return upper if upper in names else text


def _enum_field(names: tuple[str, ...], default: str) -> dict:
    return decoded_by(lambda v: _enum_name(v, names, default))


@dataclass(slots=True)
class ConsumerData(JsonBody):
    """A consumer group as one client reports it; enums may come as names or, from the C++ client, as ordinals."""

    groupName: str = field(metadata=REQUIRED)
    consumeType: str = field(default="CONSUME_PASSIVELY", metadata=_enum_field(CONSUME_TYPES, "CONSUME_PASSIVELY"))
    messageModel: str = field(default="CLUSTERING", metadata=_enum_field(MESSAGE_MODELS, "CLUSTERING"))
    consumeFromWhere: str = field(
        default="CONSUME_FROM_LAST_OFFSET", metadata=_enum_field(CONSUME_FROM_WHERE, "CONSUME_FROM_LAST_OFFSET")
    )
    subscriptionDataSet: list[SubscriptionData] = field(default_factory=list)
    unitMode: bool = False


@dataclass(slots=True)
class ProducerData(JsonBody):
    """``{"groupName":s}``."""

    groupName: str = field(metadata=REQUIRED)


@dataclass(slots=True)
class HeartbeatData(JsonBody):
    """``{"clientID":s,"consumerDataSet":[...],"producerDataSet":[...]}``."""

    clientID: str = field(metadata=REQUIRED)
    producerDataSet: list[ProducerData] = field(default_factory=list)
    consumerDataSet: list[ConsumerData] = field(default_factory=list)

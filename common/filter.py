"""Subscription expressions shared by the broker and the client (RocketMQ FilterAPI).

A consumer subscribes to a topic with an expression of a given type:

* ``TAG`` (the default): ``"*"``, empty or null means every message, otherwise
  tags joined by ``||``. The broker only compares Java hash codes of tags
  (stored per consume-queue unit); consumers re-check the tag strings.
* ``SQL92``: a boolean expression over message properties, compiled and
  evaluated by the broker (broker/filter).

:class:`SubscriptionData` is the bean the Java client sends in heartbeats
(``HeartbeatData.consumerDataSet[].subscriptionDataSet``) and the broker keeps
per consumer group; :meth:`SubscriptionData.to_json` / ``from_json`` use the
exact fastjson field names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from common.util import java_string_hash, now_ms

__all__ = [
    "ExpressionType",
    "SUB_ALL",
    "SubscriptionParseError",
    "java_trim",
    "parse_tags",
    "build_subscription_data",
    "SubscriptionData",
]

SUB_ALL = "*"

# Java String.trim() removes every char <= U+0020 at both ends (not Unicode whitespace).
_JAVA_TRIM_CHARS = "".join(chr(i) for i in range(0x21))


class ExpressionType:
    """Names of the subscription expression languages (``expressionType`` on the wire)."""

    TAG = "TAG"
    SQL92 = "SQL92"

    @staticmethod
    def is_tag_type(expression_type: str | None) -> bool:
        """True for ``None``, ``""`` and ``"TAG"`` (as RocketMQ's ExpressionType.isTagType)."""
        return expression_type is None or expression_type == "" or expression_type == ExpressionType.TAG


class SubscriptionParseError(ValueError):
    """A subscription string cannot be turned into SubscriptionData."""


def java_trim(s: str) -> str:
    """Java ``String.trim()``: strip chars <= U+0020 from both ends."""
    return s.strip(_JAVA_TRIM_CHARS)


def parse_tags(sub_string: str | None) -> tuple[list[str], list[int]]:
    """Split a TAG expression into ``(tags, hash codes)``.

    ``"*"``, ``""`` and ``None`` give ``([], [])``, meaning "all". Otherwise the
    string is split on ``||``, each part trimmed, empty parts dropped and
    duplicates removed (the Java side keeps them in sets). A string made only
    of ``||`` separators is rejected, as Java's ``split`` yields no part at all.
    """
    if sub_string is None or sub_string == SUB_ALL or sub_string == "":
        return [], []
    parts = sub_string.split("||")
    # Java's String.split drops trailing empty strings; nothing left => error.
    while parts and parts[-1] == "":
        parts.pop()
    if not parts:
        raise SubscriptionParseError(f"subString split error: {sub_string!r}")
    tags: list[str] = []
    codes: list[int] = []
    for part in parts:
        tag = java_trim(part)
        if tag and tag not in tags:
            tags.append(tag)
            code = java_string_hash(tag)
            if code not in codes:
                codes.append(code)
    return tags, codes


@dataclass(slots=True)
class SubscriptionData:
    """One (topic, expression) subscription of a consumer group.

    Field names are the Java bean's; ``tagsSet``/``codeSet`` are Java sets,
    kept here as duplicate-free lists in insertion order.
    """

    topic: str = ""
    subString: str = SUB_ALL
    tagsSet: list[str] = field(default_factory=list)
    codeSet: list[int] = field(default_factory=list)
    subVersion: int = field(default_factory=now_ms)
    expressionType: str = ExpressionType.TAG
    classFilterMode: bool = False

    def is_sub_all(self) -> bool:
        """True when a TAG subscription takes every message (``"*"``)."""
        return ExpressionType.is_tag_type(self.expressionType) and self.subString == SUB_ALL

    def to_dict(self) -> dict[str, Any]:
        """The fastjson bean shape (alphabetical keys, as fastjson writes them)."""
        return {
            "classFilterMode": self.classFilterMode,
            "codeSet": list(self.codeSet),
            "expressionType": self.expressionType,
            "subString": self.subString,
            "subVersion": self.subVersion,
            "tagsSet": list(self.tagsSet),
            "topic": self.topic,
        }

    def to_json(self) -> str:
        """Compact JSON exactly as the Java client writes it in a heartbeat."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SubscriptionData:
        """Build from a decoded JSON object; unknown keys are ignored, missing ones defaulted."""
        if not isinstance(d, Mapping):
            raise SubscriptionParseError("SubscriptionData must be a JSON object")
        try:
            tags = d.get("tagsSet") or []
            codes = d.get("codeSet") or []
            expression_type = d.get("expressionType")
            sub_string = d.get("subString")
            sub_version = d.get("subVersion")
            return cls(
                topic=str(d.get("topic") or ""),
                subString=SUB_ALL if sub_string is None else str(sub_string),
                tagsSet=_dedup(str(t) for t in tags),
                codeSet=_dedup(_as_int32(c) for c in codes),
                subVersion=now_ms() if sub_version is None else int(sub_version),
                expressionType=ExpressionType.TAG if expression_type is None else str(expression_type),
                classFilterMode=bool(d.get("classFilterMode", False)),
            )
        except (TypeError, ValueError) as e:
            raise SubscriptionParseError(f"bad SubscriptionData: {e}") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> SubscriptionData:
        """Parse the JSON form (see :meth:`to_json`)."""
        try:
            d = json.loads(text)
        except ValueError as e:
            raise SubscriptionParseError(f"bad SubscriptionData JSON: {e}") from None
        return cls.from_dict(d)


def _as_int32(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        v = int(v)
    if not -(2**31) <= v < 2**31:
        raise ValueError(f"tag code {v} is not a 32-bit int")
    return v


def _dedup(items) -> list:
    out: list = []
    seen: set = set()
    for it in items:
        if it not in seen:
            seen.add(it)
            out.append(it)
    return out


def build_subscription_data(
    topic: str, sub_string: str | None, expression_type: str | None = ExpressionType.TAG
) -> SubscriptionData:
    """FilterAPI.build: SubscriptionData for ``topic`` subscribed with ``sub_string``.

    TAG (or ``None``/``""``): tags and codes are parsed, ``"*"``/empty means all.
    Any other type (SQL92): the expression is kept as is and must not be empty;
    it is compiled by the broker, not here.
    """
    if ExpressionType.is_tag_type(expression_type):
        tags, codes = parse_tags(sub_string)
        sub = SUB_ALL if (sub_string is None or sub_string == "" or sub_string == SUB_ALL) else sub_string
        return SubscriptionData(topic=topic, subString=sub, tagsSet=tags, codeSet=codes)
    if not sub_string:
        raise SubscriptionParseError(f"Expression can't be null! {expression_type}")
    return SubscriptionData(topic=topic, subString=sub_string, expressionType=expression_type)

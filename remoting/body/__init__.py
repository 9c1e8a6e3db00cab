"""Command bodies: one dataclass per fastjson bean, field names exactly as Java's.

Every body class has ``to_obj()`` (a JSON tree with the bean's fields in
alphabetical order and ``None`` fields omitted, as fastjson writes beans),
``from_obj(tree)`` (ignores unknown keys, defaults missing ones), and from
:class:`JsonBody` ``to_json(standard=False) -> bytes`` and
``from_json(data) -> instance``. See :mod:`remoting.fastjson` for the two
JSON styles.

NameServer beans: :mod:`.topic_config` (DataVersion, TopicConfig,
TopicConfigSerializeWrapper), :mod:`.register_broker` (RegisterBrokerBody,
plain and compressed), :mod:`.route` (QueueData, BrokerData, TopicRouteData),
:mod:`.cluster` (ClusterInfo, TopicList), :mod:`.kv` (KVTable,
KVConfigSerializeWrapper).
"""

from __future__ import annotations

from typing import Any, TypeVar

from remoting import fastjson

__all__ = ["BodyError", "JsonBody", "as_int", "as_bool", "as_str", "as_dict", "as_list"]

T = TypeVar("T", bound="JsonBody")


class BodyError(ValueError):
    """A body does not decode into the expected bean; the message says why."""


class JsonBody:
    """Mixin giving a bean class ``to_json``/``from_json`` on top of ``to_obj``/``from_obj``."""

    __slots__ = ()

    def to_obj(self) -> dict:  # pragma: no cover - overridden
        raise NotImplementedError

    @classmethod
    def from_obj(cls: type[T], obj: Any) -> T:  # pragma: no cover - overridden
        raise NotImplementedError

    def to_json(self, standard: bool = False) -> bytes:
        """Encode as fastjson's default style, or the standard style when ``standard``."""
        return fastjson.dumps(self.to_obj(), standard=standard)

    @classmethod
    def from_json(cls: type[T], data: bytes | bytearray | memoryview | str | None) -> T:
        """Decode a body; raises :class:`BodyError` naming the bean when it does not fit."""
        if data is None or len(data) == 0:
            raise BodyError(f"{cls.__name__} body is empty")
        try:
            tree = fastjson.loads(data)
        except fastjson.JSONDecodeError as e:
            raise BodyError(f"{cls.__name__} body is not JSON: {e}") from None
        return cls.from_obj(tree)


# Tolerant field readers: Java's fastjson converts "16" to int and 1 to true, so do we.


def as_int(v: Any, default: int, name: str = "") -> int:
    if v is None:
        return default
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        try:
            return int(v.strip(), 10)
        except ValueError:
            pass
    raise BodyError(f"field {name or '?'} is not an integer: {v!r}")


def as_bool(v: Any, default: bool) -> bool:
    if v is None:
        return default
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v != 0
    return str(v).strip().lower() == "true"


def as_str(v: Any, default: str | None) -> str | None:
    if v is None:
        return default
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def as_dict(v: Any, name: str) -> dict:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise BodyError(f"field {name} is not an object")
    return v


def as_list(v: Any, name: str) -> list:
    if v is None:
        return []
    if not isinstance(v, list):
        raise BodyError(f"field {name} is not an array")
    return v

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

A bean declares its fields only: :class:`JsonBody` derives ``to_obj``/``from_obj``
from the dataclass fields and their types (str, int, bool, float, enums, other
beans, ``list[X]``, ``dict[K, V]``, ``X | None``), once per class. A field that
deviates says so in its metadata: :data:`REQUIRED` (a missing one is a
:class:`BodyError`), :data:`KEYED` (required, but a bean stored as a map value
takes it from its key), :func:`absent` (what a missing one decodes to when that is
not the dataclass default) and :func:`decoded_by` (a reader of its own).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from remoting import fastjson

__all__ = [
    "BodyError",
    "JsonBody",
    "REQUIRED",
    "KEYED",
    "absent",
    "decoded_by",
    "as_int",
    "as_bool",
    "as_str",
    "as_float",
    "as_dict",
    "as_list",
]

T = TypeVar("T", bound="JsonBody")


class BodyError(ValueError):
    """A body does not decode into the expected bean; the message says why."""


class JsonBody:
    """Base of a bean dataclass: ``to_obj``/``from_obj`` from its fields, ``to_json``/``from_json`` on top."""

    __slots__ = ()

    def to_obj(self) -> dict:
        """The bean as a JSON tree: keys in alphabetical order, ``None`` fields left out (as fastjson)."""
        out: dict[str, Any] = {}
        for name, enc in _plan(type(self)).encoders:
            v = getattr(self, name)
            if v is not None:
                out[name] = v if enc is None else enc(v)
        return out

    @classmethod
    def from_obj(cls: type[T], obj: Any, key: str | None = None) -> T:
        """Read a bean from a JSON tree: unknown keys ignored, missing ones defaulted.

        ``key`` is the map key the bean stands under, for a :data:`KEYED` field.
        """
        plan = _plan(cls)
        obj = as_dict(obj, plan.bean)
        kwargs: dict[str, Any] = {}
        for name, dec, miss in plan.decoders:
            raw = obj.get(name)
            if raw is not None:
                kwargs[name] = dec(raw)
            elif miss is not None:
                kwargs[name] = miss(key)
        return cls(**kwargs)

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


# -- field metadata --------------------------------------------------------------------------

REQUIRED = {"required": True}
"""A bean without this field is refused (``<bean> without <field>``)."""
KEYED = {"required": True, "keyed": True}
"""Required, but a bean read as a map value takes the map key for it (topicName, groupName)."""


def absent(make: Callable[[], Any]) -> dict:
    """Metadata: a missing field decodes to ``make()`` rather than the dataclass default."""
    return {"absent": make}


def decoded_by(read: Callable[[Any], Any]) -> dict:
    """Metadata: the field's JSON value (never None) is read by ``read``."""
    return {"decode": read}


# -- the per-class plan ------------------------------------------------------------------------

Encoder = Callable[[Any], Any] | None  # None: the value is its own JSON
Decoder = Callable[[Any], Any]  # total: None gives the type's zero (a missing list element, key...)


class _Plan:
    __slots__ = ("bean", "encoders", "decoders", "keyed")

    def __init__(self, cls: type) -> None:
        self.bean = _bean_name(cls.__name__)
        hints = typing.get_type_hints(cls)
        encoders: list[tuple[str, Encoder]] = []
        decoders: list[tuple[str, Decoder, Callable[[str | None], Any] | None]] = []
        self.keyed = False
        for f in dataclasses.fields(cls):
            tp, optional = _unwrap(hints[f.name])
            encoders.append((f.name, _encoder(tp)))
            meta = f.metadata
            dec = meta.get("decode") or _decoder(tp, f.name)
            decoders.append((f.name, dec, self._missing(f, meta, dec, optional)))
        encoders.sort(key=lambda e: e[0])
        self.encoders = tuple(encoders)
        self.decoders = tuple(decoders)

    def _missing(self, f: dataclasses.Field, meta: Any, dec: Decoder, optional: bool) -> Any:
        """What a missing field becomes: None = the dataclass default, else a function of the map key."""
        if meta.get("required"):
            bean, name, keyed = self.bean, f.name, bool(meta.get("keyed"))
            self.keyed = self.keyed or keyed

            def required(key: str | None) -> Any:
                if keyed and key is not None:
                    return key
                raise BodyError(f"{bean} without {name}")

            return required
        if "absent" in meta:
            make = meta["absent"]
            return lambda _key: make()
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            return None
        return (lambda _key: None) if optional else (lambda _key: dec(None))


def _bean_name(cls_name: str) -> str:
    """``QueueData`` -> ``queueData``, ``KVTable`` -> ``kvTable``: the name errors call a bean by."""
    caps = len(cls_name) - len(cls_name.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    cut = max(1, caps - 1) if caps < len(cls_name) else caps
    return cls_name[:cut].lower() + cls_name[cut:]


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _Plan(cls)
    return plan


def _unwrap(tp: Any) -> tuple[Any, bool]:
    """(type, optional?) of ``X | None``."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0], True
    return tp, False


def _is_bean(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, JsonBody)


def _encoder(tp: Any) -> Encoder:
    origin = typing.get_origin(tp)
    if origin is list:
        item = _encoder(typing.get_args(tp)[0])
        return list if item is None else (lambda v: [item(e) for e in v])
    if origin is dict:
        kt, vt = typing.get_args(tp)
        # a bean key (MessageQueue) goes out as an object key, as fastjson writes it
        ek = (lambda k: fastjson.object_key(k.to_obj())) if _is_bean(kt) else None
        ev = _encoder(vt)
        if ek is None and ev is None:
            return dict
        if ek is None:
            return lambda v: {k: ev(x) for k, x in v.items()}
        if ev is None:
            return lambda v: {ek(k): x for k, x in v.items()}
        return lambda v: {ek(k): ev(x) for k, x in v.items()}
    if _is_bean(tp):
        return tp.to_obj
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return lambda v: v.value
    return None


def _str_key(k: Any) -> str:
    return str.__str__(k) if isinstance(k, str) else str(k)


def _decoder(tp: Any, name: str) -> Decoder:
    origin = typing.get_origin(tp)
    if origin is list:
        item = _decoder(typing.get_args(tp)[0], name)
        return lambda v: [item(e) for e in as_list(v, name)]
    if origin is dict:
        kt, vt = typing.get_args(tp)
        dk: Decoder = _str_key if kt is str else _decoder(kt, f"{name} key")
        if _is_bean(vt) and _plan(vt).keyed:
            return lambda v: {(k2 := dk(k)): vt.from_obj(x, k2) for k, x in as_dict(v, name).items()}
        dv = _decoder(vt, f"{name} value")
        return lambda v: {dk(k): dv(x) for k, x in as_dict(v, name).items()}
    if _is_bean(tp):
        return tp.from_obj
    if tp is str:
        return lambda v: as_str(v, "")
    if tp is bool:
        return lambda v: as_bool(v, False)
    if tp is int:
        return lambda v: as_int(v, 0, name)
    if tp is float:
        return lambda v: as_float(v, 0.0)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        def read_enum(v: Any) -> Any:
            try:
                return tp(str(v))
            except ValueError:
                raise BodyError(f"unknown {name} {v!r}") from None

        return read_enum
    raise TypeError(f"no JSON reader for field {name} of type {tp!r}")


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


def as_float(v: Any, default: float) -> float:
    """A JSON number (or numeric string) as float."""
    if v is None:
        return default
    try:
        return float(v)
    except (TypeError, ValueError):
        raise BodyError(f"not a number: {v!r}") from None


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

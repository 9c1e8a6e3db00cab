"""Typed custom headers: one small dataclass per RocketMQ request/response header.

A header travels in a RemotingCommand's ``extFields`` as string values. Values
are written as Java's ``toString`` writes them and read as Java parses them
(``Integer.parseInt``, ``Long.parseLong``, ``Boolean.parseBoolean``); some
clients send JSON numbers and booleans instead of strings, which are accepted.

Declare a header as::

    @header
    class GetRouteInfoRequestHeader(CommandHeader):
        topic: str                      # required (no default)
        acceptStandardJsonOnly: bool | None = None   # optional

Field names are the exact Java field names (they are the wire keys). A
required field missing from extFields raises :class:`HeaderError`, which the
server turns into an error response naming the field.

``@header`` makes a slotted class with dataclass behaviour (``__init__`` with
the fields in order and their defaults, ``__repr__``, ``__eq__``) without the
cost of ``dataclasses`` at import: a broker imports well over a hundred
headers, and generating every ``__init__`` up front took tens of milliseconds
of its start-up. Each ``__init__`` is compiled on the class's first use.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

__all__ = ["CommandHeader", "HeaderError", "header"]

T = TypeVar("T", bound="CommandHeader")

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


class HeaderError(ValueError):
    """A request header is missing a required field or has an unparsable value."""


def _base_type(tp: Any) -> tuple[type, bool]:
    """(concrete type, optional?) for an annotation like ``int | None``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0], True
    return tp, False


def _parse(name: str, typ: type, raw: Any) -> Any:
    if typ is str:
        return raw if isinstance(raw, str) else str(raw).lower() if isinstance(raw, bool) else str(raw)
    if typ is bool:
        if isinstance(raw, bool):
            return raw
        return str(raw).strip().lower() == "true"  # Boolean.parseBoolean
    if typ is int:
        if isinstance(raw, int) and not isinstance(raw, bool) and _LONG_MIN <= raw <= _LONG_MAX:
            return raw
        if isinstance(raw, float) and raw.is_integer() and _LONG_MIN <= raw <= _LONG_MAX:
            return int(raw)
        s = str(raw)
        # Java's parseInt/parseLong accept an optional sign and ASCII digits only.
        body = s[1:] if s[:1] in "+-" else s
        if not body or not body.isascii() or not body.isdigit():
            raise HeaderError(f"header field {name} is not a number: {s!r}")
        v = int(s, 10)
        if not _LONG_MIN <= v <= _LONG_MAX:  # Long.parseLong refuses it; the store could not write it
            raise HeaderError(f"header field {name} is out of range: {s!r}")
        return v
    if typ is float:
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise HeaderError(f"header field {name} is not a number: {raw!r}") from None
    raise HeaderError(f"header field {name} has unsupported type {typ!r}")


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class CommandHeader:
    """Base for header dataclasses; see the module docstring."""

    # (name, type, required) computed once per class by @header.
    _spec: ClassVar[tuple[tuple[str, type, bool], ...]] = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _defaults: ClassVar[dict[str, Any]] = {}

    @classmethod
    def from_ext_fields(cls: type[T], ext: Mapping[str, Any] | None) -> T:
        """Decode from a command's extFields; raises HeaderError on missing/bad fields."""
        ext = ext or {}
        kwargs: dict[str, Any] = {}
        for name, typ, required in cls._spec:
            raw = ext.get(name)
            if raw is None:
                if required:
                    raise HeaderError(f"the custom field <{name}> is null")
                continue
            kwargs[name] = _parse(name, typ, raw)
        return cls(**kwargs)

    def to_ext_fields(self) -> dict[str, str]:
        """Encode as extFields strings; None fields are omitted, as Java does."""
        out: dict[str, str] = {}
        for name, _typ, _req in self._spec:
            v = getattr(self, name)
            if v is not None:
                out[name] = _format(v)
        return out


_SIMPLE = {"str": str, "int": int, "bool": bool, "float": float}


def _annotation(ann: Any) -> tuple[type, bool] | None:
    """(type, optional?) of a field annotation without evaluating it when it is a plain
    ``str``/``int``/``bool``/``float`` (optionally ``| None``); None when it needs evaluating."""
    if isinstance(ann, str):
        text = ann.replace(" ", "")
        optional = text.endswith("|None")
        if optional:
            text = text[:-5]
        elif text.startswith("Optional[") and text.endswith("]"):
            text, optional = text[9:-1], True
        typ = _SIMPLE.get(text)
        return None if typ is None else (typ, optional)
    if isinstance(ann, type):
        return ann, False
    return _base_type(ann)


def _is_classvar(ann: Any) -> bool:
    if isinstance(ann, str):
        return ann.startswith(("ClassVar", "typing.ClassVar"))
    return ann is ClassVar or typing.get_origin(ann) is ClassVar


_MISSING = object()


def _compile_init(cls: type) -> Any:
    names = cls._fields
    defaults = cls._defaults
    params = ["self"]
    ns: dict[str, Any] = {}
    for name in names:
        if name in defaults:
            ns[f"_d_{name}"] = defaults[name]
            params.append(f"{name}=_d_{name}")
        else:
            params.append(name)
    body = "".join(f"    self.{n} = {n}\n" for n in names) or "    pass\n"
    exec(f"def __init__({', '.join(params)}):\n{body}", ns)  # noqa: S102 - our own field names
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _lazy_init(cls: type) -> Any:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        real = _compile_init(cls)
        cls.__init__ = real
        real(self, *args, **kwargs)

    return __init__


def _repr(self: Any) -> str:
    fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
    return f"{type(self).__qualname__}({fields})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return all(getattr(self, n) == getattr(other, n) for n in self._fields)


def header(cls: type[T]) -> type[T]:
    """Class decorator: a slotted class with dataclass-style ``__init__``/``__repr__``/``__eq__``
    over the annotated fields, and its field spec (name, type, required) for the codecs."""
    anns = cls.__dict__.get("__annotations__", {})
    own = cls.__dict__
    names = list(getattr(cls, "_fields", ()))
    defaults = dict(getattr(cls, "_defaults", {}))
    spec = list(getattr(cls, "_spec", ()))
    hints = None
    for name, ann in anns.items():
        if _is_classvar(ann):
            continue
        got = _annotation(ann)
        if got is None:
            if hints is None:
                hints = typing.get_type_hints(cls)
            got = _base_type(hints[name])
        typ, optional = got
        default = own.get(name, _MISSING)
        if default is _MISSING:
            if defaults:
                raise TypeError(f"non-default argument {name!r} follows default argument")
        else:
            defaults[name] = default
        if name in names:
            raise TypeError(f"field {name!r} declared twice in {cls.__qualname__}")
        names.append(name)
        spec.append((name, typ, default is _MISSING and not optional))
    ns = {k: v for k, v in own.items() if k not in names and k not in ("__dict__", "__weakref__")}
    ns["__slots__"] = tuple(n for n in names if n in anns)
    new = type(cls)(cls.__name__, cls.__bases__, ns)
    new.__qualname__ = cls.__qualname__
    new._fields = tuple(names)
    new._defaults = defaults
    new._spec = tuple(spec)
    new.__match_args__ = tuple(names)
    if "__init__" not in own:
        new.__init__ = _lazy_init(new)
    if "__repr__" not in own:
        new.__repr__ = _repr
    if "__eq__" not in own:
        new.__eq__ = _eq
        new.__hash__ = None  # as a dataclass with eq: mutable, unhashable
    return new

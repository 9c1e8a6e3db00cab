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
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

__all__ = ["CommandHeader", "HeaderError", "header"]

T = TypeVar("T", bound="CommandHeader")


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
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if isinstance(raw, float) and raw.is_integer():
            return int(raw)
        s = str(raw)
        # Java's parseInt/parseLong accept an optional sign and ASCII digits only.
        body = s[1:] if s[:1] in "+-" else s
        if not body or not body.isascii() or not body.isdigit():
            raise HeaderError(f"header field {name} is not a number: {s!r}")
        return int(s, 10)
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


def header(cls: type[T]) -> type[T]:
    """Class decorator: make ``cls`` a slotted dataclass and precompute its field spec."""
    dc = dataclasses.dataclass(slots=True)(cls)
    hints = typing.get_type_hints(dc)
    spec = []
    for f in dataclasses.fields(dc):
        typ, optional = _base_type(hints[f.name])
        required = (
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and not optional
        )
        spec.append((f.name, typ, required))
    dc._spec = tuple(spec)
    return dc

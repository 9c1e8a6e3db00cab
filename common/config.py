"""Java-properties config files mapped onto one typed dataclass per component.

RocketMQ reads ``key=value`` files and applies the same property set to every
config object of a process (BrokerConfig, NettyServerConfig, MessageStoreConfig,
...). Here each component declares a frozen-free ``@dataclass`` whose field
names are RocketMQ's case-sensitive key names; :func:`apply_properties` fills
it, naming the key when a value does not parse (RocketMQ silently ignores
those; a clear start-up error is kinder), and reports keys no component knows.

Fields that must never change over the wire (paths, ports, anything that runs
a program: CVE-2023-33246 / CVE-2023-37582) are declared with
``cfg(..., wire=False)``; :func:`update_from_wire` refuses them.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Iterable, Mapping
from typing import Any, get_type_hints

__all__ = [
    "ConfigError",
    "cfg",
    "parse_properties",
    "load_properties_file",
    "apply_properties",
    "unknown_keys",
    "update_from_wire",
    "to_properties",
    "format_properties",
    "has_line_break",
    "parse_value",
    "java_parse_bool",
]


class ConfigError(ValueError):
    """A config value is invalid; the message names the key."""


def cfg(default: Any = dataclasses.MISSING, *, wire: bool = True, factory: Any = dataclasses.MISSING):
    """Declare a config field. ``wire=False`` forbids changing it over the wire."""
    meta = {"wire": wire}
    if factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


# --------------------------------------------------------------------------
# Java properties syntax


def _unescape(s: str) -> str:
    out = []
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        nxt = s[i + 1]
        if nxt == "u" and i + 6 <= n:
            try:
                out.append(chr(int(s[i + 2 : i + 6], 16)))
                i += 6
                continue
            except ValueError:
                pass
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        i += 2
    return "".join(out)


def _logical_lines(text: str) -> Iterable[str]:
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if not pending else raw.lstrip(" \t\f")
        if not pending and (not line or line[0] in "#!"):
            continue
        # A line ending in an odd number of backslashes continues on the next.
        stripped = line
        n_bs = len(stripped) - len(stripped.rstrip("\\"))
        if n_bs % 2 == 1:
            pending += stripped[:-1]
            continue
        yield pending + stripped
        pending = ""
    if pending:
        yield pending


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (``key=value``, ``key: value``, ``key value``)."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        i = 0
        n = len(line)
        while i < n:
            c = line[i]
            if c == "\\":
                i += 2
                continue
            if c in "=: \t\f":
                break
            i += 1
        key = line[:i]
        j = i
        while j < n and line[j] in " \t\f":
            j += 1
        if j < n and line[j] in "=:":
            j += 1
            while j < n and line[j] in " \t\f":
                j += 1
        result[_unescape(key)] = _unescape(line[j:])
    return result


def load_properties_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a properties file; raises ConfigError with the path when unreadable."""
    try:
        with open(path, encoding="utf-8") as f:
            return parse_properties(f.read())
    except OSError as e:
        raise ConfigError(f"cannot read config file {os.fspath(path)}: {e.strerror}") from e


# --------------------------------------------------------------------------
# Typed values


_INT32 = (-(2**31), 2**31 - 1)


def java_parse_bool(s: str) -> bool:
    """Boolean.parseBoolean: "true" in any case is true, anything else false."""
    return s.strip().lower() == "true"


def parse_value(key: str, typ: Any, raw: Any) -> Any:
    """Parse ``raw`` (a string, or already typed) as ``typ``; ConfigError names ``key``."""
    if not isinstance(raw, str):
        if typ is bool and isinstance(raw, bool):
            return raw
        if typ in (int, float) and isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return typ(raw)
        raw = str(raw)
    s = raw.strip()
    try:
        if typ is bool:
            low = s.lower()
            if low not in ("true", "false"):
                raise ValueError(f"expected true or false, got {raw!r}")
            return low == "true"
        if typ is int:
            return int(s, 10)
        if typ is float:
            return float(s)
        if typ is str:
            return s
        if isinstance(typ, type) and issubclass(typ, enum.Enum):
            try:
                return typ[s]
            except KeyError:
                names = ", ".join(m.name for m in typ)
                raise ValueError(f"expected one of {names}, got {raw!r}") from None
    except ValueError as e:
        raise ConfigError(f"bad value for config key {key}: {e}") from None
    raise ConfigError(f"config key {key} has unsupported type {typ!r}")


def _fields(cls_or_obj: Any) -> dict[str, tuple[dataclasses.Field, Any]]:
    cls = cls_or_obj if isinstance(cls_or_obj, type) else type(cls_or_obj)
    hints = get_type_hints(cls)
    return {f.name: (f, hints[f.name]) for f in dataclasses.fields(cls)}


def apply_properties(config: Any, props: Mapping[str, Any]) -> Any:
    """Set every field of dataclass instance ``config`` that ``props`` names; return it.

    Keys the dataclass does not declare are left alone (another component of the
    same process may own them); see :func:`unknown_keys`.
    """
    for name, (_f, typ) in _fields(config).items():
        if name in props:
            setattr(config, name, parse_value(name, typ, props[name]))
    return config


def unknown_keys(props: Mapping[str, Any], *configs: Any) -> list[str]:
    """Keys of ``props`` that none of ``configs`` declares (to warn about)."""
    known: set[str] = set()
    for c in configs:
        known.update(_fields(c))
    return sorted(k for k in props if k not in known)


def apply_all(props: Mapping[str, Any], *configs: Any, also_known: Iterable[str] = ()) -> list[str]:
    """Apply ``props`` to every one of ``configs``; return the keys none of them (nor ``also_known``) declares."""
    for c in configs:
        apply_properties(c, props)
    known = set(also_known)
    return [k for k in unknown_keys(props, *configs) if k not in known]


def update_from_wire(config: Any, props: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Apply a runtime update received over the network.

    Returns ``(applied, refused)``: fields declared ``wire=False`` and unknown
    keys are refused and nothing of them is applied. A bad value raises
    ConfigError before anything changes.
    """
    fields = _fields(config)
    parsed: dict[str, Any] = {}
    refused: list[str] = []
    for key, raw in props.items():
        entry = fields.get(key)
        if entry is None or not entry[0].metadata.get("wire", True):
            refused.append(key)
            continue
        parsed[key] = parse_value(key, entry[1], raw)
    for key, value in parsed.items():
        setattr(config, key, value)
    return parsed, refused


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return value.name
    return "" if value is None else str(value)


def to_properties(*configs: Any) -> dict[str, str]:
    """All fields of ``configs`` as RocketMQ-style string properties."""
    out: dict[str, str] = {}
    for c in configs:
        for name in _fields(c):
            out[name] = _format(getattr(c, name))
    return out


#: Every character str.splitlines() (and so parse_properties) ends a line at, plus NUL.
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00")
_ESCAPES = {ord("\\"): "\\\\", **{ord(c): f"\\u{ord(c):04x}" for c in _LINE_BREAKS}}


def has_line_break(text: str) -> bool:
    """True when ``text`` would end a line of a properties file (a smuggled key could follow)."""
    return not _LINE_BREAKS.isdisjoint(text)


def _escape(text: str) -> str:
    # Backslash and line breaks escaped as Properties.store does: a value always stays on its own line.
    if "\\" in text or not _LINE_BREAKS.isdisjoint(text):
        return text.translate(_ESCAPES)
    return text


def format_properties(props: Mapping[str, str]) -> str:
    """Render properties as ``key=value`` lines (what ``-p`` prints and files persist).

    Values are escaped so that :func:`parse_properties` reads them back unchanged and no value can
    add a line (a key) to a persisted file.
    """
    return "".join(f"{_escape(k)}={_escape(v)}\n" for k, v in props.items())

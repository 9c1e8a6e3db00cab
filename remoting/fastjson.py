"""JSON bodies as RocketMQ's Java side writes and reads them with fastjson.

Reading: :func:`loads` accepts standard JSON and fastjson's default output,
which is not JSON: map keys that are numbers are written bare (``{0:"a"}``)
and keys that are objects are written as objects (``{{"topic":"T"}:1}``).
Every map key is returned as a ``str``: a bare number as its text (``"0"``),
an object key as an :class:`ObjectKey` holding the object's compact JSON with
sorted keys. Standard-mode Java output (``"0"`` and ``"{\\"topic\\":...}"``)
therefore decodes to the same keys, and body classes convert them once.

Writing: :func:`dumps` produces

* the fastjson default style (``standard=False``): ``int`` keys bare,
  :class:`ObjectKey` keys as raw objects, non-ASCII as UTF-8, maps in their
  insertion order; or
* the standard style (``standard=True``) fastjson writes with
  ``BrowserCompatible + QuoteFieldNames + MapSortField``: every key quoted,
  object keys as strings, non-ASCII ``\\uXXXX``-escaped, every map sorted
  (numeric keys numerically, as a Java TreeMap of Long does).

Both drop ``None`` map values (fastjson omits nulls). Values may be dicts,
lists/tuples/sets, str, int, float, bool, None, enums, or objects with a
``to_obj()`` method returning such a tree. orjson does the leaf work.
"""

from __future__ import annotations

import base64
import enum
import json.decoder
import re
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["ObjectKey", "JSONDecodeError", "loads", "dumps", "object_key"]


class JSONDecodeError(ValueError):
    """The body is neither JSON nor fastjson's dialect of it."""


class ObjectKey(str):
    """A map key that is a JSON object (e.g. a MessageQueue), as its compact JSON text."""

    __slots__ = ()


def object_key(obj: Any) -> ObjectKey:
    """Build the key for an object-keyed map from a dict (or ``to_obj()`` bean)."""
    return ObjectKey(orjson.dumps(_std(obj), option=orjson.OPT_NON_STR_KEYS).decode())


# --------------------------------------------------------------------------
# Decoding

_scanstring = json.decoder.scanstring
_WS = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?")
_BARE_KEY = re.compile(r"[A-Za-z0-9_$+\-.]+")
# Nesting limit of the fallback parser (it recurses; real bodies nest a few levels).
_MAX_DEPTH = 200


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Decode a JSON or fastjson-default body; raise :class:`JSONDecodeError` if it is neither."""
    if isinstance(data, memoryview):
        data = data.tobytes()
    elif isinstance(data, str) and type(data) is not str:
        data = str.__str__(data)  # orjson wants exact str (an ObjectKey is a subclass)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise JSONDecodeError(f"body is not UTF-8: {e}") from None
    else:
        text = data
    parser = _Parser(text)
    try:
        value = parser.value()
    except RecursionError:
        raise JSONDecodeError("nesting too deep") from None
    parser.ws()
    if parser.i != len(text):
        parser.fail("extra data after the JSON value")
    return value


class _Parser:
    """Tolerant recursive-descent reader for what orjson refuses."""

    __slots__ = ("s", "i", "depth")

    def __init__(self, s: str):
        self.s = s
        self.i = 0
        self.depth = 0

    def fail(self, what: str) -> None:
        raise JSONDecodeError(f"{what} at char {self.i}")

    def ws(self) -> None:
        s, i, n = self.s, self.i, len(self.s)
        while i < n and s[i] in _WS:
            i += 1
        self.i = i

    def value(self) -> Any:
        self.ws()
        if self.i >= len(self.s):
            self.fail("unexpected end of data")
        c = self.s[self.i]
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == '"' or c == "'":
            return self.string()
        if self.s.startswith("true", self.i):
            self.i += 4
            return True
        if self.s.startswith("false", self.i):
            self.i += 5
            return False
        if self.s.startswith("null", self.i):
            self.i += 4
            return None
        m = _NUMBER.match(self.s, self.i)
        if not m or m.end() == self.i:
            self.fail(f"unexpected character {c!r}")
        self.i = m.end()
        text = m.group(0)
        if m.group(1) or m.group(2):
            return float(text)
        return int(text)

    def string(self) -> str:
        quote = self.s[self.i]
        if quote == '"':
            try:
                v, self.i = _scanstring(self.s, self.i + 1, True)
            except ValueError as e:
                raise JSONDecodeError(str(e)) from None
            return v
        # fastjson also reads single-quoted strings; no escapes beyond \' and \\ expected.
        j = self.i + 1
        out = []
        n = len(self.s)
        while j < n and self.s[j] != "'":
            if self.s[j] == "\\" and j + 1 < n:
                out.append(self.s[j + 1])
                j += 2
                continue
            out.append(self.s[j])
            j += 1
        if j >= n:
            self.fail("unterminated string")
        self.i = j + 1
        return "".join(out)

    def key(self) -> str:
        self.ws()
        if self.i >= len(self.s):
            self.fail("unexpected end of data")
        c = self.s[self.i]
        if c == '"' or c == "'":
            return self.string()
        if c == "{" or c == "[":
            v = self.value()
            return ObjectKey(orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode())
        m = _BARE_KEY.match(self.s, self.i)
        if not m:
            self.fail(f"bad map key starting with {c!r}")
        self.i = m.end()
        return m.group(0)

    def obj(self) -> dict:
        out: dict = {}

        def member() -> None:
            k = self.key()
            self.ws()
            if not self.s.startswith(":", self.i):
                self.fail("expected ':'")
            self.i += 1
            out[k] = self.value()

        self.items("}", member)
        return out

    def arr(self) -> list:
        out: list = []
        self.items("]", lambda: out.append(self.value()))
        return out

    def items(self, close: str, item: Callable[[], None]) -> None:
        """Read the items of the object or array opening at ``i`` up to ``close``; a trailing comma
        is allowed, as fastjson allows it."""
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            self.fail("nesting too deep")
        self.i += 1
        self.ws()
        if not self.s.startswith(close, self.i):
            while True:
                item()
                self.ws()
                if self.s.startswith(",", self.i):
                    self.i += 1
                    self.ws()
                    if not self.s.startswith(close, self.i):
                        continue
                elif not self.s.startswith(close, self.i):
                    self.fail(f"expected ',' or '{close}'")
                break
        self.i += 1
        self.depth -= 1


# --------------------------------------------------------------------------
# Encoding


def dumps(obj: Any, *, standard: bool = False) -> bytes:
    """Encode ``obj`` as fastjson would; see the module docstring for the two styles."""
    if standard:
        # One Python pass sorts maps (Java TreeMap order) and drops nulls; orjson writes.
        data = orjson.dumps(_std(obj), option=orjson.OPT_NON_STR_KEYS)
        if data.isascii():
            return data
        return _NON_ASCII.sub(_escape_match, data.decode("utf-8")).encode("ascii")
    out: list[str] = []
    _write_fast(obj, out)
    return "".join(out).encode("utf-8")


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_LEAF = frozenset((str, int, float, bool))


def _escape_match(m: re.Match) -> str:
    cp = ord(m.group(0))
    if cp < 0x10000:
        return f"\\u{cp:04X}"
    cp -= 0x10000
    return f"\\u{0xD800 + (cp >> 10):04X}\\u{0xDC00 + (cp & 0x3FF):04X}"


def _key_text(k: Any) -> str:
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, enum.Enum):
        return str(k.name)
    return str(k)


def _sorted_keys(d: dict) -> list:
    """Keys in Java TreeMap order: numbers numerically, strings by UTF-16 code units."""
    try:
        keys = sorted(d)
    except TypeError:  # mixed key types: compare as text
        return sorted(d, key=_key_text)
    if isinstance(keys[0], str):
        joined = "".join(keys)
        if not joined.isascii() and max(joined) > "\uffff":  # astral chars: code point order != Java's
            keys.sort(key=lambda k: k.encode("utf-16-be"))
    return keys


def _std(obj: Any) -> Any:
    """Tree for the standard style: maps sorted, nulls dropped, object keys as plain strings."""
    t = type(obj)
    if t is dict:
        if not obj:
            return obj
        out = {}
        for k in _sorted_keys(obj):
            v = obj[k]
            if v is None:
                continue
            if type(k) is not str:
                k = str.__str__(k) if isinstance(k, str) else (k if type(k) is int else _key_text(k))
            out[k] = v if type(v) in _LEAF else _std(v)
        return out
    if t is list or t is tuple:
        return [v if type(v) in _LEAF else _std(v) for v in obj]
    if obj is None or t in _LEAF:
        return obj
    return _plain_other(obj, _std)


def _plain_other(obj: Any, recurse: Any) -> Any:
    if isinstance(obj, dict):
        return recurse(dict(obj))
    if isinstance(obj, (list, tuple)):
        return [recurse(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        items = [recurse(v) for v in obj]
        try:
            items.sort()
        except TypeError:
            pass
        return items
    if isinstance(obj, enum.Enum):
        return obj.name
    if isinstance(obj, str):
        return str.__str__(obj)
    if isinstance(obj, bool):
        return bool(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    to_obj = getattr(obj, "to_obj", None)
    if to_obj is not None:
        return recurse(to_obj())
    if isinstance(obj, (bytes, bytearray)):

        return base64.b64encode(bytes(obj)).decode("ascii")
    raise TypeError(f"cannot encode {type(obj).__name__} as JSON")


def _write_fast(obj: Any, out: list[str]) -> None:
    t = type(obj)
    if t is str:
        out.append(_dumps_str(obj))
    elif t is dict:
        out.append("{")
        first = True
        for k, v in obj.items():
            if v is None:
                continue
            if first:
                first = False
            else:
                out.append(",")
            tk = type(k)
            if tk is str:
                out.append(_dumps_str(k))
            elif tk is ObjectKey:
                out.append(str.__str__(k))
            elif tk is int or (isinstance(k, (int, float)) and not isinstance(k, bool)):
                out.append(str(int(k)) if tk is int else str(k))  # fastjson writes numeric keys bare
            elif isinstance(k, str):
                out.append(_dumps_str(str.__str__(k)))
            else:
                out.append(_dumps_str(_key_text(k)))
            out.append(":")
            tv = type(v)
            if tv is str:
                out.append(_dumps_str(v))
            elif tv is int:
                out.append(str(v))
            elif tv is bool:
                out.append("true" if v else "false")
            else:
                _write_fast(v, out)
        out.append("}")
    elif t is list or t is tuple or t is set or t is frozenset:
        out.append("[")
        first = True
        for v in obj:
            if first:
                first = False
            else:
                out.append(",")
            _write_fast(v, out)
        out.append("]")
    elif t is int:
        out.append(str(obj))
    elif obj is None or t is bool or t is float:
        out.append(orjson.dumps(obj).decode("ascii"))
    else:
        _write_fast(_plain_other(obj, lambda x: x), out)


def _dumps_str(s: str) -> str:
    return orjson.dumps(s).decode("utf-8")

"""Pure twins of ``speedups.json_header`` and ``speedups.json_head``: the usual JSON remoting header
decoded, and encoded with its frame prefix, or None.

The compiled twins (common/_json_header.c) read and write the header text themselves; these let
orjson do it and check the same shape. Either gives None for anything but the usual header, and
the remoting codec then takes its general path (numbers in strings, unknown languages, null
values, values to convert, malformed or non-UTF-8 text and their errors).
"""

from __future__ import annotations

import struct
from typing import Any

import orjson

__all__ = ["json_header", "json_head"]

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_PREFIX = struct.Struct(">iI")
_MAX_EXT = 64
_INTS = ("code", "version", "opaque", "flag")
_KEYS = frozenset((*_INTS, "language", "remark", "extFields", "serializeTypeCurrentRPC"))


def _int32(v: Any) -> bool:
    return type(v) is int and _INT_MIN <= v <= _INT_MAX


def json_header(raw, languages: dict) -> tuple | None:
    """``(code, language, version, opaque, flag, remark, ext_fields)`` when ``raw`` is a JSON object
    whose keys are all among code, language, version, opaque, flag, remark, extFields and
    serializeTypeCurrentRPC, with int32 numbers (absent: 0), a language that is a name in
    ``languages`` (given as its value there) or an int32, a string or null remark (None when
    absent), an object of strings or null as extFields (None when absent) and a string
    serializeTypeCurrentRPC; None otherwise (language absent included). TypeError when
    ``languages`` is not a dict."""
    if type(languages) is not dict:
        raise TypeError("languages must be a dict")
    try:
        d = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(d) is not dict or not _KEYS.issuperset(d) or "language" not in d:
        return None
    g = d.get
    code, version, opaque, flag = (g(k, 0) for k in _INTS)
    if not (_int32(code) and _int32(version) and _int32(opaque) and _int32(flag)):
        return None
    lang = d["language"]
    if type(lang) is str:
        lang = languages.get(lang)
        if lang is None:
            return None
    elif not _int32(lang):
        return None
    remark = g("remark")
    if remark is not None and type(remark) is not str:
        return None
    ext = g("extFields")
    if ext is not None and (type(ext) is not dict or any(type(v) is not str for v in ext.values())):
        return None
    if "serializeTypeCurrentRPC" in d and type(d["serializeTypeCurrentRPC"]) is not str:
        return None
    return code, lang, version, opaque, flag, remark, ext


def _long(v: Any) -> bool:
    return isinstance(v, int) and type(v) is not bool and _LONG_MIN <= v <= _LONG_MAX


def json_head(code: Any, language: Any, version: Any, opaque: Any, flag: Any, remark: Any, ext: Any,
              lang_names: dict, body_len: int) -> bytes | None:
    """The frame prefix (length, serialize type JSON, header length) and the JSON header of a command
    with these fields (``ext`` its ``ext_fields``) for a body of ``body_len`` bytes: keys in fastjson's order, null values left out, the language's name from
    ``lang_names`` ("OTHER" when absent). None unless code, version, opaque and flag are ints (not
    bools) in the int64 range, remark None or a str, ext_fields None or a dict of at most 64 entries
    whose keys and values are exactly str, every str has a UTF-8 form and the lengths fit the prefix
    (header up to 0xFFFFFF bytes, frame up to 0x7FFFFFFF)."""
    if type(lang_names) is not dict:
        raise TypeError("lang_names must be a dict")
    if not (_long(code) and _long(version) and _long(opaque) and _long(flag)):
        return None
    try:
        lang = lang_names.get(language, "OTHER")
    except TypeError:  # unhashable
        return None
    if not isinstance(lang, str) or (remark is not None and not isinstance(remark, str)):
        return None
    d: dict[str, Any] = {"code": int(code)}
    if ext is not None:
        if not isinstance(ext, dict) or len(ext) > _MAX_EXT or any(
                type(k) is not str or type(v) is not str for k, v in ext.items()):
            return None
        d["extFields"] = ext
    d["flag"] = int(flag)
    d["language"] = str(lang)
    d["opaque"] = int(opaque)
    if remark is not None:
        d["remark"] = str(remark)
    d["serializeTypeCurrentRPC"] = "JSON"
    d["version"] = int(version)
    try:
        h = orjson.dumps(d)
    except TypeError:  # a str without a UTF-8 form (a lone surrogate)
        return None
    if len(h) > 0xFFFFFF or body_len < 0 or 4 + len(h) + body_len > 0x7FFFFFFF:
        return None
    return _PREFIX.pack(4 + len(h) + body_len, len(h)) + h

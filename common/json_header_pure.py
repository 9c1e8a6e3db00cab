"""Pure twin of ``speedups.json_header``: the usual JSON remoting header, or None.

The compiled twin (common/_json_header.c) parses the header text itself; this one lets orjson
parse it and then checks the same shape. Either gives None for anything but the usual header, and
the remoting codec then takes its general path (numbers in strings, unknown languages, null
values, malformed or non-UTF-8 text and their errors).
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["json_header"]

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
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

"""The send request header (RocketMQ's SendMessageRequestHeader and its V2 twin with one-letter keys).

Parsed straight from ``extFields`` rather than through the generic header codec: SEND_MESSAGE_V2 is
the hot path, so the usual complete, numeric V2 header takes one lookup and one ``int`` per field
(:func:`parse_v2_fast`) and anything else goes through :func:`parse_send_header`, which names the
missing or bad field as RocketMQ's header decoding does.
"""

from __future__ import annotations

from typing import Any

from common.speedups import new_slotted as _new_slotted
from common.speedups import send_header_v2 as _send_header_v2
from remoting.header import HeaderError

__all__ = ["SendHeader", "parse_send_header", "parse_v2_fast"]

_V1_KEYS = (
    "producerGroup",
    "topic",
    "defaultTopic",
    "defaultTopicQueueNums",
    "queueId",
    "sysFlag",
    "bornTimestamp",
    "flag",
    "properties",
    "reconsumeTimes",
    "unitMode",
    "maxReconsumeTimes",
    "batch",
)


class SendHeader:
    """The send request header in V1 terms (parsed straight from extFields for speed)."""

    __slots__ = _V1_KEYS


_V2_KEYS = ("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m")


_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _int(name: str, v: Any, long: bool = False) -> int:
    if type(v) is not int:
        try:
            v = int(v)
        except (TypeError, ValueError):
            raise HeaderError(f"header field {name} is not a number: {v!r}") from None
    # Integer.parseInt / Long.parseLong refuse what does not fit (and the store could not write it)
    if not ((_LONG_MIN <= v <= _LONG_MAX) if long else (_INT_MIN <= v <= _INT_MAX)):
        raise HeaderError(f"header field {name} is out of range: {v!r}")
    return v


def parse_v2_fast(ext: dict) -> SendHeader | None:
    """SEND_MESSAGE_V2 header when every required field is there and numeric (the usual case), else None.

    The usual form (plain decimals, exact strings) is read in one compiled call
    (``speedups.send_header_v2``); otherwise one key lookup and at most one ``int`` per field;
    anything unusual falls back to :func:`parse_send_header`, which produces the exact error.
    """
    f = _send_header_v2(ext)
    if f is not None:
        # the 13 fields in SendHeader's slot order (producerGroup .. batch): set in one call
        return _new_slotted(SendHeader, f)
    return _parse_v2_general(ext)


def _parse_v2_general(ext: dict) -> SendHeader | None:
    """:func:`parse_v2_fast` for the forms the compiled call leaves (numbers with spaces or '+',
    ints that are not strings, "TRUE", a non-string properties value...)."""
    try:
        h = _new_header(SendHeader)
        h.producerGroup = ext["a"]
        h.topic = ext["b"]
        h.defaultTopic = ext["c"]
        h.defaultTopicQueueNums = int(ext["d"])
        h.queueId = int(ext["e"])
        h.sysFlag = int(ext["f"])
        h.bornTimestamp = int(ext["g"])
        h.flag = int(ext["h"])
    except (KeyError, ValueError, TypeError):
        return None
    if not (_INT_MIN <= h.queueId <= _INT_MAX and _LONG_MIN <= h.bornTimestamp <= _LONG_MAX
            and _INT_MIN <= h.flag <= _INT_MAX and _INT_MIN <= h.sysFlag <= _INT_MAX
            and _INT_MIN <= h.defaultTopicQueueNums <= _INT_MAX):
        return None  # the general parse names the field
    g = ext.get
    h.properties = g("i")
    v = g("j")
    h.reconsumeTimes = None if v is None else _int("j", v)
    v = g("k")
    h.unitMode = v is not None and (v == "true" or str(v).lower() == "true")
    v = g("l")
    h.maxReconsumeTimes = None if v is None else _int("l", v)
    v = g("m")
    h.batch = v is not None and (v == "true" or str(v).lower() == "true")
    if type(h.topic) is not str or type(h.producerGroup) is not str or type(h.defaultTopic) is not str:
        return None
    return h


_new_header = SendHeader.__new__


def parse_send_header(ext: dict | None, v2: bool) -> SendHeader:
    """Decode a V1 or V2 send header; HeaderError names a missing/bad required field."""
    if v2 and ext:
        h = parse_v2_fast(ext)
        if h is not None:
            return h
    if not ext:
        raise HeaderError(f"the custom field <{'a' if v2 else 'producerGroup'}> is null")
    keys = _V2_KEYS if v2 else _V1_KEYS
    g = ext.get
    h = SendHeader()
    vals = [g(k) for k in keys]
    for i in range(8):
        if vals[i] is None:
            raise HeaderError(f"the custom field <{keys[i]}> is null")
    h.producerGroup = str(vals[0])
    h.topic = str(vals[1])
    h.defaultTopic = str(vals[2])
    h.defaultTopicQueueNums = _int(keys[3], vals[3])
    h.queueId = _int(keys[4], vals[4])
    h.sysFlag = _int(keys[5], vals[5])
    h.bornTimestamp = _int(keys[6], vals[6], long=True)
    h.flag = _int(keys[7], vals[7])
    h.properties = vals[8]
    h.reconsumeTimes = None if vals[9] is None else _int(keys[9], vals[9])
    h.unitMode = vals[10] is not None and str(vals[10]).lower() == "true"
    h.maxReconsumeTimes = None if vals[11] is None else _int(keys[11], vals[11])
    h.batch = vals[12] is not None and str(vals[12]).lower() == "true"
    return h

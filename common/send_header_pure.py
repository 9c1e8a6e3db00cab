"""Pure twin of ``speedups.send_header_v2``: the usual SEND_MESSAGE_V2 request header, or None.

The header's one-letter extFields (RocketMQ's SendMessageRequestHeaderV2) as a 13-tuple in the order
a..m: producerGroup, topic, defaultTopic, defaultTopicQueueNums, queueId, sysFlag, bornTimestamp, flag,
properties, reconsumeTimes, unitMode, maxReconsumeTimes, batch. None for any other form: the send
processor's general parse then reads the header and names a missing or bad field.
"""

from __future__ import annotations

import re

__all__ = ["send_header_v2"]

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_DECIMAL = re.compile(r"-?[0-9]{1,19}\Z")


def _decimal(v, lo: int, hi: int) -> int | None:
    if type(v) is not str or _DECIMAL.match(v) is None:
        return None
    n = int(v)
    return n if lo <= n <= hi else None


def _flag(v) -> bool | None:
    if v is None:
        return False
    if type(v) is not str:
        return None
    return True if v == "true" else False if v == "false" else None


def send_header_v2(ext: dict) -> tuple | None:
    """The 13 fields when a, b, c are exact str, i absent or an exact str, d, e, f, h (int) and g (long)
    plain ASCII decimals (an optional '-', at most 19 digits) within their Java type, j and l absent
    (None) or such int decimals, k and m absent (False), "true" or "false"; None otherwise. TypeError
    when ``ext`` is not a dict."""
    if type(ext) is not dict:
        raise TypeError("ext must be a dict")
    g = ext.get
    a, b, c, i = g("a"), g("b"), g("c"), g("i")
    if type(a) is not str or type(b) is not str or type(c) is not str or (i is not None and type(i) is not str):
        return None
    d, e, f = _decimal(g("d"), _INT_MIN, _INT_MAX), _decimal(g("e"), _INT_MIN, _INT_MAX), _decimal(g("f"), _INT_MIN, _INT_MAX)
    born, flag = _decimal(g("g"), _LONG_MIN, _LONG_MAX), _decimal(g("h"), _INT_MIN, _INT_MAX)
    if d is None or e is None or f is None or born is None or flag is None:
        return None
    unit, batch = _flag(g("k")), _flag(g("m"))
    if unit is None or batch is None:
        return None
    j, lv = g("j"), g("l")
    reconsume = None if j is None else _decimal(j, _INT_MIN, _INT_MAX)
    max_reconsume = None if lv is None else _decimal(lv, _INT_MIN, _INT_MAX)
    if (j is not None and reconsume is None) or (lv is not None and max_reconsume is None):
        return None
    return a, b, c, d, e, f, born, flag, i, reconsume, unit, max_reconsume, batch

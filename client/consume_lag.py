"""Reading GET_BROKER_CONSUME_STATS answers quickly: whole (MessageQueue keys made strings for orjson) or,
for a page of a group list, only the page's groups summed into a :class:`GroupLag` each.

The answer is ``{"brokerAddr":..,"consumeStatsList":[{group:[ConsumeStats,..]},..],"totalDiff":..}`` in
fastjson's default form, whose MessageQueue map keys are objects: not JSON, so orjson refuses it and the
general parser takes ~500 ms for 500 groups. A MessageQueue key is flat and its field names appear
nowhere else in such a body, so four plain replacements make it a string. A 500-group body is ~0.5 MB;
a page of 50 groups parses a tenth of it: the entries ``{"group":[..]}`` are cut apart at ``]},{"``,
which occurs nowhere else (a ConsumeStats holds no list; names are checked names). Whatever does not
fit these shapes is read by the general parser instead.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import orjson

from remoting import fastjson

__all__ = ["GroupLag", "loads_mq_keyed", "group_lag", "consume_lag"]

_MQ_KEY_PARTS = ((b'{"brokerName":"', b'"'), (b'","queueId":', b"\\t"), (b',"topic":"', b"\\t"), (b'"}:', b'":'))
_LIST_HEAD = b'"consumeStatsList":[{"'
_ENTRY_SEP = b']},{"'  # between two entries {"g1":[..]},{"g2":[..]}, and nowhere else


@dataclass(slots=True)
class GroupLag:
    """One group's consume progress on one broker, summed over its topics and queues."""

    consumeTps: float = 0.0
    diff: int = 0  # messages behind: the sum of brokerOffset - consumerOffset where positive
    oldest: int = 0  # store time of the oldest last-consumed message among lagging queues (ms; 0: none)


def _keys_as_strings(body: bytes) -> bytes | None:
    counts = {body.count(old) for old, _new in _MQ_KEY_PARTS}
    if len(counts) != 1:
        return None
    for old, new in _MQ_KEY_PARTS:
        body = body.replace(old, new)
    return body


def loads_mq_keyed(body: bytes) -> Any:
    """The body parsed by orjson once its MessageQueue keys are the strings "broker\\tqueueId\\ttopic";
    None when it is not of that shape."""
    text = _keys_as_strings(body)
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def group_lag(stats: Any) -> GroupLag:
    """Sum one group's ConsumeStats list (wire objects). The offsets are JSON numbers (Java longs)."""
    tps = 0.0
    diff = oldest = 0
    for st in stats or ():
        tps += float(st.get("consumeTps") or 0.0)
        for w in (st.get("offsetTable") or {}).values():
            d = w.get("brokerOffset", 0) - w.get("consumerOffset", 0)
            if d > 0:
                diff += d
                last = w.get("lastTimestamp", 0)
                if last > 0 and (oldest == 0 or last < oldest):
                    oldest = last
    return GroupLag(tps, diff, oldest)


def _some_groups(body: bytes, groups: Collection[str]) -> dict[str, GroupLag] | None:
    head = body.find(_LIST_HEAD)
    if head < 0:
        return None
    # one piece per entry, 'group":[ConsumeStats,..' (the split eats each entry's closing ]})
    pieces = body[head + len(_LIST_HEAD):].split(_ENTRY_SEP)
    last = pieces[-1]
    end = last.rfind(b"]}]")
    if end < 0:
        return None
    pieces[-1] = last[:end]
    wanted = {g.encode("utf-8") for g in groups}
    out: dict[str, GroupLag] = {}
    for piece in pieces:
        q = piece.find(b'":[')
        name = piece[:q]
        if q < 0 or name not in wanted:
            continue
        group = name.decode("utf-8")
        text = _keys_as_strings(piece[q + 2:] + b"]")
        if text is None or group in out:
            return None
        try:
            out[group] = group_lag(orjson.loads(text))
        except (orjson.JSONDecodeError, AttributeError, TypeError):
            return None
    return out


def consume_lag(body: bytes, groups: Collection[str] | None = None) -> dict[str, GroupLag]:
    """group -> its lag on the broker that answered ``body``; only ``groups`` when given (those the
    broker does not list are absent)."""
    if groups is not None:
        some = _some_groups(body, groups)
        if some is not None:
            return some
    obj = loads_mq_keyed(body)
    if obj is None:  # another shape of keys (e.g. a broker's standard-mode JSON): the general parser
        obj = fastjson.loads(body)
    return {str(g): group_lag(stats) for entry in obj.get("consumeStatsList") or [] for g, stats in entry.items()
            if groups is None or g in groups}

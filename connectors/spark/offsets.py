"""Queue offsets as the connector plans them: parsing, nesting, capping and splitting ranges.

Offsets travel as the nested JSON the issue (and the old rocketmq-spark
connector) uses, ``{"topic": {"brokerName": {"queueId": offset}}}``; inside,
they are a flat ``{(topic, broker, queueId): offset}`` map. Special values in
``startingOffsets``/``endingOffsets``: -2 = earliest, -1 = latest (as Kafka).
Nothing here does I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from connectors.spark.errors import ConnectorError

__all__ = [
    "EARLIEST",
    "LATEST",
    "QueueKey",
    "OffsetRange",
    "parse_offsets",
    "parse_assign",
    "nest",
    "flatten",
    "cap_by_total",
    "split_ranges",
]

EARLIEST = -2
LATEST = -1

QueueKey = tuple[str, str, int]  # (topic, brokerName, queueId)


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Queue offsets ``[start, end)`` of one queue: what one Spark task pulls."""

    topic: str
    broker: str
    queue_id: int
    start: int
    end: int

    @property
    def key(self) -> QueueKey:
        return (self.topic, self.broker, self.queue_id)

    @property
    def size(self) -> int:
        return self.end - self.start


def _load_json(option: str, text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConnectorError(f"option {option}: malformed JSON ({e.msg} at char {e.pos}): {text!r}") from None


def parse_offsets(option: str, text: str, *, allow_earliest: bool = True) -> str | dict[QueueKey, int]:
    """``earliest`` / ``latest`` or the nested JSON, checked; ConnectorError names ``option``."""
    t = text.strip()
    if t.lower() == "earliest":
        if not allow_earliest:
            raise ConnectorError(f"option {option}: 'earliest' is not allowed here")
        return "earliest"
    if t.lower() == "latest":
        return "latest"
    obj = _load_json(option, t)
    shape = '{"topic":{"brokerName":{"queueId":offset}}}'
    if not isinstance(obj, dict) or not obj:
        raise ConnectorError(f"option {option}: expected 'earliest', 'latest' or {shape}, got {text!r}")
    out: dict[QueueKey, int] = {}
    for topic, brokers in obj.items():
        if not isinstance(brokers, dict):
            raise ConnectorError(f"option {option}: topic {topic!r} must map broker names to objects, as {shape}")
        for broker, queues in brokers.items():
            if not isinstance(queues, dict):
                raise ConnectorError(f"option {option}: {topic}/{broker} must map queue ids to offsets, as {shape}")
            for qid, off in queues.items():
                try:
                    q = int(qid)
                except (TypeError, ValueError):
                    raise ConnectorError(f"option {option}: queue id {qid!r} of {topic}/{broker} is not an int") from None
                if isinstance(off, bool) or not isinstance(off, int) or off < EARLIEST:
                    raise ConnectorError(
                        f"option {option}: offset {off!r} of {topic}/{broker}/{q} must be an int >= -2 "
                        "(-2 = earliest, -1 = latest)")
                if off == EARLIEST and not allow_earliest:
                    raise ConnectorError(f"option {option}: -2 (earliest) is not allowed here")
                out[(str(topic), str(broker), q)] = off
    return out


def parse_assign(text: str) -> dict[str, dict[str, list[int]]]:
    """``assign``: ``{"topic":{"brokerName":[queueIds]}}``."""
    obj = _load_json("assign", text)
    if not isinstance(obj, dict) or not obj:
        raise ConnectorError(f'option assign: expected {{"topic":{{"brokerName":[queueIds]}}}}, got {text!r}')
    out: dict[str, dict[str, list[int]]] = {}
    for topic, brokers in obj.items():
        if not isinstance(brokers, dict) or not brokers:
            raise ConnectorError(f"option assign: topic {topic!r} must map broker names to lists of queue ids")
        for broker, qids in brokers.items():
            if not isinstance(qids, list) or not all(isinstance(q, int) and not isinstance(q, bool) and q >= 0
                                                     for q in qids):
                raise ConnectorError(f"option assign: {topic}/{broker} must be a list of queue ids (ints >= 0)")
            out.setdefault(str(topic), {})[str(broker)] = sorted(set(qids))
    return out


def nest(flat: dict[QueueKey, int]) -> dict[str, dict[str, dict[str, int]]]:
    """The JSON shape (queue ids as strings, sorted for stable checkpoints)."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for (topic, broker, qid), off in sorted(flat.items()):
        out.setdefault(topic, {}).setdefault(broker, {})[str(qid)] = int(off)
    return out


def flatten(nested: dict | None) -> dict[QueueKey, int]:
    """Inverse of :func:`nest` (a checkpointed offset read back)."""
    out: dict[QueueKey, int] = {}
    for topic, brokers in (nested or {}).items():
        for broker, queues in brokers.items():
            for qid, off in queues.items():
                out[(topic, broker, int(qid))] = int(off)
    return out


def cap_by_total(start: dict[QueueKey, int], latest: dict[QueueKey, int], max_total: int) -> dict[QueueKey, int]:
    """End offsets advancing at most ``max_total`` messages in all, shared in proportion to each queue's lag.

    Like the Kafka source's maxOffsetsPerTrigger: every lagging queue moves by
    at least one while the budget lasts, so no queue starves.
    """
    lags = {k: max(0, latest[k] - start.get(k, latest[k])) for k in latest}
    total = sum(lags.values())
    if total <= max_total:
        return dict(latest)
    end = {k: start.get(k, latest[k]) for k in latest}
    budget = max_total
    for k in sorted(lags, key=lambda k: (-lags[k], k)):
        if budget <= 0:
            break
        lag = lags[k]
        if lag == 0:
            continue
        take = min(lag, budget, max(1, lag * max_total // total))
        end[k] += take
        budget -= take
    return end


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Split the biggest ranges until there are at least ``min_partitions`` (when the offsets allow)."""
    out = [r for r in ranges if r.size > 0]
    if not min_partitions or len(out) >= min_partitions:
        return out
    total = sum(r.size for r in out)
    if total == 0:
        return out
    result: list[OffsetRange] = []
    for r in out:
        # each range gets a share of the wanted parts proportional to its size (at least one)
        parts = max(1, min(r.size, round(min_partitions * r.size / total)))
        step, extra = divmod(r.size, parts)
        s = r.start
        for i in range(parts):
            e = s + step + (1 if i < extra else 0)
            result.append(OffsetRange(r.topic, r.broker, r.queue_id, s, e))
            s = e
    return result

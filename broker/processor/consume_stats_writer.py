"""ConsumeStats bodies (GET_CONSUME_STATS, GET_BROKER_CONSUME_STATS) written straight from the broker's tables.

The bytes are those of ``fastjson.dumps(ConsumeStats(...).to_obj())``: fastjson's default form, each
MessageQueue an object key ``{"brokerName":..,"queueId":..,"topic":..}`` and every bean's fields in
alphabetical order, as the Java admin tools parse them. The generic path built a MessageQueue, an
OffsetWrapper, two dicts and a sorted, re-encoded key per queue, then walked that tree again to write
it (~70 ms for a 500-group broker answer of 4,000 queues). Here a queue is one f-string whose key
prefix is made once per topic, and a topic's max offsets are read once per request however many
groups consume it.
"""

from __future__ import annotations

from typing import Protocol

import orjson

__all__ = ["ConsumeStatsWriter", "ProgressStore", "OffsetTable", "json_str", "json_float"]


class ProgressStore(Protocol):
    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int: ...

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int: ...


class OffsetTable(Protocol):
    def query_offsets(self, group: str, topic: str) -> dict[int, int]: ...


def json_str(s: str) -> str:
    """A JSON string as fastjson writes it by default (non-ASCII as UTF-8, not escaped)."""
    return orjson.dumps(s).decode("utf-8")


def json_float(x: float) -> str:
    """A Java double as fastjson writes it (``0.0``, ``12.5``)."""
    if x == 0:  # most groups on a list are idle
        return "0.0"
    return orjson.dumps(float(x)).decode("ascii")


class ConsumeStatsWriter:
    """Offset-table entries of one request. Build one per request: it keeps each topic's max offsets
    for the request's duration (one consistent read per topic, shared by the groups on it)."""

    __slots__ = ("_store", "_offsets", "_key_head", "_max_offsets")

    def __init__(self, broker_name: str, store: ProgressStore, offsets: OffsetTable):
        self._store = store
        self._offsets = offsets
        self._key_head = '{"brokerName":' + json_str(broker_name) + ',"queueId":'
        self._max_offsets: dict[str, list[int]] = {}

    def _max_of(self, topic: str, queue_nums: int) -> list[int]:
        maxes = self._max_offsets.get(topic)
        if maxes is None or len(maxes) < queue_nums:
            get_max = self._store.get_max_offset_in_queue
            maxes = self._max_offsets[topic] = [max(0, get_max(topic, q)) for q in range(queue_nums)]
        return maxes

    def entries(self, group: str, topic: str, queue_nums: int, out: list[str]) -> int:
        """Append one ``MessageQueue:OffsetWrapper`` entry per queue of ``topic`` (ids 0..queue_nums-1)
        to ``out``; return the sum of brokerOffset - consumerOffset over them."""
        maxes = self._max_of(topic, queue_nums)
        committed = self._offsets.query_offsets(group, topic)
        stamp = self._store.get_message_store_timestamp
        head = self._key_head
        tail = ',"topic":' + json_str(topic) + '}:{"brokerOffset":'
        diff = 0
        for qid in range(queue_nums):
            broker_offset = maxes[qid]
            consumer_offset = committed.get(qid, 0)
            last = 0
            if consumer_offset > 0:
                last = max(0, stamp(topic, qid, consumer_offset - 1))
            else:
                consumer_offset = 0  # none committed (-1) reads as 0, as the Java broker answers
            diff += broker_offset - consumer_offset
            out.append(f'{head}{qid}{tail}{broker_offset},"consumerOffset":{consumer_offset},'
                       f'"lastTimestamp":{last}}}')
        return diff

    @staticmethod
    def consume_stats(tps: float, entries: list[str]) -> str:
        """One ConsumeStats object from its offset-table entries."""
        return '{"consumeTps":' + json_float(tps) + ',"offsetTable":{' + ",".join(entries) + "}}"

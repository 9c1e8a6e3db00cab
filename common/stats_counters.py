"""The send path's per-message counters: a pure-Python twin and a compiled one.

Two hot-path counters run once per stored message or once per socket read, and at 1 KiB a
Python call is a visible share of the broker's whole cost per message (measured on the
2-core box: a Python ``on_put`` 0.5 µs and a histogram ``since`` 0.5 µs, against ~20 µs per
message in all). The compiled twin (``common/_stats_counters.c``) does the same work in one
C call each; this module's classes are the reference, and tests hold the two equal.

* :class:`TopicPutCounters`: per topic, what BrokerStatsManager's put statistics need (pending
  ``nums``, ``size``, ``calls`` since the last fold, and ``first_ms``, the first put's time)
  and what the Prometheus put counters need (messages and bytes by 5.x message type, and the
  message size histogram's bucket counts), kept by one call: ``put(topic, nums, size, msg)``.
  The statistics and the metrics share it, so turning metrics on adds nothing to the send path.
* :class:`Histogram`: bucket counts and a sum; ``since(started, times)`` observes the
  milliseconds from a ``time.perf_counter()`` reading to now.

Buckets follow ``bisect_left`` over the bounds: a value lands in the first bucket whose
bound is >= it, the last bucket is +Inf. Only the event loop writes; a scrape on another
thread reads copies (``counts``, ``msgs``, ``bytes`` are new lists in the compiled twin).
The compiled twin is used unless ``ROCKETMQ_PY_PURE=1`` is set or it was not built
(:data:`IS_COMPILED`); :data:`pure` and :data:`compiled` give tests both.
"""

from __future__ import annotations

import os
import time
import types
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

__all__ = ["TopicPutCounters", "TopicPutCounter", "Histogram", "IS_COMPILED", "pure", "compiled",
           "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MAX_BOUNDS"]

#: index of each 5.x message type in a counter's ``msgs`` / ``bytes``
NORMAL, FIFO, DELAY, TRANSACTION = range(4)
#: the most bounds a histogram may have (the compiled twin keeps them in a fixed array)
MAX_BOUNDS = 16

_perf = time.perf_counter


def _check_bounds(bounds: tuple[float, ...]) -> tuple[float, ...]:
    b = tuple(float(x) for x in bounds)
    if not 0 < len(b) <= MAX_BOUNDS or any(b[i] >= b[i + 1] for i in range(len(b) - 1)):
        raise ValueError(f"bounds must be 1 to {MAX_BOUNDS} increasing numbers: {bounds!r}")
    return b


class TopicPutCounter:
    """One topic's counts (see the module docstring)."""

    __slots__ = ("nums", "size", "calls", "first_ms", "msgs", "bytes", "counts")

    def __init__(self, first_ms: int, buckets: int) -> None:
        self.nums = self.size = self.calls = 0
        self.first_ms = first_ms
        self.msgs = [0, 0, 0, 0]
        self.bytes = [0, 0, 0, 0]
        self.counts = [0] * buckets

    def take(self) -> tuple[int, int, int, int]:
        """``(nums, size, calls, first_ms)`` pending since the last take, and zero them."""
        out = (self.nums, self.size, self.calls, self.first_ms)
        self.nums = self.size = self.calls = 0
        return out


class TopicPutCounters:
    """Every topic's :class:`TopicPutCounter`, kept by :meth:`put`.

    ``bounds``: the size histogram's bucket bounds (bytes). ``schedule_topic`` / ``half_topic``:
    the system topics a delayed / prepared message is stored to; ``sharding_key``: the property
    that makes a message fifo. ``clock_ms``: the time a new topic's first put is stamped with.
    """

    def __init__(self, bounds: tuple[float, ...], schedule_topic: str, half_topic: str, sharding_key: str,
                 clock_ms: Callable[[], int]) -> None:
        self.bounds = _check_bounds(bounds)
        self._schedule, self._half, self._sharding = schedule_topic, half_topic, sharding_key
        self._clock = clock_ms
        self.table: dict[str, TopicPutCounter] = {}
        # the last put's topic and counter: puts come in runs to one topic (no dict lookup then)
        self._last: tuple[str, TopicPutCounter] | None = None

    def put(self, topic: str, nums: int, size: int, msg: Any = None) -> None:
        """``nums`` messages of ``size`` body bytes stored to ``topic``. ``msg``: the stored message
        of a single send (its ``topic`` is the system topic a delayed or prepared message was parked
        in, else ``topic`` itself; a ``sharding_key`` property makes it fifo); None for a batch,
        counted as normal messages, each at the batch's mean size in the histogram."""
        last = self._last
        if last is not None and last[0] is topic:
            c = last[1]
        else:
            c = self.table.get(topic)
            if c is None:
                c = self.table[topic] = TopicPutCounter(self._clock(), len(self.bounds) + 1)
            self._last = (topic, c)
        c.nums += nums
        c.size += size
        c.calls += 1
        kind = NORMAL
        if msg is not None:
            t = msg.topic
            if t is not topic and t != topic:
                kind = DELAY if t == self._schedule else TRANSACTION if t == self._half else NORMAL
            elif self._sharding in msg.properties:
                kind = FIFO
        c.msgs[kind] += nums
        c.bytes[kind] += size
        if nums == 1:
            c.counts[bisect_left(self.bounds, size)] += 1
        elif nums > 1:
            c.counts[bisect_left(self.bounds, size / nums)] += nums

    def counter(self, topic: str) -> TopicPutCounter:
        """``topic``'s counter, made (stamped now) when it has none."""
        c = self.table.get(topic)
        if c is None:
            c = self.table[topic] = TopicPutCounter(self._clock(), len(self.bounds) + 1)
        return c

    def remove(self, topic: str) -> None:
        """Drop ``topic``'s counter (a deleted topic); a later put starts a new one."""
        self.table.pop(topic, None)
        self._last = None


class Histogram:
    """Bucket counts (``counts``, the last one +Inf) and their sum (``total``) over ``bounds``."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = _check_bounds(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0

    def observe(self, value: float, times: int = 1) -> None:
        self.counts[bisect_left(self.bounds, value)] += times
        self.total += value * times

    def since(self, started: float, times: int = 1) -> None:
        """Observe the milliseconds from ``started`` (a ``time.perf_counter()``) to now, ``times`` times."""
        ms = (_perf() - started) * 1000.0
        self.counts[bisect_left(self.bounds, ms)] += times
        self.total += ms * times


pure = types.SimpleNamespace(TopicPutCounters=TopicPutCounters, TopicPutCounter=TopicPutCounter, Histogram=Histogram)


def _compiled() -> Any:
    try:
        from common import _stats_counters  # noqa: PLC0415 - optional compiled twin
    except ImportError:
        return None
    return _stats_counters


compiled = _compiled()
IS_COMPILED = compiled is not None and os.environ.get("ROCKETMQ_PY_PURE") != "1"
if IS_COMPILED:
    TopicPutCounters = compiled.TopicPutCounters  # type: ignore[misc]  # noqa: F811
    Histogram = compiled.Histogram  # type: ignore[misc]  # noqa: F811

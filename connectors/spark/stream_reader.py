"""The "rocketmq" streaming source: micro-batches over queue offsets.

Offsets are the nested ``{"topic":{"brokerName":{"queueId":offset}}}`` dict.
``latestOffset(start, limit)`` serves every PySpark 4.x: 4.2+ passes the
batch's start and a read limit (admission control, ``maxOffsetsPerTrigger``
as ``ReadMaxRows``); 4.0/4.1 call it without arguments, and then the reader
caps from the end it planned last. With ``Trigger.AvailableNow`` the target
is fixed when the query starts (``prepareForTriggerAvailableNow``) and
reached in as many limited batches as needed. After each committed batch the
end offsets become the ``group``'s consumer offsets when that option is set.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from pyspark.sql.datasource import DataSourceStreamReader

from connectors.spark.offsets import QueueKey, cap_by_total, flatten, nest
from connectors.spark.options import SourceOptions
from connectors.spark.planner import SourcePlanner
from connectors.spark.queue_range_partition import QueueRangePartition, plan_partitions, read_partition
from connectors.spark.topic_metadata import TopicMetadata

try:  # PySpark >= 4.2: admission control and AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # PySpark 4.0 / 4.1
    ReadAllAvailable = ReadMaxRows = None

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in: the runtime does not know the mixin, nothing calls it."""


__all__ = ["RocketMQStreamReader"]

log = logging.getLogger("connectors.spark")


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: SourceOptions):
        self.opts = opts
        self._meta: TopicMetadata | None = None
        self._addrs: dict[QueueKey, str] = {}
        self._target: dict[QueueKey, int] | None = None  # AvailableNow: where this run ends
        self._last_end: dict[QueueKey, int] | None = None  # for runtimes that pass no start
        self._group_offsets: dict[QueueKey, int] | None = None  # last written as the group's offsets

    # the reader is pickled to executors: the metadata client (an event loop) stays behind
    def __getstate__(self) -> dict:
        return {"opts": self.opts, "_meta": None, "_addrs": {}, "_target": None, "_last_end": None,
                "_group_offsets": None}

    def _planner(self) -> SourcePlanner:
        if self._meta is None:
            self._meta = TopicMetadata(self.opts.name_server, self.opts.timeout)
        return SourcePlanner(self.opts, self._meta)

    def _queues(self, first: bool = False) -> dict[QueueKey, str]:
        """The subscription's queues now: a topic's new queues and new matching topics join here."""
        self._addrs.update(self._planner().queues(first=first))
        return self._addrs

    # -- offsets -------------------------------------------------------------------------------

    def initialOffset(self) -> dict:
        p = self._planner()
        keys = sorted(self._queues(first=True))
        start = p.starting(keys)
        self._last_end = start
        return nest(start)

    def prepareForTriggerAvailableNow(self) -> None:
        keys = sorted(self._queues())
        self._target = self._planner().meta.max_offsets(keys)

    def getDefaultReadLimit(self):
        n = self.opts.max_offsets_per_trigger
        if ReadMaxRows is None:
            return None
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        if start is not None:
            # ``start`` ends the last completed batch: Spark calls commit() only when it plans another
            # batch, so the end of an AvailableNow run would never reach the group otherwise
            self._commit_group(flatten(start))
        begin = flatten(start) if start is not None else dict(self._last_end or {})
        keys = sorted(self._queues())
        latest = self._planner().meta.max_offsets(keys)
        if self._target is not None:
            latest = {k: min(v, self._target[k]) if k in self._target else begin.get(k, v) for k, v in latest.items()}
        # a queue new to this query starts at its min offset (as Kafka's new partitions: earliest)
        new = [k for k in latest if k not in begin]
        if new:
            begin.update(self._planner().meta.min_offsets(new))
        latest = {k: max(v, begin[k]) for k, v in latest.items()}
        max_rows = None
        if limit is not None and ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows
        elif limit is None:
            max_rows = self.opts.max_offsets_per_trigger
        end = cap_by_total(begin, latest, max_rows) if max_rows else latest
        end = {**begin, **end}
        self._last_end = end
        return nest(end)

    def reportLatestOffset(self) -> dict | None:
        keys = sorted(self._addrs)
        return nest(self._planner().meta.max_offsets(keys)) if keys else None

    # -- batches ----------------------------------------------------------------------------------

    def partitions(self, start: dict, end: dict) -> list[QueueRangePartition]:
        p = self._planner()
        s, e = flatten(start), flatten(end)
        if s == e:
            return []
        keys = sorted(e)
        missing = [k for k in keys if k not in self._addrs]
        if missing:
            self._queues()
        new = [k for k in keys if k not in s]
        if new:  # planned from the min offset when the batch was planned: never a data loss
            s.update(p.meta.min_offsets(new))
        moving = [k for k in keys if e[k] > s[k]]
        s = p.check_data_loss(s, p.meta.min_offsets(moving)) if moving else s
        addrs = {k: self._addrs[k] for k in keys if k in self._addrs}
        ranges = [r for r in p.ranges(s, e) if r.key in addrs]
        return plan_partitions(ranges, addrs)

    def read(self, partition: QueueRangePartition) -> Iterator:
        return read_partition(self.opts, partition)

    def commit(self, end: dict) -> None:
        self._commit_group(flatten(end))

    def _commit_group(self, offsets: dict[QueueKey, int]) -> None:
        if self.opts.group and offsets and offsets != self._group_offsets:
            self._planner().meta.commit_group_offsets(self.opts.group, offsets)
            self._group_offsets = offsets

    def stop(self) -> None:
        if self._meta is not None:
            self._meta.close()
            self._meta = None

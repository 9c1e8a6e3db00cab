"""One read task's work: a queue's offset range, where to pull it, and the pull itself.

Shared by the batch reader (source.py) and the streaming reader (stream_reader.py); Spark
pickles :class:`QueueRangePartition` to the executors, which call :func:`read_partition`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from connectors.spark.offsets import OffsetRange
from connectors.spark.options import SourceOptions
from connectors.spark.pull_columns import PullColumns
from connectors.spark.range_puller import RangePuller

__all__ = ["QueueRangePartition", "plan_partitions", "read_partition"]


@dataclass
class QueueRangePartition(InputPartition):
    """One task's work: queue offsets ``[start, end)`` of one queue, and where to pull them."""

    range: OffsetRange
    addr: str

    def __post_init__(self) -> None:
        super().__init__(None)


def plan_partitions(ranges: list[OffsetRange], addrs: dict) -> list[QueueRangePartition]:
    return [QueueRangePartition(r, addrs[r.key]) for r in ranges]


def read_partition(opts: SourceOptions, part: QueueRangePartition) -> Iterator:
    """Arrow record batches of one partition (runs in the executor's Python worker)."""
    r = part.range
    puller = RangePuller(opts.name_server, part.addr, r.topic, r.broker, r.queue_id, r.start, r.end,
                         group=opts.pull_group, sub_expression=opts.sub_expression, batch=opts.pull_batch_size,
                         fail_on_data_loss=opts.fail_on_data_loss, timeout=opts.timeout)
    return PullColumns(r.broker, f"{r.topic}/{r.broker}/{r.queue_id}", puller.tags).batches(puller.answers())

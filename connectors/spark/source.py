"""The "rocketmq" data source: batch reads, and the entry to streaming reads and writes.

Planning (options, queues, offsets) runs on the driver when Spark asks for
partitions, so bad input fails there before any task starts; each task then
pulls one :class:`QueueRangePartition` with :class:`RangePuller`.
"""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader

from connectors.spark.options import SinkOptions, SourceOptions
from connectors.spark.planner import SourcePlanner
from connectors.spark.queue_range_partition import QueueRangePartition, plan_partitions, read_partition
from connectors.spark.rows import TOPIC_SCHEMA
from connectors.spark.topic_metadata import TopicMetadata

__all__ = ["RocketMQDataSource"]


class RocketMQBatchReader(DataSourceReader):
    def __init__(self, opts: SourceOptions):
        self.opts = opts

    def partitions(self) -> list[QueueRangePartition]:
        meta = TopicMetadata(self.opts.name_server, self.opts.timeout)
        try:
            ranges, addrs = SourcePlanner(self.opts, meta).plan_batch()
        finally:
            meta.close()
        return plan_partitions(ranges, addrs)

    def read(self, partition: QueueRangePartition) -> Iterator:
        return read_partition(self.opts, partition)


class RocketMQDataSource(DataSource):
    """``spark.read.format("rocketmq")``, ``readStream``, ``write`` and ``writeStream``: see docs/spark.md."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq"

    def schema(self) -> str:
        return TOPIC_SCHEMA

    def reader(self, schema) -> RocketMQBatchReader:
        return RocketMQBatchReader(SourceOptions.parse(self.options))

    def streamReader(self, schema):
        from connectors.spark.stream_reader import RocketMQStreamReader

        return RocketMQStreamReader(SourceOptions.parse(self.options, streaming=True))

    def writer(self, schema, overwrite: bool):
        from connectors.spark.sink import RocketMQWriter, check_sink_schema

        opts = SinkOptions.parse(self.options)
        check_sink_schema(schema, opts)
        return RocketMQWriter(opts, schema)

    def streamWriter(self, schema, overwrite: bool):
        from connectors.spark.sink import RocketMQStreamWriter, check_sink_schema

        opts = SinkOptions.parse(self.options)
        check_sink_schema(schema, opts)
        return RocketMQStreamWriter(opts, schema)

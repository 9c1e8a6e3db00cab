"""The "rocketmq-store" data source: a store's CommitLog files read offline, one partition per file.

For audits, backfills and migrations: ``spark.read.format("rocketmq-store")
.load(STORE_ROOT)`` gives the topic schema plus ``physicalOffset``,
``sysFlag``, ``bodyCRC`` and ``crcOk``. A ``topic`` option or an equality /
IN filter on ``topic`` is applied inside the scan; ``fromOffset`` /
``toOffset`` bound the physical offsets. Nothing is ever written to the store,
and a running broker's store can be read (up to its last complete record).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

try:  # filter pushdown: PySpark >= 4.1
    from pyspark.sql.datasource import EqualTo, In
except ImportError:  # PySpark 4.0: the ``topic`` option still filters inside the scan
    EqualTo = In = None

from connectors.spark.arrow_rows import ArrowBatcher
from connectors.spark.commitlog_scanner import CommitLogFile, list_commit_log_files, scan_file
from connectors.spark.errors import ConnectorError
from connectors.spark.options import StoreOptions
from connectors.spark.rows import STORE_SCHEMA

__all__ = ["RocketMQStoreDataSource"]


@dataclass
class CommitLogPartition(InputPartition):
    file: CommitLogFile

    def __post_init__(self) -> None:
        super().__init__(None)


class RocketMQStoreReader(DataSourceReader):
    def __init__(self, opts: StoreOptions):
        self.opts = opts
        self.topics: frozenset[str] | None = frozenset([opts.topic]) if opts.topic else None

    def partitions(self) -> list[CommitLogPartition]:
        try:
            files = list_commit_log_files(self.opts.root, self.opts.commit_log_dir)
        except OSError as e:
            raise ConnectorError(f"load path {self.opts.root!r}: {e}") from e
        lo, hi = self.opts.from_offset, self.opts.to_offset
        return [CommitLogPartition(f) for f in files
                if f.from_offset + f.size > lo and (hi is None or f.from_offset < hi)]

    def read(self, partition: CommitLogPartition) -> Iterator:
        broker = self.opts.broker_name  # the files do not name their broker: null unless the option says
        scan = scan_file(partition.file, self.opts.from_offset, self.opts.to_offset, self.topics)
        return ArrowBatcher(store=True).batches((m, broker, ok, crc) for m, ok, crc in scan)


class RocketMQStoreFilteringReader(RocketMQStoreReader):
    """The reader with ``topic = x`` / ``topic IN (...)`` pushed into the scan (PySpark >= 4.1, when
    ``spark.sql.python.filterPushdown.enabled`` is true: Spark refuses readers with pushFilters otherwise)."""

    def pushFilters(self, filters):
        for f in filters:
            if isinstance(f, EqualTo) and f.attribute == ("topic",):
                wanted = frozenset([f.value])
            elif isinstance(f, In) and f.attribute == ("topic",):
                wanted = frozenset(f.value)
            else:
                yield f
                continue
            self.topics = wanted if self.topics is None else self.topics & wanted


class RocketMQStoreDataSource(DataSource):
    """``spark.read.format("rocketmq-store").load(STORE_ROOT)``: see docs/spark.md."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq-store"

    def schema(self) -> str:
        return STORE_SCHEMA

    def reader(self, schema) -> RocketMQStoreReader:
        return RocketMQStoreReader(StoreOptions.parse(self.options))


class RocketMQStoreDataSourcePushdown(RocketMQStoreDataSource):
    """Registered instead of :class:`RocketMQStoreDataSource` where filter pushdown is enabled."""

    def reader(self, schema) -> RocketMQStoreFilteringReader:
        return RocketMQStoreFilteringReader(StoreOptions.parse(self.options))

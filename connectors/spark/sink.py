"""The "rocketmq" sink (batch and streaming): each task sends its rows with its own producer.

Columns: ``body`` (binary or string; ``value`` accepted as an alias), optional
``topic`` (else the ``topic`` option), ``tags``, ``keys`` (string or array),
``properties`` (map), ``shardingKey`` (same key -> same queue, in order) and
``delayTimeLevel``. Rows are encoded as batch entries in Arrow (sink_entries)
and go out in SEND_BATCH_MESSAGE batches cut by their exact size, a few in flight, and a task ends only when every send answered SEND_OK: at least
once. Every message gets a UNIQ_KEY derived from (query, batch, partition,
row), so a retried task sends the same keys again and duplicates can be
recognised downstream.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass

from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

try:  # PySpark >= 4.1: streaming writers may take Arrow batches too
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase
except ImportError:  # PySpark 4.0: rows
    from pyspark.sql.datasource import DataSourceStreamWriter as _StreamWriterBase

from connectors.spark.errors import ConnectorError
from connectors.spark.options import SinkOptions
from connectors.spark.send_pipeline import SendPipeline
from connectors.spark.sink_entries import SinkColumns, encode_entries
from remoting import run as run_loop

__all__ = ["RocketMQWriter", "RocketMQStreamWriter", "check_sink_schema", "uniq_key_prefix"]

_COLUMNS = {
    "body": ("binary", "string"),
    "value": ("binary", "string"),
    "topic": ("string",),
    "tags": ("string",),
    "keys": ("string", "array<string>"),
    "properties": ("map<string,string>",),
    "shardingkey": ("string",),
    "delaytimelevel": ("int", "bigint", "smallint", "tinyint"),
}


def check_sink_schema(schema, opts: SinkOptions) -> None:
    """Column names and types, checked on the driver (ConnectorError names the column)."""
    names = {f.name.lower(): f for f in schema.fields}
    if "body" not in names and "value" not in names:
        raise ConnectorError(f"the sink needs a 'body' (or 'value') column; got columns {[f.name for f in schema.fields]}")
    if "topic" not in names and not opts.topic:
        raise ConnectorError("the sink needs the topic option or a 'topic' column")
    for name, f in names.items():
        allowed = _COLUMNS.get(name)
        if allowed is not None and f.dataType.simpleString() not in allowed:
            raise ConnectorError(f"column {f.name}: type {f.dataType.simpleString()} not accepted "
                                 f"(expected {' or '.join(allowed)})")


def uniq_key_prefix(scope: str, partition: int) -> str:
    """20 hex digits naming (scope, partition); with the 12-digit row index a 32-digit UNIQ_KEY."""
    return hashlib.sha1(f"{scope}\x00{partition}".encode()).hexdigest()[:20].upper()


@dataclass
class SentCount(WriterCommitMessage):
    messages: int


def _task_scope(job_scope: str) -> tuple[str, int]:
    """(scope, partition) of the running task: the streaming query and batch when Spark tells them."""
    from pyspark import TaskContext

    tc = TaskContext.get()
    if tc is None:
        return job_scope, os.getpid()
    query = tc.getLocalProperty("sql.streaming.queryId")
    batch = tc.getLocalProperty("streaming.sql.batchId")
    scope = f"{query}/{batch}" if query and batch is not None else job_scope
    return scope, tc.partitionId()


def write_rows(opts: SinkOptions, schema, rows, job_scope: str) -> SentCount:
    scope, partition = _task_scope(job_scope)
    chunks = encode_entries(rows, SinkColumns(schema), opts.topic, uniq_key_prefix(scope, partition))
    pipeline = SendPipeline(opts.name_server, opts.producer_group, batch_bytes=opts.batch_bytes,
                            batch_size=opts.batch_size, depth=opts.in_flight, timeout=opts.timeout,
                            max_message_size=opts.max_message_size,
                            instance=f"spark-{os.getpid()}-{partition}-{uuid.uuid4().hex[:8]}")
    return SentCount(run_loop(pipeline.send_all(chunks)))


class RocketMQWriter(DataSourceArrowWriter):
    def __init__(self, opts: SinkOptions, schema):
        self.opts = opts
        self.schema = schema
        self.job = uuid.uuid4().hex  # made on the driver: the same in every attempt of every task

    def write(self, iterator) -> SentCount:
        return write_rows(self.opts, self.schema, iterator, self.job)

    def commit(self, messages) -> None:
        pass


class RocketMQStreamWriter(_StreamWriterBase):
    def __init__(self, opts: SinkOptions, schema):
        self.opts = opts
        self.schema = schema
        self.job = uuid.uuid4().hex

    def write(self, iterator) -> SentCount:
        return write_rows(self.opts, self.schema, iterator, self.job)

    def commit(self, messages, batchId: int) -> None:
        pass

    def abort(self, messages, batchId: int) -> None:
        pass

"""PySpark data sources for RocketMQ: ``register(spark)`` adds the formats "rocketmq" and "rocketmq-store".

Built on PySpark's Python Data Source API (no jar). Importing this package
does not import pyspark; :func:`register` does. Executors' Python workers
import the connector by package name, so the project root must be on their
``PYTHONPATH`` (``spark.executorEnv.PYTHONPATH``, or the environment a local
master inherits). See docs/spark.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register", "FORMATS"]

FORMATS = ("rocketmq", "rocketmq-store")


def register(spark: Any) -> None:
    """Register both formats with ``spark`` (a SparkSession)."""
    from connectors.spark.source import RocketMQDataSource
    from connectors.spark.store_source import RocketMQStoreDataSource, RocketMQStoreDataSourcePushdown

    spark.dataSource.register(RocketMQDataSource)
    pushdown = str(spark.conf.get("spark.sql.python.filterPushdown.enabled", "false")).lower() == "true"
    spark.dataSource.register(RocketMQStoreDataSourcePushdown if pushdown and _has_filters() else RocketMQStoreDataSource)


def _has_filters() -> bool:
    try:
        from pyspark.sql.datasource import EqualTo  # noqa: F401  (PySpark >= 4.1)
    except ImportError:
        return False
    return True

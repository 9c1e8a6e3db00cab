"""One local[2] SparkSession for the connector tests (UI off, few shuffle partitions).

Python Data Source workers are separate Python processes: they get this venv's
interpreter and the project root on PYTHONPATH, so they import ``connectors``
by package name.
"""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from tests.support import ROOT


def _java_ok() -> bool:
    return bool(shutil.which("java") or os.environ.get("JAVA_HOME"))


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed")
    if not _java_ok():
        pytest.skip("no Java runtime: PySpark needs java on PATH or JAVA_HOME")
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    paths = [str(ROOT), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    tmp = tmp_path_factory.mktemp("spark")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("rocketmq-connector-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.local.dir", str(tmp / "local"))
        .config("spark.sql.warehouse.dir", str(tmp / "warehouse"))
        .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    from connectors.spark import register

    register(session)
    assert pyspark.__version__
    yield session
    session.stop()

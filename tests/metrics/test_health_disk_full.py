"""``GET /health`` answers 503 while the store's disk is full and 200 once space is back (issue #12).

The store lives on a small tmpfs (root only; skips otherwise), as in tests/broker/test_disk_full.py.
"""

from __future__ import annotations

import json

import pytest

from tests.broker.helpers import BrokerProc
from tests.metrics.helpers import http_get
from tests.support import free_port, wait_until
from tests.tmpfs import MiB, SmallDisks, fill


@pytest.fixture
def small_disk(tmp_path, procs):
    disks = SmallDisks(tmp_path)
    yield disks.mount
    for p in reversed(procs):  # the broker stops before its disk goes
        p.stop()
    disks.unmount_all()


def _health(port: int) -> tuple[int, dict]:
    status, ctype, text = http_get(port, "/health")
    assert ctype == "application/json", ctype
    return status, json.loads(text)


def test_health_is_503_on_a_full_disk_and_200_when_space_returns(tmp_path, procs, small_disk):
    disk = small_disk(16)
    filler = disk / "filler"
    fill(filler, 15 * MiB)
    port = free_port()
    BrokerProc(tmp_path, "hfull", start_proc=procs.start, storePathRootDir=str(disk / "store"),
               mappedFileSizeConsumeQueue=800, maxHashSlotNum=1000, maxIndexNum=4000,
               metricsExporterType="PROM", metricsPromExporterHost="127.0.0.1",
               metricsPromExporterPort=port, metricsRefreshIntervalMillis=200).start()

    seen: dict = {}

    def unhealthy() -> bool:
        status, h = _health(port)
        seen.update(h, status=status)
        return status == 503

    wait_until(unhealthy, 15, interval=0.1, what="/health answers 503 on the full disk")
    assert seen["writable"] is False and seen["role"] == "ASYNC_MASTER", seen
    assert any("disk full" in r for r in seen["reasons"]), seen
    assert seen["diskRatio"] > 0.9, seen

    filler.unlink()

    def healthy() -> bool:
        status, h = _health(port)
        seen.clear()
        seen.update(h, status=status)
        return status == 200

    wait_until(healthy, 30, interval=0.2, what="/health answers 200 once space is back")
    assert seen["writable"] is True and "reasons" not in seen and seen["diskRatio"] < 0.5, seen

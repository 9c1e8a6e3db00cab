"""DLedger's latency histograms (openmessaging/dledger's DLedgerMetricsConstant names, unit
milliseconds, so on the wire ``dledger_append_entry_latency_milliseconds_*``).

* append: from a leader's propose to its commit (what a put waits for);
* replicate: one APPEND push to a follower until its answer.

Plain-integer histograms, written on the server's loop; the broker's collector renders them.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import HistogramMetricFamily

from common.metrics_exporter import histogram_family
from common.stats_counters import Histogram

__all__ = ["DLedgerTimings", "LATENCY_BUCKETS_MS"]

LATENCY_BUCKETS_MS = (1.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 3000.0)


class DLedgerTimings:
    def __init__(self) -> None:
        self.append = Histogram(LATENCY_BUCKETS_MS)
        self.replicate: dict[str, Histogram] = {}  # follower id -> histogram

    def observe_replicate(self, peer: str, ms: float) -> None:
        h = self.replicate.get(peer)
        if h is None:
            h = self.replicate[peer] = Histogram(LATENCY_BUCKETS_MS)
        h.observe(ms)

    def collect(self, names: list[str], base: list[str], group: str, self_id: str) -> Iterator[HistogramMetricFamily]:
        yield histogram_family("dledger_append_entry_latency_milliseconds", "DLedger append entry latency",
                               [*names, "group", "self_id"], [([*base, group, self_id], self.append)])
        yield histogram_family("dledger_replicate_entry_latency_milliseconds", "DLedger replicate entry latency",
                               [*names, "group", "self_id", "remote_id"],
                               [([*base, group, self_id, peer], h) for peer, h in list(self.replicate.items())])

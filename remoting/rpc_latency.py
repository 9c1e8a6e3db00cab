"""RPC latency as RocketMQ 5.x's RemotingMetricsManager exports it.

``rocketmq_rpc_latency`` (unit milliseconds, so on the wire
``rocketmq_rpc_latency_milliseconds_bucket{protocol_type, request_code, response_code,
is_long_polling}``; a pull answered late was held by long polling),
buckets 1, 3, 5, 7, 10, 100, 1000, 2000, 3000 ms as 5.x's view. Codes are named as 5.x's
RemotingHelper names them: the enum name in lower case ("send_message_v2", "success").

The clock starts when the request's read arrived (``Connection.received_at``: one clock read
per socket read, ``Endpoint.stamp_reads``, set by :meth:`RpcLatencyHook.install`) and stops when
the response is encoded: the hook only runs after responses, no per-request start is kept.
Late responses (``send_response``) are timed by the code that holds their request, in bulk
(:meth:`RpcLatencyHook.observe`): the send path once per read for all its answers, the
long-polling service per held pull. Oneway requests get no response and are not timed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.metrics_core import HistogramMetricFamily

from common.metrics_exporter import histogram_family
from common.stats_counters import Histogram
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand

__all__ = ["RpcLatencyHook", "RPC_LATENCY_BUCKETS_MS", "RPC_LATENCY_METRIC", "request_code_desc", "response_code_desc"]

RPC_LATENCY_METRIC = "rocketmq_rpc_latency_milliseconds"
RPC_LATENCY_BUCKETS_MS = (1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0)
_LONG_POLLING = 1 << 40


def request_code_desc(code: int) -> str:
    try:
        return RequestCode(code).name.lower()
    except ValueError:
        return str(code)


def response_code_desc(code: int) -> str:
    try:
        return ResponseCode(code).name.lower()
    except ValueError:
        return str(code)


class RpcLatencyHook:
    """An after-response RPCHook timing every answered request (see the module docstring)."""

    def __init__(self, base_labels: dict[str, str]):
        self._label_names = [*base_labels, "protocol_type", "request_code", "response_code", "is_long_polling"]
        self._base_values = list(base_labels.values())
        # key of (request code, response code, long polling) -> histogram; written on the loop only
        self.histograms: dict[int, Histogram] = {}
        self._codes: dict[int, tuple[int, int]] = {}

    def install(self, endpoint: Any) -> None:
        """Time the requests ``endpoint`` answers (an ``Endpoint`` of remoting.connection)."""
        endpoint.stamp_reads = True
        endpoint.add_rpc_hook(self, before=False, late=False)

    def do_before_request(self, conn: Any, request: RemotingCommand) -> None:
        return None  # the read's stamp is the start (installed with before=False)

    def do_after_response(self, conn: Any, request: RemotingCommand | None, response: RemotingCommand) -> None:
        if request is None:
            return  # a late answer (installed with late=False, so only when called directly): see observe
        # one int key per (request code, response code): no tuple to build per request
        key = (request.code << 16) ^ (response.code & 0xFFFF)
        h = self.histograms.get(key)
        if h is None:
            h = self._histogram(key, request.code, response.code)
        h.since(conn.received_at)

    def observe(self, code: int, response_code: int, received_at: float, n: int = 1,
                long_polling: bool = False) -> None:
        """``n`` answers to ``code`` with ``response_code``, all sent now for requests received at
        ``received_at`` (a ``Connection.received_at``): one histogram update for the lot."""
        key = (code << 16) ^ (response_code & 0xFFFF)
        if long_polling:
            key |= _LONG_POLLING
        h = self.histograms.get(key)
        if h is None:
            h = self._histogram(key, code, response_code)
        h.since(received_at, n)

    def timer(self, code: int, response_code: int) -> Callable[[float, int], None]:
        """:meth:`observe` for one (code, response code), its histogram found now:
        ``timer(code, rc)(received_at, n)`` records ``n`` answers sent now (the send path's
        SUCCESS answers, once per read)."""
        key = (code << 16) ^ (response_code & 0xFFFF)
        h = self.histograms.get(key)
        if h is None:
            h = self._histogram(key, code, response_code)
        return h.since

    def _histogram(self, key: int, code: int, response_code: int) -> Histogram:
        h = self.histograms[key] = Histogram(RPC_LATENCY_BUCKETS_MS)
        self._codes[key] = (code, response_code)
        return h

    def collect(self) -> Iterator[HistogramMetricFamily]:
        base = self._base_values
        codes = self._codes
        items = [([*base, "remoting", request_code_desc(codes[k][0]), response_code_desc(codes[k][1]),
                   "true" if k & _LONG_POLLING else "false"], h)
                 for k, h in list(self.histograms.items())]
        yield histogram_family(RPC_LATENCY_METRIC, "Rpc latency", self._label_names, items)

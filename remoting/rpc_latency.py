"""RPC latency as RocketMQ 5.x's RemotingMetricsManager exports it, taken by an RPCHook.

``rocketmq_rpc_latency`` (unit milliseconds, so on the wire
``rocketmq_rpc_latency_milliseconds_bucket{protocol_type, request_code, response_code,
is_long_polling}``; a pull answered late was held by long polling),
buckets 1, 3, 5, 7, 10, 100, 1000, 2000, 3000 ms as 5.x's view. Codes are named as 5.x's
RemotingHelper names them: the enum name in lower case ("send_message_v2", "success").

The clock starts in ``do_before_request`` and stops when the response is encoded; a late
response (``send_response``, e.g. a group-committed send or a held pull) is matched by its
opaque. Starts wait in a dict on the connection, so a connection that dies with requests
in flight takes them with it; oneway requests get no response and are not timed.
"""

from __future__ import annotations

import time
from bisect import bisect_left as _bisect
from collections.abc import Iterator
from typing import Any

from prometheus_client.metrics_core import HistogramMetricFamily

from common.metrics_exporter import LocalHistogram, histogram_family
from remoting.codes import RPC_ONEWAY, RequestCode, ResponseCode
from remoting.command import RemotingCommand

__all__ = ["RpcLatencyHook", "RPC_LATENCY_BUCKETS_MS", "RPC_LATENCY_METRIC", "request_code_desc", "response_code_desc"]

RPC_LATENCY_METRIC = "rocketmq_rpc_latency_milliseconds"
RPC_LATENCY_BUCKETS_MS = (1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0)
_KEY = "rpc_latency_t0"
_PULL = int(RequestCode.PULL_MESSAGE)
_LONG_POLLING = 1 << 40
_perf = time.perf_counter


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
    """An RPCHook (``Endpoint.add_rpc_hook``) timing every answered request."""

    def __init__(self, base_labels: dict[str, str]):
        self._label_names = [*base_labels, "protocol_type", "request_code", "response_code", "is_long_polling"]
        self._base_values = list(base_labels.values())
        # key of (request code, response code) -> histogram; written on the loop only
        self.histograms: dict[int, LocalHistogram] = {}
        self._codes: dict[int, tuple[int, int]] = {}

    def do_before_request(self, conn: Any, request: RemotingCommand) -> None:
        if request.flag & RPC_ONEWAY:
            return None
        starts = conn.attrs.get(_KEY)
        if starts is None:
            starts = conn.attrs[_KEY] = {}
        starts[request.opaque] = (request.code, _perf())
        return None

    def do_after_response(self, conn: Any, request: RemotingCommand | None, response: RemotingCommand) -> None:
        starts = conn.attrs.get(_KEY)
        if not starts:
            return
        started = starts.pop(response.opaque, None)
        if started is None:
            return
        code, t0 = started
        # one int key per (request code, response code, long polling): no tuple to build per request
        key = (code << 16) ^ (response.code & 0xFFFF)
        if request is None and code == _PULL:
            key |= _LONG_POLLING  # a pull answered late was held by long polling: 5.x labels it apart
        h = self.histograms.get(key)
        if h is None:
            h = self.histograms[key] = LocalHistogram(RPC_LATENCY_BUCKETS_MS)
            self._codes[key] = (code, response.code)
        ms = (_perf() - t0) * 1000.0
        h.counts[_bisect(RPC_LATENCY_BUCKETS_MS, ms)] += 1  # LocalHistogram.observe, inlined (hot path)
        h.total += ms

    def collect(self) -> Iterator[HistogramMetricFamily]:
        base = self._base_values
        codes = self._codes
        items = [([*base, "remoting", request_code_desc(codes[k][0]), response_code_desc(codes[k][1]),
                   "true" if k & _LONG_POLLING else "false"], h)
                 for k, h in list(self.histograms.items())]
        yield histogram_family(RPC_LATENCY_METRIC, "Rpc latency", self._label_names, items)

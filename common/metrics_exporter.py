"""The Prometheus side shared by the broker and the NameServer.

* :func:`parse_metrics_label` / :func:`check_exporter_type` validate RocketMQ 5.x's
  ``metricsLabel`` ("k:v,k:v") and ``metricsExporterType`` (DISABLE, PROM) keys.
* :func:`histogram_family` renders :class:`common.stats_counters.Histogram` s (bucket counts
  kept as plain integers, updated on the event loop without a lock) for a collector.
* :class:`PromHttpServer` serves ``GET /metrics`` (text format, or OpenMetrics when the
  scraper asks) and ``GET /health`` from the process's own asyncio loop.

Why an asyncio server rather than prometheus-client's threaded one: the health answer
and the start-up failure (port taken) belong to the loop that owns the state, and one
small handler covers both paths on one port. The exposition itself is rendered by
prometheus-client (``choose_encoder``) on a worker thread, so a big scrape does not
hold the loop; collectors only read data the loop publishes (atomic snapshots).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import HistogramMetricFamily

from common.config import ConfigError
from common.stats_counters import Histogram

__all__ = [
    "EXPORTER_TYPES",
    "MetricsStartError",
    "PromHttpServer",
    "cumulative_buckets",
    "histogram_family",
    "join_expositions",
    "parse_metrics_label",
    "check_exporter_type",
    "validate_metrics_keys",
]

log = logging.getLogger("metrics")

EXPORTER_TYPES = ("DISABLE", "PROM")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_RESERVED = frozenset({"cluster", "node_type", "node_id"})


class MetricsStartError(Exception):
    """The endpoint could not start (port taken...); the text names the config keys."""


def check_exporter_type(value: str) -> str:
    """Upper-cased ``metricsExporterType``; ConfigError names the key for anything else.

    (5.x also knows OTLP_GRPC and LOG; neither is served here, so they are refused rather
    than silently ignored.)
    """
    v = (value or "DISABLE").strip().upper()
    if v not in EXPORTER_TYPES:
        raise ConfigError(f"bad value for config key metricsExporterType: {value!r} (one of {', '.join(EXPORTER_TYPES)})")
    return v


def parse_metrics_label(text: str) -> dict[str, str]:
    """``metricsLabel`` ("k:v,k:v") as a dict; ConfigError names the key and the bad pair.

    RocketMQ 5.x logs and skips a malformed pair; a label silently missing from every
    series is worse than a refused start, so here it is an error.
    """
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        k, sep, v = item.partition(":")
        k, v = k.strip(), v.strip()
        if not sep or not k or ":" in v:
            raise ConfigError(f"bad value for config key metricsLabel: {item!r} is not key:value")
        if not _LABEL_NAME.match(k) or k.startswith("__"):
            raise ConfigError(f"bad value for config key metricsLabel: {k!r} is not a Prometheus label name")
        if k in _RESERVED:
            raise ConfigError(f"bad value for config key metricsLabel: {k!r} is set by the server itself")
        if "\n" in v or "\r" in v:
            raise ConfigError("bad value for config key metricsLabel: a value may not hold a line break")
        out[k] = v
    return out


def validate_metrics_keys(config: Any) -> bool:
    """Check a config's metrics keys (ConfigError names the key); True when PROM is on."""
    on = check_exporter_type(config.metricsExporterType) == "PROM"
    parse_metrics_label(config.metricsLabel)
    if not 0 <= config.metricsPromExporterPort < 65536:
        raise ConfigError(f"bad value for config key metricsPromExporterPort: {config.metricsPromExporterPort}")
    return on


def cumulative_buckets(bounds: tuple[float, ...], counts: list[int]) -> list[tuple[str, int]]:
    """A histogram's bucket counts (``counts[i]``: observations in bucket i, the last one +Inf) as
    prometheus-client's cumulative ``(le, count)`` pairs."""
    acc = 0
    out = []
    for bound, n in zip((*bounds, float("inf")), counts, strict=True):
        acc += n
        out.append(("+Inf" if bound == float("inf") else _fmt(bound), acc))
    return out


def _fmt(b: float) -> str:
    return str(int(b)) if float(b).is_integer() else repr(b)


def histogram_family(name: str, doc: str, labels: list[str],
                     items: Iterable[tuple[list[str], Histogram]]) -> HistogramMetricFamily:
    fam = HistogramMetricFamily(name, doc, labels=labels)
    for values, h in items:
        fam.add_metric(values, cumulative_buckets(h.bounds, list(h.counts)), h.total)
    return fam


_OPENMETRICS_EOF = b"# EOF\n"


def join_expositions(live: bytes, tail: bytes, content_type: str) -> bytes:
    """Two expositions with disjoint families as one (OpenMetrics: one ``# EOF``, at the end)."""
    if content_type.startswith("application/openmetrics-text") and live.endswith(_OPENMETRICS_EOF):
        return live[: -len(_OPENMETRICS_EOF)] + tail
    return live + tail


class PromHttpServer:
    """``GET /metrics`` and ``GET /health`` on one port, one request per connection."""

    MAX_HEAD = 8192
    READ_TIMEOUT_S = 5.0

    def __init__(self, host: str, port: int, registry: CollectorRegistry,
                 health: Callable[[], tuple[int, bytes]] | None = None, *, name: str = "metrics",
                 tail: Callable[[str, str], bytes] | None = None):
        self.host = host
        # tail(accept, content type): an exposition rendered ahead (cached families) to append
        self.tail = tail
        self.port = port
        self.registry = registry
        self.health = health
        self.name = name
        self._server: asyncio.base_events.Server | None = None
        # One thread: scrapes render in turn, and never take the default executor's threads.
        self._render = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{name}-render")
        self.scrapes = 0

    @property
    def bound_port(self) -> int:
        if self._server is None or not self._server.sockets:
            return self.port
        return self._server.sockets[0].getsockname()[1]

    async def start(self) -> None:
        """Listen; OSError (port taken, bad host) goes to the caller, which names the config key."""
        self._server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)
        log.info("%s: Prometheus endpoint on http://%s:%d/metrics", self.name, self.host, self.bound_port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None
        self._render.shutdown(wait=False, cancel_futures=True)

    def render(self, accept: str | None) -> tuple[bytes, str]:
        """The exposition for this Accept header (runs on the render thread)."""
        encoder, content_type = choose_encoder(accept or "")
        body = encoder(self.registry)
        if self.tail is not None:
            body = join_expositions(body, self.tail(accept or "", content_type), content_type)
        return body, content_type

    async def run_render(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn`` on the render thread (work that must not hold the loop)."""
        return await asyncio.get_running_loop().run_in_executor(self._render, fn, *args)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.READ_TIMEOUT_S)
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            if len(head) > self.MAX_HEAD:
                await self._reply(writer, 431, b"request header too large\n")
                return
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3 or not parts[2].startswith("HTTP/"):
                await self._reply(writer, 400, b"bad request line\n")
                return
            method, target = parts[0], parts[1]
            headers = {}
            for line in lines[1:]:
                k, sep, v = line.partition(":")
                if sep:
                    headers[k.strip().lower()] = v.strip()
            path = target.split("?", 1)[0]
            if method not in ("GET", "HEAD"):
                await self._reply(writer, 405, b"only GET is served\n", extra={"Allow": "GET, HEAD"})
                return
            if path == "/metrics":
                loop = asyncio.get_running_loop()
                body, ctype = await loop.run_in_executor(self._render, self.render, headers.get("accept"))
                self.scrapes += 1
                await self._reply(writer, 200, body, ctype, head_only=method == "HEAD")
            elif path == "/health" and self.health is not None:
                status, body = self.health()
                await self._reply(writer, status, body, "application/json", head_only=method == "HEAD")
            elif path == "/":
                await self._reply(writer, 200, b"metrics at /metrics, health at /health\n")
            else:
                await self._reply(writer, 404, b"not found: try /metrics or /health\n")
        except Exception:  # noqa: BLE001 - one bad request must not stop the endpoint
            log.exception("%s: request failed", self.name)
            with contextlib.suppress(Exception):
                await self._reply(writer, 500, b"internal error\n")
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    _REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}

    async def _reply(self, writer: asyncio.StreamWriter, status: int, body: bytes,
                     ctype: str = "text/plain; charset=utf-8", *, head_only: bool = False,
                     extra: dict[str, Any] | None = None) -> None:
        hdr = [f"HTTP/1.1 {status} {self._REASONS.get(status, 'Status')}", f"Content-Type: {ctype}",
               f"Content-Length: {len(body)}", "Connection: close"]
        for k, v in (extra or {}).items():
            hdr.append(f"{k}: {v}")
        writer.write(("\r\n".join(hdr) + "\r\n\r\n").encode("latin-1"))
        if not head_only:
            writer.write(body)
        with contextlib.suppress(ConnectionError):
            await writer.drain()

"""Scraping helpers: an HTTP GET over loopback and prometheus-client's own parser."""

from __future__ import annotations

import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def http_get(port: int, path: str = "/metrics", accept: str | None = None, timeout: float = 5.0) -> tuple[int, str, str]:
    """(status, content type, body) of GET http://127.0.0.1:port/path."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if accept:
        req.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample name -> [(labels, value)] of one scrape (``_bucket``/``_total`` samples by their own names)."""
    status, _ctype, text = http_get(port)
    assert status == 200, text
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def value(samples: dict, name: str, **labels: str) -> float | None:
    """Sum of the samples of ``name`` whose labels include ``labels``; None when none match."""
    found = [v for lab, v in samples.get(name, []) if all(lab.get(k) == want for k, want in labels.items())]
    return sum(found) if found else None


_SUFFIXES = {"histogram": ("_bucket", "_count", "_sum"), "counter": ("_total",), "summary": ("_count", "_sum")}


def served_names(port: int) -> set[str]:
    """Sample names of one scrape plus those of families announced without series yet."""
    status, _ctype, text = http_get(port)
    assert status == 200, text
    names = set()
    for fam in text_string_to_metric_families(text):
        names.update(s.name for s in fam.samples)
        names.update(fam.name + sfx for sfx in _SUFFIXES.get(fam.type, ("",)))
    return names

"""A real cluster (NameServer + 2 brokers) and a real bin/mqdashboard process, and a small HTTP client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from tests.client.cluster import Cluster
from tests.support import Proc, free_port

TOKEN = "t0ken-for-tests"


class Dashboard:
    def __init__(self, root: Path, token: str | None = TOKEN, sample_interval: float = 0.5):
        self.cluster = Cluster(root, brokers=2)
        self.port = free_port()
        args = ["mqdashboard", "-n", self.cluster.namesrv_addr, "--port", str(self.port),
                "--sample-interval", str(sample_interval)]
        if token:
            args += ["--admin-token", token]
        self.token = token
        self.proc = Proc("dashboard", args, root)
        self.proc.wait_port(self.port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def call(self, method: str, path: str, body=None, token: str | None = "default", headers: dict | None = None,
             raw: bool = False):
        """(status, headers, decoded JSON body or raw bytes)."""
        h = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body).encode() if not isinstance(body, bytes) else body
            h.setdefault("Content-Type", "application/json")
        tok = self.token if token == "default" else token
        if tok:
            h["X-Admin-Token"] = tok
        req = urllib.request.Request(self.url + path, data=data, headers=h, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                payload = r.read()
                return r.status, dict(r.headers), payload if raw else json.loads(payload)
        except urllib.error.HTTPError as e:
            payload = e.read()
            return e.code, dict(e.headers), payload if raw else json.loads(payload)

    def ok(self, method: str, path: str, body=None, **kw):
        status, _h, data = self.call(method, path, body, **kw)
        assert 200 <= status < 300, f"{method} {path} -> {status}: {data}"
        return data

    def stop(self) -> None:
        try:
            self.proc.stop()
        finally:
            self.cluster.stop()

"""The package layers: each imports only the ones before it.

common -> remoting -> dledger -> store -> broker / namesrv; the client uses
only common and remoting; embedded sits on broker and namesrv; connectors (the
PySpark data sources) use common, remoting, client and the store's file readers;
tools may use anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

ALLOWED = {
    "common": {"common"},
    "remoting": {"common", "remoting"},
    "dledger": {"common", "remoting", "dledger"},
    "store": {"common", "remoting", "dledger", "store"},
    "broker": {"common", "remoting", "dledger", "store", "broker"},
    "namesrv": {"common", "remoting", "namesrv"},
    # the web dashboard sits on the client (its admin layer)
    "dashboard": {"common", "remoting", "client", "dashboard"},
    "client": {"common", "remoting", "client"},
    # the embedded cluster runs the server side in-process: on top of broker and namesrv
    "embedded": {"common", "remoting", "dledger", "store", "broker", "namesrv", "embedded"},
    "connectors": {"common", "remoting", "client", "store", "connectors"},
}
PROJECT = set(ALLOWED) | {"tools", "tests", "bench"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & PROJECT


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_lower_layers(package):
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        wrong = _imports(path) - ALLOWED[package]
        if wrong:
            bad.append(f"{path.relative_to(ROOT)} imports {sorted(wrong)}")
    assert not bad, "layer violations:\n" + "\n".join(bad)

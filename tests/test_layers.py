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


def _module_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (function-level imports included; ``if
    TYPE_CHECKING:`` blocks left out, they never run)."""
    mods: dict[str, Path] = {}
    for package in sorted(set(ALLOWED) | {"tools"}):
        for path in (ROOT / package).rglob("*.py"):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = path

    def known(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = {id(n) for node in ast.walk(tree)
                if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                for n in ast.walk(node)}
        pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
        out: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                out.update(filter(None, (known(a.name) for a in node.names)))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                for a in node.names:
                    full = f"{base}.{a.name}"
                    target = full if full in mods else known(base)
                    if target:
                        out.add(target)
        out.discard(name)
        graph[name] = out
    return graph


def test_no_import_cycle_between_modules():
    graph = _module_graph()
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    cycles: list[str] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(" -> ".join([*path[path.index(t):], t]))
            elif t not in state:
                visit(t, [*path, t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)

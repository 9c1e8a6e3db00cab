"""pytest plugin (entry point ``pytest11``: rocketmq): fixtures that give a test a real cluster.

* ``rocketmq_cluster``: a fresh EmbeddedCluster for one test. Shape and broker config come from
  the ``rocketmq`` marker: ``@pytest.mark.rocketmq(brokers=1, dledger_group=3, slaves=0,
  flushDiskType="SYNC_FLUSH")``, else from the command-line options below.
* ``rocketmq_cluster_session``: one cluster shared by the whole session (options only).

Options: ``--rocketmq-brokers N``, ``--rocketmq-dledger N`` (a DLedger group of N per broker),
``--rocketmq-slaves N``, ``--rocketmq-broker-config KEY=VALUE`` (repeatable).

Both fixtures yield the cluster in its blocking form (it runs on a loop thread of its own), so
they serve plain and asyncio tests alike: ``cluster.namesrv_addr`` is all a client needs, and
``cluster.kill(b)`` / ``cluster.restart(b)`` / ``cluster.wait_leader()`` block until done.
"""

from __future__ import annotations

from typing import Any

import pytest

_PRODUCT = ("common", "remoting", "dledger", "store", "broker", "namesrv", "client", "tools", "embedded")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Leave rocketmq-py's own packages out of assert rewriting.

    pytest marks every top-level package of a plugin's distribution for rewriting; ours are
    product code, not tests: rewriting them only costs import time, and on CPython 3.11 a module
    rewritten in the cluster's loop thread while the test's thread imports another can fail
    ("AST constructor recursion depth mismatch"). pytest has no public way to unmark a package,
    so this reaches into its import hook, and does nothing where its internals differ (the
    fixtures import everything up front anyway, see _import_everything_here).
    """
    hook = early_config.pluginmanager.rewrite_hook
    marked = getattr(hook, "_must_rewrite", None)
    if isinstance(marked, set):
        marked.difference_update(_PRODUCT)
        cache = getattr(hook, "_marked_for_rewrite_cache", None)
        if isinstance(cache, dict):
            cache.clear()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("rocketmq", "embedded RocketMQ cluster (rocketmq-py)")
    g.addoption("--rocketmq-brokers", type=int, default=1, help="broker names in the cluster (default 1)")
    g.addoption("--rocketmq-dledger", type=int, default=0, help="DLedger group size per broker (0: classic)")
    g.addoption("--rocketmq-slaves", type=int, default=0, help="slaves per master (classic only)")
    g.addoption("--rocketmq-broker-config", action="append", default=[], metavar="KEY=VALUE",
                help="a broker config key for every broker (repeatable)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "rocketmq(brokers=1, dledger_group=0, slaves=0, **broker_config): shape of the rocketmq_cluster fixture",
    )


def _options(config: pytest.Config) -> dict[str, Any]:
    broker_config: dict[str, str] = {}
    for item in config.getoption("--rocketmq-broker-config"):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"--rocketmq-broker-config takes KEY=VALUE, not {item!r}")
        broker_config[key.strip()] = value.strip()
    return {
        "brokers": config.getoption("--rocketmq-brokers"),
        "dledger_group": config.getoption("--rocketmq-dledger"),
        "slaves": config.getoption("--rocketmq-slaves"),
        **broker_config,
    }


_SERVER_AND_CLIENT = ("common", "remoting", "dledger", "store", "broker", "namesrv", "client", "embedded")


def _import_everything_here() -> None:
    """Import every module of the server stack and the client in this (the main) thread, once.

    pytest rewrites the asserts of every package of a plugin's distribution at import, and on
    CPython 3.11 compiling in two threads at once can fail ("AST constructor recursion depth
    mismatch"); the cluster's loop thread would otherwise import lazily-loaded modules while the
    test's thread imports its own.
    """
    import importlib
    import pkgutil

    for top in _SERVER_AND_CLIENT:
        pkg = importlib.import_module(top)
        for info in pkgutil.walk_packages(pkg.__path__, top + "."):
            if not info.name.rsplit(".", 1)[-1].startswith("_"):
                importlib.import_module(info.name)


def _start(kwargs: dict[str, Any]):
    from embedded.cluster import EmbeddedCluster  # the broker stack is imported only when a test asks

    _import_everything_here()

    cluster = EmbeddedCluster(**kwargs)
    cluster.__enter__()
    return cluster


@pytest.fixture
def rocketmq_cluster(request: pytest.FixtureRequest):
    """A fresh embedded cluster for this test (see the module docstring)."""
    kwargs = _options(request.config)
    marker = request.node.get_closest_marker("rocketmq")
    if marker is not None:
        if marker.args:
            raise pytest.UsageError("the rocketmq marker takes keyword arguments only")
        kwargs.update(marker.kwargs)
    cluster = _start(kwargs)
    try:
        yield cluster
    finally:
        cluster.__exit__(None, None, None)


@pytest.fixture(scope="session")
def rocketmq_cluster_session(pytestconfig: pytest.Config):
    """One embedded cluster for the whole session, shaped by the command-line options."""
    cluster = _start(_options(pytestconfig))
    try:
        yield cluster
    finally:
        cluster.__exit__(None, None, None)

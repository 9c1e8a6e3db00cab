"""The pytest plugin (entry point pytest11 "rocketmq") used from an outside project in a temp dir."""

from __future__ import annotations

import importlib.metadata
import tomllib

import pytest

from tests.support import ROOT

pytest_plugins = ["pytester"]

APP_TESTS = '''
import time

import pytest

from client import ConsumeFromWhere, Message
from client.blocking import BlockingLitePullConsumer, BlockingProducer
from client.client_config import ClientConfig


def send(addr, topic, bodies):
    with BlockingProducer("app_pg", config=ClientConfig(namesrv_addr=addr, poll_name_server_interval=0.2)) as p:
        for b in bodies:
            assert p.send(Message(topic, b)).send_status.name == "SEND_OK"


def read(addr, topic, group, n):
    c = BlockingLitePullConsumer(group, addr, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    c.subscribe(topic)
    got, deadline = [], time.monotonic() + 20
    with c:
        while len(got) < n and time.monotonic() < deadline:
            got.extend(m.body for m in c.poll(0.2))
    return sorted(got)


def test_produce_and_consume(rocketmq_cluster):
    send(rocketmq_cluster.namesrv_addr, "AppTopic", [b"a", b"b", b"c"])
    assert read(rocketmq_cluster.namesrv_addr, "AppTopic", "app_cg", 3) == [b"a", b"b", b"c"]


def test_restart_keeps_messages(rocketmq_cluster):
    send(rocketmq_cluster.namesrv_addr, "AppKeep", [b"kept"])
    rocketmq_cluster.restart(rocketmq_cluster.brokers[0])
    assert read(rocketmq_cluster.namesrv_addr, "AppKeep", "app_cg2", 1) == [b"kept"]


@pytest.mark.rocketmq(dledger_group=3)
def test_kill_the_dledger_leader(rocketmq_cluster):
    old = rocketmq_cluster.leader()
    assert old is not None and len(rocketmq_cluster.brokers) == 3
    rocketmq_cluster.kill(old)
    new = rocketmq_cluster.wait_leader(timeout=15)
    assert new is not old and new.dledger_role == "leader"


def test_session_cluster_is_shared(rocketmq_cluster_session, request):
    assert rocketmq_cluster_session.namesrv_addr.startswith("127.0.0.1:")
    assert request.getfixturevalue("rocketmq_cluster_session") is rocketmq_cluster_session


def test_product_code_is_not_assert_rewritten(rocketmq_cluster):
    import dledger.entry_pusher

    assert "@py_builtins" not in vars(dledger.entry_pusher)  # pytest would mark every package of ours


@pytest.mark.rocketmq(flushDiskType="SYNC_FLUSH")
def test_marker_broker_config(rocketmq_cluster):
    assert rocketmq_cluster.brokers[0].broker.configs.store.flushDiskType.name == "SYNC_FLUSH"
'''


def test_entry_point_is_declared_and_installed():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert declared == {"rocketmq": "embedded.pytest_plugin"}
    installed = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    if installed.get("rocketmq") != "embedded.pytest_plugin":
        pytest.fail("the installed rocketmq-py lacks its pytest11 entry point: reinstall it (make test does)")


def test_fixtures_from_an_outside_project(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the project under test, as `pip install` would give it
    pytester.makepyfile(test_app=APP_TESTS)
    # no -p: the plugin is found through its entry point, as in any project that installed rocketmq-py
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", "-o", "timeout=100", timeout=400)
    result.assert_outcomes(passed=6)


def test_bad_marker_config_is_a_clear_error(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makepyfile(test_bad='''
import pytest

@pytest.mark.rocketmq(flushDiskType="SOMETIMES")
def test_x(rocketmq_cluster):
    pass
''')
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ConfigError*flushDiskType*"])

"""Broker test fixtures: one real bin/mqbroker per module for the request tests."""

from __future__ import annotations

import pytest

from tests.broker.helpers import BrokerProc


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory):
    """A broker process shared by the tests of one module (autoCreateTopicEnable on, no NameServer)."""
    b = BrokerProc(tmp_path_factory.mktemp("broker"), "shared")
    b.start()
    yield b
    b.stop()


@pytest.fixture
def broker_factory(procs, tmp_path):
    """Start a broker of its own with extra config keys: ``broker_factory(name, **props)``."""

    def make(name: str = "b", start: bool = True, **extra) -> BrokerProc:
        b = BrokerProc(tmp_path, name, start_proc=procs.start, **extra)
        return b.start() if start else b

    return make

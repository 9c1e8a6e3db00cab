"""Fixtures for the semantics tests: a real bin/mqbroker with short delay levels and check intervals."""

from __future__ import annotations

import pytest

from tests.broker.helpers import BrokerProc


@pytest.fixture
def broker_factory(procs, tmp_path):
    """``broker_factory(name, env=None, **props)`` -> a started BrokerProc (stopped at teardown)."""

    def make(name: str = "b", env: dict | None = None, start: bool = True, **props) -> BrokerProc:
        def start_proc(label, args):
            return procs.start(label, args, env=env)

        b = BrokerProc(tmp_path, name, start_proc=start_proc, **props)
        if start:
            b.start()
        return b

    return make

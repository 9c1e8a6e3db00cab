"""Fixtures for remoting socket tests: a real server on a loopback port and a client, under both loops."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from remoting.client import RemotingClient
from remoting.server import RemotingServer


@pytest.hookimpl(optionalhook=True)  # pytest-asyncio >= 1.x; older versions run the default loop only
def pytest_asyncio_loop_factories(config, item):
    """Every async test here runs on the default loop and on uvloop (what the processes use)."""
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


@pytest.fixture
async def server():
    srv = RemotingServer("127.0.0.1", 0, name="test-server")
    await srv.start()
    yield srv
    await srv.stop(grace=1.0)


@pytest.fixture
async def client():
    cli = RemotingClient(connect_timeout=2.0, name="test-client")
    yield cli
    await cli.close()


@pytest.fixture
def addr(server):
    return f"127.0.0.1:{server.port}"

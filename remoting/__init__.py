"""rocketmq-py remoting: the RocketMQ wire protocol (codec) and its asyncio server/client.

Layers: :mod:`remoting.codes` (numeric codes), :mod:`remoting.command`
(RemotingCommand), :mod:`remoting.codec` (sans-IO frames), :mod:`remoting.connection`
(the shared asyncio protocol), :mod:`remoting.server` and :mod:`remoting.client`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from remoting import codes
from remoting.client import RemotingClient
from remoting.codes import *  # noqa: F403 - the package re-exports every code
from remoting.command import RemotingCommand
from remoting.errors import (
    LocalProtocolError,
    RemoteProtocolError,
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)
from remoting.server import Connection, RemotingServer

__all__ = [
    *codes.__all__,
    "RemotingCommand",
    "RemotingServer",
    "RemotingClient",
    "Connection",
    "RemotingError",
    "RemoteProtocolError",
    "LocalProtocolError",
    "RemotingConnectError",
    "RemotingTimeoutError",
    "RemotingSendRequestError",
    "new_event_loop",
    "run",
]

T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop when uvloop is installed, else the default asyncio loop."""
    try:
        import uvloop  # here: ~35 ms that only a process running a loop needs (import time of the library)
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(main: Coroutine[Any, Any, T], *, debug: bool | None = None) -> T:
    """``asyncio.run`` on uvloop when available (the library itself never forces uvloop)."""
    with asyncio.Runner(loop_factory=new_event_loop, debug=debug) as runner:
        return runner.run(main)

"""What the main of every server process does alike: log set-up and the orderly stop on a signal."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from typing import TextIO

__all__ = ["stop_on_signals", "configure_server_logging"]


def stop_on_signals() -> asyncio.Event:
    """An event the running loop sets on SIGTERM or SIGINT: the process then stops in order."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


def configure_server_logging(stream: TextIO | None = None) -> None:
    """Log lines as the servers write them, at ``ROCKETMQ_LOG_LEVEL`` (INFO by default), to stdout."""
    logging.basicConfig(
        level=os.environ.get("ROCKETMQ_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s - %(message)s",
        stream=stream or sys.stdout,
    )

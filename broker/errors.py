"""The broker side's errors, under common.errors.RocketMQError."""

from __future__ import annotations

from common.errors import RocketMQError

__all__ = ["BrokerError", "BrokerStartError", "ConfigFileError"]


class BrokerError(RocketMQError):
    """Root of the broker's errors."""


class BrokerStartError(BrokerError, RuntimeError):
    """The broker cannot start (store load failed, port in use, ...); the message says why."""


class ConfigFileError(BrokerError, ValueError):
    """Both a config file and its .bak are unreadable."""

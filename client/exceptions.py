"""Client errors, as the Java client's MQClientException / MQBrokerException."""

from __future__ import annotations

__all__ = ["MQClientError", "MQBrokerError", "RequestTimeoutError"]


class MQClientError(Exception):
    """A client-side failure: bad argument, no route, not started, every retry failed."""

    def __init__(self, message: str, code: int = -1):
        super().__init__(message)
        self.code = code


class MQBrokerError(Exception):
    """The broker (or NameServer) answered with an error ``code`` and ``remark``."""

    def __init__(self, code: int, remark: str | None, addr: str = ""):
        super().__init__(f"CODE: {code} DESC: {remark or ''}" + (f" BROKER: {addr}" if addr else ""))
        self.code = code
        self.remark = remark or ""
        self.addr = addr


class RequestTimeoutError(MQClientError):
    """The overall send timeout elapsed before a send could complete."""

"""Client errors, as the Java client's MQClientException / MQBrokerException, under one root.

``ClientError`` (under common.errors.RocketMQError) is the client side's root. Every client error
carries its response ``code`` (-1 when there is none) and ``retriable``: whether sending again, to
another broker, can help. For broker answers that is decided by the code (the Java producer's
retry list, RETRIABLE_BROKER_CODES), as aiokafka's error registry decides by its codes.
"""

from __future__ import annotations

from common.errors import RocketMQError
from remoting.codes import ResponseCode

__all__ = ["ClientError", "MQClientError", "MQBrokerError", "RequestTimeoutError", "RETRIABLE_BROKER_CODES"]

#: Broker codes after which the Java producer (4.9.7 DefaultMQProducerImpl) retries on another broker.
RETRIABLE_BROKER_CODES = frozenset({
    ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR,
    ResponseCode.NO_PERMISSION, ResponseCode.NO_BUYER_ID, ResponseCode.NOT_IN_CURRENT_UNIT,
})


class ClientError(RocketMQError):
    """Root of the client's errors: ``code`` (the response code, -1 for none) and ``retriable``."""

    code: int = -1
    retriable: bool = False


class MQClientError(ClientError):
    """A client-side failure: bad argument, no route, not started, every retry failed."""

    def __init__(self, message: str, code: int = -1, *, retriable: bool = False):
        super().__init__(message)
        self.code = code
        self.retriable = retriable


class MQBrokerError(ClientError):
    """The broker (or NameServer) answered with an error ``code`` and ``remark``."""

    def __init__(self, code: int, remark: str | None, addr: str = ""):
        super().__init__(f"CODE: {code} DESC: {remark or ''}" + (f" BROKER: {addr}" if addr else ""))
        self.code = code
        self.remark = remark or ""
        self.addr = addr
        self.retriable = code in RETRIABLE_BROKER_CODES


class RequestTimeoutError(MQClientError):
    """The overall send timeout elapsed before a send could complete (nothing left to retry in)."""

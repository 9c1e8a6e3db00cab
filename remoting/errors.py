"""Exception roots of the remoting layer.

As in h11, a protocol error is either the peer's fault
(:class:`RemoteProtocolError`: a malformed frame; the connection is closed) or
the caller's (:class:`LocalProtocolError`: e.g. a command that cannot be
encoded). The others describe what happened to one request on the wire.
"""

from __future__ import annotations

from common.errors import RocketMQError

__all__ = [
    "RemotingError",
    "RemoteProtocolError",
    "HeaderTextError",
    "LocalProtocolError",
    "RemotingConnectError",
    "RemotingTimeoutError",
    "RemotingSendRequestError",
]


class RemotingError(RocketMQError):
    """Base of every remoting error."""


class RemoteProtocolError(RemotingError):
    """The peer broke the protocol (malformed or oversized frame)."""

    def __init__(self, msg: str, frames: list | None = None):
        super().__init__(msg)
        #: commands decoded completely before the bad bytes (still worth serving).
        self.frames: list = frames or []


class HeaderTextError(RemoteProtocolError):
    """A header's text is not UTF-8 though the frame is sound: only that request is refused.

    ``command`` (code, opaque, flag, serialize type; no fields) identifies the request when the
    header got that far, so it can be answered and the connection kept.
    """

    def __init__(self, msg: str, command=None):
        super().__init__(msg)
        self.command = command


class LocalProtocolError(RemotingError):
    """The caller misused the API, e.g. asked to encode something invalid."""


class RemotingConnectError(RemotingError):
    """A connection to the address could not be established."""


class RemotingTimeoutError(RemotingError):
    """No response arrived within the request's timeout."""


class RemotingSendRequestError(RemotingError):
    """The connection was lost (or was closed) while the request was pending; the cause is chained."""

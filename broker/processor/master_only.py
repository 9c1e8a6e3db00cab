"""The admin changes a slave refuses: topics and subscription groups are changed on the master only
(its tables reach the slaves by SlaveSynchronize), with 4.9.7's SYSTEM_ERROR and remark."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from broker.role_state import RoleState
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection

__all__ = ["master_only", "SLAVE_REFUSAL"]

SLAVE_REFUSAL = "Can't modify topic or subscription group from slave broker"


class _RoleHolder(Protocol):
    role: RoleState


_H = TypeVar("_H", bound=_RoleHolder)
_Handler = Callable[[_H, RemotingCommand, Any], RemotingCommand]


def master_only(handler: _Handler) -> _Handler:
    """Wrap a request handler of a processor that holds the broker's RoleState as ``role``: while the
    broker is a slave (read per request) the request is answered with the refusal instead."""

    @functools.wraps(handler)
    def guarded(self: _H, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        if self.role.is_slave:
            return req.response_to(ResponseCode.SYSTEM_ERROR, SLAVE_REFUSAL)
        return handler(self, req, conn)

    return guarded

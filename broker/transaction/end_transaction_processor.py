"""END_TRANSACTION (37): commit or roll back a half message (spec broker-behaviour.md §10).

Type 0 (unknown) or any other value gets no response and changes nothing. A
SLAVE answers SLAVE_NOT_AVAILABLE. The half message is looked up by
``commitLogOffset`` and must match the header's producer group, queue offset
and commit-log offset. Commit writes the final message then the op marker;
rollback writes the op marker. Ending the same transaction again is a no-op
(SUCCESS); the opposite decision after the first gets SYSTEM_ERROR.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from broker.processor.send_message_remarks import put_status_to_response
from broker.role_state import RoleState
from broker.transaction.transactional_message_service import COMMIT, ROLLBACK, TransactionalMessageService
from broker.transaction.transactional_message_util import HALF_TOPIC
from common.message import MessageConst
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header import HeaderError
from remoting.header.broker import EndTransactionRequestHeader
from store.message_store import MessageStore

__all__ = ["EndTransactionProcessor"]

log = logging.getLogger(__name__)


class EndTransactionProcessor:
    """Handler for END_TRANSACTION; the role is read per request (DLedger role changes)."""

    def __init__(self, service: TransactionalMessageService, store: MessageStore, *, role: RoleState,
                 max_message_size: int = 4 * 1024 * 1024, rewrite_delay: Callable[[Any], Any] | None = None):
        self.service = service
        self.store = store
        self.role = role
        self.max_message_size = max_message_size
        self.rewrite_delay = rewrite_delay
        self.committed = 0
        self.rolled_back = 0

    def __call__(self, req: RemotingCommand, conn: Connection) -> RemotingCommand | Awaitable[RemotingCommand] | None:
        if self.role.is_slave:
            return req.response_to(ResponseCode.SLAVE_NOT_AVAILABLE, "Store slave, can not be used to end transaction")
        try:
            h = req.decode_header(EndTransactionRequestHeader)
        except HeaderError as e:
            return req.response_to(ResponseCode.SYSTEM_ERROR, str(e))
        kind = h.commitOrRollback
        if kind not in (COMMIT, ROLLBACK):
            if kind != 0:
                log.warning("END_TRANSACTION with unknown type %s from %s", kind, conn.remote_addr)
            return None
        half = self.service.find_half(h.commitLogOffset)
        if half is None or half.topic != HALF_TOPIC:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        if half.properties.get(MessageConst.PRODUCER_GROUP) != h.producerGroup:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "The producer group wrong")
        if half.queue_offset != h.tranStateTableOffset:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong")
        if half.commit_log_offset != h.commitLogOffset:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "The commit log offset wrong")
        return self._end(req, half, kind, h.commitLogOffset)

    async def _end(self, req: RemotingCommand, half: Any, kind: int, commit_log_offset: int) -> RemotingCommand:
        """Write the decision and answer once it is stored (DLedger: on a quorum). A failed write
        answers the error: the half message stays unresolved and the check comes back."""
        result = await self.service.end_transaction(half, kind, commit_log_offset, self._put_final)
        if result.code == ResponseCode.SUCCESS and not result.duplicate:
            if kind == COMMIT:
                self.committed += 1
            else:
                self.rolled_back += 1
        return req.response_to(result.code, result.remark)

    async def _put_final(self, inner) -> tuple[int, str | None, bool, int]:
        """(code, remark, stored, commit-log offset of an appended but unconfirmed message or -1)."""
        if self.rewrite_delay is not None:
            inner = self.rewrite_delay(inner)  # a committed delayed message waits in SCHEDULE_TOPIC_XXXX
        r = await self.store.put_message_async(inner)
        if r is None:
            return ResponseCode.SYSTEM_ERROR, "store putMessage return null", False, -1
        code, remark, stored = put_status_to_response(r.status.name, self.max_message_size)
        ar = r.append_result
        unconfirmed = ar.wrote_offset if not stored and ar is not None and ar.wrote_offset > 0 else -1
        # a commit whose final message is stored counts as SUCCESS even if flush/replication lagged
        return (ResponseCode.SUCCESS if stored else code), (None if stored else remark), stored, unconfirmed

"""LOCK_BATCH_MQ (41) / UNLOCK_BATCH_MQ (42): orderly consumers lock their queues on the broker."""

from __future__ import annotations

import logging

from broker.rebalance_lock_manager import RebalanceLockManager
from remoting.body import BodyError
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection

__all__ = ["LockProcessor"]

log = logging.getLogger(__name__)


class LockProcessor:
    """Bodies are RocketMQ's JSON (LockBatchRequestBody / LockBatchResponseBody / UnlockBatchRequestBody)."""

    def __init__(self, lock_manager: RebalanceLockManager):
        self.locks = lock_manager

    def lock_batch_mq(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.consumer import LockBatchRequestBody, LockBatchResponseBody

        try:
            body = LockBatchRequestBody.from_json(req.body or b"")
        except (BodyError, ValueError) as e:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"bad LockBatchRequestBody: {e}")
        granted = self.locks.try_lock_batch(body.consumerGroup, body.mqSet, body.clientId)
        return req.response_to(ResponseCode.SUCCESS, body=LockBatchResponseBody(lockOKMQSet=granted).to_json())

    def unlock_batch_mq(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.consumer import UnlockBatchRequestBody

        try:
            body = UnlockBatchRequestBody.from_json(req.body or b"")
        except (BodyError, ValueError) as e:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"bad UnlockBatchRequestBody: {e}")
        self.locks.unlock_batch(body.consumerGroup, body.mqSet, body.clientId)
        return req.response_to(ResponseCode.SUCCESS)

"""Requests the broker relays to one consumer client: GET_CONSUMER_RUNNING_INFO (307) and
CONSUME_MESSAGE_DIRECTLY (309) (admin tools -> broker -> the client's own connection)."""

from __future__ import annotations

import logging

from broker.consumer_manager import ConsumerManager
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection

__all__ = ["ConsumerRelayProcessor"]

log = logging.getLogger(__name__)

_V3_0_7_SNAPSHOT = 28


class ConsumerRelayProcessor:
    """Forwards the request over the consumer's connection and returns the consumer's answer."""

    def __init__(self, consumer_manager: ConsumerManager, timeout_s: float = 5.0):
        self.consumers = consumer_manager
        self.timeout_s = timeout_s

    async def __call__(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        ext = req.ext_fields or {}
        group = ext.get("consumerGroup")
        client_id = ext.get("clientId")
        if not group or not client_id:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "the custom field <consumerGroup>/<clientId> is null")
        info = self.consumers.find_channel(group, client_id)
        if info is None or info.channel.closed:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        if info.version < _V3_0_7_SNAPSHOT:
            return req.response_to(
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{group}> Version <{info.version}> too low to finish, please upgrade it to V3_1_8_SNAPSHOT",
            )
        fwd = RemotingCommand.request(req.code, dict(ext), req.body)
        try:
            answer = await info.channel.invoke(fwd, self.timeout_s)
        except Exception as e:  # noqa: BLE001 - timeout or closed channel: tell the caller
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"invoke consumer <{group}> <{client_id}> failed: {e}")
        resp = req.response_to(answer.code, answer.remark, body=answer.body)
        if answer.ext_fields:
            resp.ext_fields = dict(answer.ext_fields)
        return resp

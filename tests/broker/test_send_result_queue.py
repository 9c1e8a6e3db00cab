"""Issue 17, defect 1: a send's answer names the queue the producer asked for.

Delayed messages are parked in SCHEDULE_TOPIC_XXXX and half messages in the half topic, but
RocketMQ 4.9.7 answers the requested queueId (SendMessageProcessor takes the response header's
queueId from the request); clients' SendResult.getMessageQueue() relies on it.
"""

from __future__ import annotations

import pytest

from common.message import MessageSysFlag
from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.broker.helpers import send


async def _check_answers(addr: str) -> None:
    async with RemotingClient() as c:
        r = await send(c, addr, "ResQDelay", b"later", {"DELAY": "2"}, queue_id=3)
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert r.ext_fields["queueId"] == "3"
        # the offset stays the one in the schedule queue (what 4.9.7 returns)
        assert r.ext_fields["queueOffset"] == "0"
        r = await send(c, addr, "ResQHalf", b"half", {"TRAN_MSG": "true", "PGROUP": "txg"}, queue_id=2,
                       sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert r.ext_fields["queueId"] == "2"
        r = await send(c, addr, "ResQPlain", b"plain", queue_id=1)
        assert r.code == ResponseCode.SUCCESS and r.ext_fields["queueId"] == "1"


async def test_async_flush_answers_the_requested_queue(shared_broker):
    await _check_answers(shared_broker.addr)


@pytest.mark.parametrize("flush", ["SYNC_FLUSH"])
async def test_sync_flush_answers_the_requested_queue(broker_factory, flush):
    b = broker_factory("syncq", flushDiskType=flush)
    await _check_answers(b.addr)

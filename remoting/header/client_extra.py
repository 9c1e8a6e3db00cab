"""Headers of the broker->client requests the client serves (remoting-protocol.md §15)."""

from __future__ import annotations

from remoting.header import CommandHeader, header

__all__ = [
    "CheckTransactionStateRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "GetConsumerStatusRequestHeader",
]


@header
class CheckTransactionStateRequestHeader(CommandHeader):
    """CHECK_TRANSACTION_STATE (39), broker -> producer, oneway: to one producer channel of the half
    message's ``PGROUP``. Offsets are those of the re-appended half copy; the producer answers with
    END_TRANSACTION carrying them back (``fromTransactionCheck=true``)."""

    tranStateTableOffset: int
    commitLogOffset: int
    msgId: str | None = None
    transactionId: str | None = None
    offsetMsgId: str | None = None
    bname: str | None = None


@header
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """GET_CONSUMER_RUNNING_INFO (307)."""

    consumerGroup: str
    clientId: str
    jstackEnable: bool = False


@header
class ConsumeMessageDirectlyResultRequestHeader(CommandHeader):
    """CONSUME_MESSAGE_DIRECTLY (309)."""

    consumerGroup: str
    clientId: str | None = None
    msgId: str | None = None
    brokerName: str | None = None


@header
class GetConsumerStatusRequestHeader(CommandHeader):
    """GET_CONSUMER_STATUS_FROM_CLIENT (221)."""

    topic: str
    group: str
    clientAddr: str | None = None

"""Headers of the broker->producer transaction check (CHECK_TRANSACTION_STATE, 39)."""

from __future__ import annotations

from remoting.header import CommandHeader, header

__all__ = ["CheckTransactionStateRequestHeader"]


@header
class CheckTransactionStateRequestHeader(CommandHeader):
    """Sent oneway to one producer channel of the half message's ``PGROUP``.

    Offsets are those of the re-appended half copy; the producer answers with
    END_TRANSACTION carrying them back (``fromTransactionCheck=true``).
    """

    tranStateTableOffset: int
    commitLogOffset: int
    msgId: str | None = None
    transactionId: str | None = None
    offsetMsgId: str | None = None
    bname: str | None = None

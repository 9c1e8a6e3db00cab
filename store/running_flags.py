"""RunningFlags: the store's access bits, as RocketMQ's store.RunningFlags (same bit values).

A store is writeable while none of NOT_WRITEABLE, WRITE_LOGICS_QUEUE_ERROR,
WRITE_INDEX_FILE_ERROR and DISK_FULL is set; the consume queues ignore DISK_FULL
(records already in the CommitLog must still reach their queues).
"""

from __future__ import annotations

__all__ = ["RunningFlags"]

NOT_READABLE_BIT = 1
NOT_WRITEABLE_BIT = 1 << 1
WRITE_LOGICS_QUEUE_ERROR_BIT = 1 << 2
WRITE_INDEX_FILE_ERROR_BIT = 1 << 3
DISK_FULL_BIT = 1 << 4

_WRITE_BLOCKERS = NOT_WRITEABLE_BIT | WRITE_LOGICS_QUEUE_ERROR_BIT | DISK_FULL_BIT | WRITE_INDEX_FILE_ERROR_BIT
_CQ_WRITE_BLOCKERS = NOT_WRITEABLE_BIT | WRITE_LOGICS_QUEUE_ERROR_BIT | WRITE_INDEX_FILE_ERROR_BIT


class RunningFlags:
    """The bits, plus the getAndMake* transitions (each returns the state before the change)."""

    __slots__ = ("flag_bits",)

    def __init__(self) -> None:
        self.flag_bits = 0

    def is_readable(self) -> bool:
        return not self.flag_bits & NOT_READABLE_BIT

    def is_writeable(self) -> bool:
        return not self.flag_bits & _WRITE_BLOCKERS

    def is_cq_writeable(self) -> bool:
        return not self.flag_bits & _CQ_WRITE_BLOCKERS

    def is_disk_full(self) -> bool:
        return bool(self.flag_bits & DISK_FULL_BIT)

    def get_and_make_writeable(self) -> bool:
        """Clear NOT_WRITEABLE; True when the store was writeable before."""
        was = self.is_writeable()
        self.flag_bits &= ~NOT_WRITEABLE_BIT
        return was

    def get_and_make_not_writeable(self) -> bool:
        was = self.is_writeable()
        self.flag_bits |= NOT_WRITEABLE_BIT
        return was

    def get_and_make_disk_full(self) -> bool:
        """Set DISK_FULL; True when it was not set before (RocketMQ's result)."""
        was_ok = not self.flag_bits & DISK_FULL_BIT
        self.flag_bits |= DISK_FULL_BIT
        return was_ok

    def get_and_make_disk_ok(self) -> bool:
        """Clear DISK_FULL; True when it was not set before (RocketMQ's result)."""
        was_ok = not self.flag_bits & DISK_FULL_BIT
        self.flag_bits &= ~DISK_FULL_BIT
        return was_ok

    def make_logics_queue_error(self) -> None:
        self.flag_bits |= WRITE_LOGICS_QUEUE_ERROR_BIT

    def make_index_file_error(self) -> None:
        self.flag_bits |= WRITE_INDEX_FILE_ERROR_BIT

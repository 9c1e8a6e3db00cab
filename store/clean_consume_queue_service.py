"""CleanConsumeQueueService: drops ConsumeQueue and Index files left below the CommitLog's min offset.

Runs right after :class:`store.clean_commit_log_service.CleanCommitLogService`
(spec message-and-store-format.md §11.3): when the CommitLog min offset moved
forward since the last run, every ConsumeQueue deletes its files (never the last)
whose last unit points below it and corrects its min offset, then the
IndexService deletes its files (never the last) whose endPhyOffset is below it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from store.config import MessageStoreConfig

__all__ = ["CleanConsumeQueueService"]

log = logging.getLogger(__name__)


class ExpiringConsumeQueue(Protocol):
    """The part of store.consume_queue.ConsumeQueue this service uses."""

    def delete_expired_file(self, offset: int) -> int: ...


class ExpiringIndex(Protocol):
    def delete_expired_file(self, offset: int) -> int: ...


class CleanConsumeQueueService:
    """Drive with :meth:`run_once` (sync) or :meth:`run_once_async` (pauses between queues).

    ``commit_log_min_offset()`` returns the CommitLog's current min offset;
    ``consume_queues()`` returns every ConsumeQueue of the store (each with
    ``delete_expired_file(min_offset) -> int`` that also corrects its min offset);
    ``index_service`` may be None when indexing is off.
    """

    def __init__(
        self,
        config: MessageStoreConfig,
        commit_log_min_offset: Callable[[], int],
        consume_queues: Callable[[], Iterable[ExpiringConsumeQueue]],
        index_service: ExpiringIndex | None = None,
    ) -> None:
        self.config = config
        self._min_offset = commit_log_min_offset
        self._consume_queues = consume_queues
        self.index_service = index_service
        self.last_physical_min_offset = 0

    def _min_offset_if_advanced(self) -> int | None:
        min_offset = self._min_offset()
        if min_offset <= self.last_physical_min_offset:
            return None
        self.last_physical_min_offset = min_offset
        return min_offset

    def run_once(self, now_ms: int | None = None) -> int:
        """Delete what the advanced min offset made obsolete; returns the number of CQ + index files deleted.

        ``now_ms`` is accepted for symmetry with CleanCommitLogService; the rule does not depend on time.
        """
        min_offset = self._min_offset_if_advanced()
        if min_offset is None:
            return 0
        deleted = 0
        for cq in list(self._consume_queues()):
            deleted += self._delete_cq(cq, min_offset)
        return deleted + self._delete_index(min_offset)

    async def run_once_async(self, now_ms: int | None = None) -> int:
        """As :meth:`run_once`, pausing ``deleteConsumeQueueFilesInterval`` ms after each queue that deleted files."""
        min_offset = self._min_offset_if_advanced()
        if min_offset is None:
            return 0
        pause = self.config.deleteConsumeQueueFilesInterval / 1000.0
        deleted = 0
        for cq in list(self._consume_queues()):
            n = self._delete_cq(cq, min_offset)
            deleted += n
            if n > 0 and pause > 0:
                await asyncio.sleep(pause)
        return deleted + self._delete_index(min_offset)

    @staticmethod
    def _delete_cq(cq: ExpiringConsumeQueue, min_offset: int) -> int:
        try:
            return int(cq.delete_expired_file(min_offset))
        except Exception:
            log.exception("deleting expired files of consume queue %r failed", cq)
            return 0

    def _delete_index(self, min_offset: int) -> int:
        if self.index_service is None:
            return 0
        try:
            return int(self.index_service.delete_expired_file(min_offset) or 0)
        except Exception:
            log.exception("deleting expired index files failed")
            return 0

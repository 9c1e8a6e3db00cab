"""The store's recovery at load (RocketMQ ``DefaultMessageStore.recover``; spec §8).

The consume queues recover first and tell how far they reach; then the CommitLog recovers
normally (clean shutdown) or abnormally (a crash: every valid record from the last file
older than the checkpoint is dispatched again where a queue unit or index entry is
missing). The queue-offset table is rebuilt from the queues, and dispatch resumes where
the queues end.
"""

from __future__ import annotations

from collections.abc import Callable

from common.message import MessageSysFlag
from store.config import MessageStoreConfig
from store.consume_queue import ConsumeQueueStore
from store.dispatch import CommitLogDispatcher, DispatchRequest
from store.index_service import IndexService
from store.message_store import CommitLogBackend
from store.store_checkpoint import StoreCheckpoint

__all__ = ["recover_store"]

_COUNTED = (MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE)


def recover_store(config: MessageStoreConfig, commit_log: CommitLogBackend, consume_queues: ConsumeQueueStore,
                  checkpoint: StoreCheckpoint, index_service: IndexService | None,
                  dispatchers: list[CommitLogDispatcher], dispatch: Callable[[DispatchRequest], None],
                  last_exit_ok: bool) -> int:
    """Recover the CommitLog and the queues; return the offset the reput starts from."""
    max_phy_cq = consume_queues.recover()
    if last_exit_ok:
        commit_log.recover_normally(max_phy_cq, consume_queues.truncate_dirty, consume_queues.destroy_all)
    else:
        min_ts = (checkpoint.get_min_timestamp_index()
                  if config.messageIndexEnable and config.messageIndexSafe
                  else checkpoint.get_min_timestamp())
        # Units pointing past the CommitLog's last file cannot be real (a garbled tail after a power
        # cut): drop them first, or their offsets make the re-dispatch skip the records they hide.
        cl_files = commit_log.mapped_file_queue.mapped_files
        if cl_files and max_phy_cq > cl_files[-1].file_from_offset + cl_files[-1].file_size:
            consume_queues.truncate_dirty(cl_files[-1].file_from_offset + cl_files[-1].file_size)
            max_phy_cq = max((cq.max_physic_offset for cq in consume_queues), default=-1)

        def needs_dispatch(topic: str, queue_id: int, offset: int, size: int, sys_flag: int) -> bool:
            """Whether re-dispatching a record would change anything (CQ unit or index entry missing)."""
            if sys_flag & MessageSysFlag.TRANSACTION_MASK in _COUNTED:
                cq = consume_queues.find(topic, queue_id)
                if cq is None or cq.max_physic_offset < offset + size:
                    return True
            if index_service is not None and config.messageIndexEnable:
                files = index_service.index_files
                if not files or offset >= files[-1].end_phy_offset:
                    return True
            return False

        commit_log.recover_abnormally(max_phy_cq, min_ts, dispatch, consume_queues.truncate_dirty,
                                      consume_queues.destroy_all, needs_dispatch)
        for d in dispatchers:  # e.g. the index header, written once after the re-dispatch
            d.end_batch()
        # The re-dispatched units must be durable before new ones follow them: else a second crash
        # can leave a hole in an older file, below the last three that ConsumeQueue.recover scans,
        # and every message after the hole vanishes from the queue (fault suite: power loss, tear).
        consume_queues.flush(0)
    commit_log.topic_queue_table = consume_queues.max_offsets()
    consume_queues.correct_min_offsets(max(0, commit_log.get_min_offset()))
    start = max(0, commit_log.get_min_offset())
    for cq in consume_queues:
        start = max(start, cq.max_physic_offset)
    return start

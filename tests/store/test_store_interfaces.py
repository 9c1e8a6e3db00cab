"""The store's interfaces: what the broker may call (MessageStore) and what the store calls on its
log (CommitLogBackend) exist on every implementation, and the DLedger log wraps a CommitLog."""

from __future__ import annotations

import inspect

import pytest

from store.clean_commit_log_service import CleanCommitLogService
from store.commit_log import CommitLog
from store.config import MessageStoreConfig
from store.default_message_store import DefaultMessageStore
from store.disk_space_guard import DiskSpaceGuard
from store.dledger_commit_log import DLedgerCommitLog
from store.message_store import CommitLogBackend, MessageStore
from store.reput_message_service import ReputMessageService
from store.running_flags import RunningFlags


def protocol_members(proto: type) -> set[str]:
    names = set(getattr(proto, "__annotations__", {}))
    for name, value in vars(proto).items():
        if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, property)):
            names.add(name)
    return names


def test_protocols_name_what_the_callers_use():
    # a few the broker and the store rely on: a Protocol that lost them would type nothing
    assert {"put_message_list_async", "append_outcome", "runtime_info", "is_os_page_cache_busy",
            "execute_delete_files_manually", "check_in_disk_by_consume_offset"} <= protocol_members(MessageStore)
    assert {"put_message_async", "get_data", "recover_abnormally", "runtime_extra", "prepared",
            "deletes_expired_files", "mapped_file_queue"} <= protocol_members(CommitLogBackend)


def _store(tmp_path, **kw) -> DefaultMessageStore:
    cfg = MessageStoreConfig(storePathRootDir=str(tmp_path / "store"), mappedFileSizeCommitLog=1 << 20, **kw)
    return DefaultMessageStore(cfg)


def test_default_message_store_has_every_message_store_member(tmp_path):
    store = _store(tmp_path)
    missing = sorted(n for n in protocol_members(MessageStore) if not hasattr(store, n))
    assert missing == []


@pytest.mark.parametrize("dledger", [False, True])
def test_both_logs_have_every_backend_member_and_share_the_reput(tmp_path, dledger):
    kw = {"enableDLegerCommitLog": True, "dLegerGroup": "g", "dLegerSelfId": "n0",
          "dLegerPeers": "n0-127.0.0.1:40911"} if dledger else {}
    store = _store(tmp_path, **kw)
    cl = store.commit_log
    assert type(cl) is (DLedgerCommitLog if dledger else CommitLog)
    missing = sorted(n for n in protocol_members(CommitLogBackend) if not hasattr(cl, n))
    assert missing == []
    # one reput loop for both: the DLedger difference is a parameter, not a subclass
    assert type(store.reput) is ReputMessageService
    # a DLedger log parses its committed entries back; the classic one leaves prepared requests
    assert (cl.prepared is None) is dledger
    assert cl.deletes_expired_files is not dledger


def test_dledger_commit_log_wraps_a_commit_log():
    assert not issubclass(DLedgerCommitLog, CommitLog)


def test_disk_full_has_one_owner(tmp_path):
    """The clean service's verdict is the guard's state, and the guard's own probe shows in the service."""
    usage = {"v": 0.5}
    changes: list[bool] = []
    guard = DiskSpaceGuard(RunningFlags(), changes.append, commit_log_paths=[str(tmp_path)],
                           consume_queue_path=str(tmp_path), disk_usage=lambda _p: usage["v"])

    class NoFiles:
        def delete_expired_file_by_time(self, *_a) -> int:
            return 0

        def retry_delete_first_file(self, *_a) -> bool:
            return False

    cfg = MessageStoreConfig(storePathRootDir=str(tmp_path))
    svc = CleanCommitLogService(cfg, NoFiles(), disk_usage=lambda _p: usage["v"], disk_full=guard)
    usage["v"] = 0.95
    svc.is_space_to_delete()
    assert svc.disk_full and guard.disk_full and changes == [False]
    usage["v"] = 0.5
    assert not guard.probe()  # the guard's own probe clears it: the service sees that, no state of its own
    assert not svc.disk_full and changes == [False, True]
    # without an owner the service only decides what to delete
    alone = CleanCommitLogService(cfg, NoFiles(), disk_usage=lambda _p: 0.95)
    alone.is_space_to_delete()
    assert alone.clean_immediately and not alone.disk_full

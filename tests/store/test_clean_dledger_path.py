"""Defect #17.6: in DLedger mode the cleanup service measures the DLedger data directory.

A DLedger broker never writes ``storePathCommitLog``; measuring it gave -1 ("disk may be full
soon (-1.000)" every 10 s, and every run counted as space-full).
"""

from __future__ import annotations

import logging
import os

from store.clean_commit_log_service import CleanCommitLogService, dledger_data_path
from store.config import MessageStoreConfig
from store.dledger_commit_log import dledger_config_from_store


class _NoFiles:
    def delete_expired_file_by_time(self, *_a) -> int:
        return 0

    def retry_delete_first_file(self, *_a) -> bool:
        return False


def _usage(calls):
    def probe(path: str) -> float:
        calls.append(path)
        return 0.30 if os.path.isdir(path) else -1.0  # as disk_partition_used_ratio: -1 for a missing path
    return probe


def _dledger_config(root, **kw) -> MessageStoreConfig:
    sc = MessageStoreConfig(storePathRootDir=str(root), enableDLegerCommitLog=True, dLegerGroup="g",
                            dLegerSelfId="n1", dLegerPeers="n1-127.0.0.1:1")
    for k, v in kw.items():
        setattr(sc, k, v)
    return sc


def test_dledger_mode_measures_the_dledger_data_path(tmp_path, caplog):
    sc = _dledger_config(tmp_path)
    data = dledger_config_from_store(sc).data_path()
    assert dledger_data_path(sc) == data == str(tmp_path / "dledger-n1" / "data")
    os.makedirs(data)
    os.makedirs(tmp_path / "consumequeue")
    calls: list[str] = []
    svc = CleanCommitLogService(sc, _NoFiles(), disk_usage=_usage(calls))
    assert svc.commit_log_paths() == [data]
    with caplog.at_level(logging.INFO, logger="store.clean_commit_log_service"):
        assert not svc.is_space_to_delete()
    assert data in calls and str(tmp_path / "commitlog") not in calls
    assert "may be full soon" not in caplog.text


def test_dledger_mode_honours_store_path_dledger_commit_log(tmp_path):
    other = tmp_path / "elsewhere"
    sc = _dledger_config(tmp_path, storePathDLedgerCommitLog=str(other))
    assert dledger_data_path(sc) == dledger_config_from_store(sc).data_path() == str(other)
    assert CleanCommitLogService(sc, _NoFiles()).commit_log_paths() == [str(other)]


def test_classic_mode_still_measures_store_path_commit_log(tmp_path):
    sc = MessageStoreConfig(storePathRootDir=str(tmp_path))
    assert CleanCommitLogService(sc, _NoFiles()).commit_log_paths() == [str(tmp_path / "commitlog")]

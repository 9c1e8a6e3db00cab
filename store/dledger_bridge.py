"""The broker's store keys and put statuses in DLedger's terms (dledger.md §1, §8.2).

RocketMQ's DLedgerCommitLog fills a DLedgerConfig from the MessageStoreConfig and maps the
append response codes to PutMessageStatus; both live here so the log module holds the log.
"""

from __future__ import annotations

from dledger.config import DLedgerConfig
from dledger.protocol import DLedgerResponseCode as C
from store.config import MessageStoreConfig
from store.message_store import PutMessageStatus

__all__ = ["put_status_for", "dledger_config_from_store"]

_TEN_YEARS_H = 10 * 365 * 24

_UNAVAILABLE = {C.INCONSISTENT_LEADER, C.NOT_LEADER, C.LEADER_NOT_READY, C.DISK_FULL}
_BUSY = {C.WAIT_QUORUM_ACK_TIMEOUT, C.LEADER_PENDING_FULL}


def put_status_for(code: int) -> PutMessageStatus:
    """PutMessageStatus of a completed DLedger append (dledger.md §8.2)."""
    if code == C.SUCCESS:
        return PutMessageStatus.PUT_OK
    if code in _UNAVAILABLE:
        return PutMessageStatus.SERVICE_NOT_AVAILABLE
    if code in _BUSY:
        return PutMessageStatus.OS_PAGECACHE_BUSY
    return PutMessageStatus.UNKNOWN_ERROR


def dledger_config_from_store(sc: MessageStoreConfig, legacy_files: bool = False) -> DLedgerConfig:
    """DLedgerConfig filled from the broker's store keys as RocketMQ fills it (dledger.md §1)."""
    c = DLedgerConfig()
    c.group = sc.dLegerGroup or c.group
    c.selfId = sc.dLegerSelfId or c.selfId
    c.peers = sc.dLegerPeers or c.peers
    c.storeBaseDir = sc.storePathRootDir
    c.dataStorePath = sc.storePathDLedgerCommitLog or ""
    c.mappedFileSizeForEntryData = sc.mappedFileSizeCommitLog
    c.preferredLeaderIds = sc.preferredLeaderId or ""
    c.enableBatchPush = sc.enableBatchPush
    c.maxBatchPushSize = sc.maxBatchPushSize
    c.enableBinaryPush = sc.enableBinaryPush
    c.heartBeatTimeIntervalMs = sc.heartBeatTimeIntervalMs
    c.maxHeartBeatLeak = sc.maxHeartBeatLeak
    c.minVoteIntervalMs = sc.minVoteIntervalMs
    c.maxVoteIntervalMs = sc.maxVoteIntervalMs
    c.enablePreVote = sc.enablePreVote
    c.enableCheckQuorum = sc.enableCheckQuorum
    c.deleteWhen = sc.deleteWhen
    c.diskSpaceRatioToCheckExpired = sc.diskMaxUsedSpaceRatio / 100.0
    if legacy_files:
        # legacy CommitLog files still hold the older messages: DLedger must not delete its own first
        c.fileReservedHours = _TEN_YEARS_H
        c.enableDiskForceClean = False
    else:
        c.fileReservedHours = sc.fileReservedTime + 1
        c.enableDiskForceClean = sc.cleanFileForciblyEnable
    return c

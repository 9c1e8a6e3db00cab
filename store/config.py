"""MessageStoreConfig: the store's keys of the broker .conf file (spec config-reference.md §6).

Field names are RocketMQ's key names so :func:`common.config.apply_properties`
fills them straight from the file. Paths and ports cannot be changed over the wire.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, overload

from common.config import cfg

__all__ = ["FlushDiskType", "BrokerRole", "BrokerRoleView", "ConfiguredRole", "MessageStoreConfig",
           "parse_delay_levels"]


class FlushDiskType(Enum):
    SYNC_FLUSH = "SYNC_FLUSH"
    ASYNC_FLUSH = "ASYNC_FLUSH"


class BrokerRole(Enum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


class BrokerRoleView(Protocol):
    """The live role the store acts on: the broker's RoleState (broker/role_state.py), which a
    DLedger role change switches; ``brokerRole`` in the config stays what the file said."""

    broker_role: BrokerRole
    is_slave: bool


class ConfiguredRole:
    """The role of a store used without a broker (tools, tests): the configured one, fixed."""

    __slots__ = ("broker_role", "is_slave")

    def __init__(self, broker_role: BrokerRole) -> None:
        self.broker_role = broker_role
        self.is_slave = broker_role is BrokerRole.SLAVE


_DEFAULT_ROOT = os.path.join(os.path.expanduser("~"), "store")

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(spec: str) -> list[int]:
    """``"1s 5s 1m"`` → delays in ms, index 0 = level 1. ValueError on a bad token."""
    out: list[int] = []
    for tok in spec.split():
        unit = tok[-1:]
        if unit not in _UNIT_MS or not tok[:-1].isdigit():
            raise ValueError(f"bad delay level {tok!r} (expected a number and one of s, m, h, d)")
        out.append(int(tok[:-1]) * _UNIT_MS[unit])
    return out


class _UnderRoot:
    """A read-only path below ``storePathRootDir`` (RocketMQ's StorePathConfigHelper), as a
    class attribute: not a config field, follows the root when it changes."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> _UnderRoot: ...
    @overload
    def __get__(self, obj: MessageStoreConfig, owner: type) -> str: ...
    def __get__(self, obj: MessageStoreConfig | None, owner: type) -> str | _UnderRoot:
        if obj is None:
            return self
        return os.path.join(obj.storePathRootDir, self.name)


@dataclass
class MessageStoreConfig:
    """Every MessageStoreConfig key with RocketMQ's name and 4.9.7 default."""

    storePathRootDir: str = cfg(_DEFAULT_ROOT, wire=False)
    # "" = <storePathRootDir>/commitlog (see commit_log_dir)
    storePathCommitLog: str = cfg("", wire=False)
    readOnlyCommitLogStorePaths: str = cfg("", wire=False)
    storePathDLedgerCommitLog: str = cfg("", wire=False)
    mappedFileSizeCommitLog: int = cfg(1073741824)
    mappedFileSizeConsumeQueue: int = cfg(300000 * 20)
    enableConsumeQueueExt: bool = cfg(False)
    mappedFileSizeConsumeQueueExt: int = cfg(48 * 1024 * 1024)
    bitMapLengthConsumeQueueExt: int = cfg(64)
    brokerRole: BrokerRole = cfg(BrokerRole.ASYNC_MASTER)
    flushDiskType: FlushDiskType = cfg(FlushDiskType.ASYNC_FLUSH)
    flushIntervalCommitLog: int = cfg(500)
    flushCommitLogTimed: bool = cfg(True)
    flushCommitLogLeastPages: int = cfg(4)
    flushCommitLogThoroughInterval: int = cfg(10000)
    syncFlushTimeout: int = cfg(5000)
    flushIntervalConsumeQueue: int = cfg(1000)
    flushConsumeQueueLeastPages: int = cfg(2)
    flushConsumeQueueThoroughInterval: int = cfg(60000)
    transientStorePoolEnable: bool = cfg(False)
    transientStorePoolSize: int = cfg(5)
    commitIntervalCommitLog: int = cfg(200)
    commitCommitLogLeastPages: int = cfg(4)
    commitCommitLogThoroughInterval: int = cfg(200)
    fastFailIfNoBufferInStorePool: bool = cfg(False)
    useReentrantLockWhenPutMessage: bool = cfg(True)
    osPageCacheBusyTimeOutMills: int = cfg(1000)
    maxMessageSize: int = cfg(4194304)
    checkCRCOnRecover: bool = cfg(True)
    deleteWhen: str = cfg("04")
    fileReservedTime: int = cfg(72)
    diskMaxUsedSpaceRatio: int = cfg(75)
    cleanResourceInterval: int = cfg(10000)
    deleteCommitLogFilesInterval: int = cfg(100)
    deleteConsumeQueueFilesInterval: int = cfg(100)
    destroyMapedFileIntervalForcibly: int = cfg(120000)
    redeleteHangedFileInterval: int = cfg(120000)
    cleanFileForciblyEnable: bool = cfg(True)
    warmMapedFileEnable: bool = cfg(False)
    flushLeastPagesWhenWarmMapedFile: int = cfg(4096)
    messageIndexEnable: bool = cfg(True)
    messageIndexSafe: bool = cfg(False)
    maxHashSlotNum: int = cfg(5000000)
    maxIndexNum: int = cfg(5000000 * 4)
    maxMsgsNumBatch: int = cfg(64)
    defaultQueryMaxNum: int = cfg(32)
    maxTransferBytesOnMessageInMemory: int = cfg(1024 * 256)
    maxTransferCountOnMessageInMemory: int = cfg(32)
    maxTransferBytesOnMessageInDisk: int = cfg(1024 * 64)
    maxTransferCountOnMessageInDisk: int = cfg(8)
    accessMessageInMemoryMaxRatio: int = cfg(40)
    messageDelayLevel: str = cfg("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")
    flushDelayOffsetInterval: int = cfg(10000)
    enableScheduleAsyncDeliver: bool = cfg(False)
    scheduleAsyncDeliverMaxPendingLimit: int = cfg(2000)
    scheduleAsyncDeliverMaxResendNum2Blocked: int = cfg(3)
    enableScheduleMessageStats: bool = cfg(True)
    haListenPort: int = cfg(10912, wire=False)
    haMasterAddress: str = cfg("", wire=False)
    haSendHeartbeatInterval: int = cfg(5000)
    haHousekeepingInterval: int = cfg(20000)
    haTransferBatchSize: int = cfg(1024 * 32)
    haSlaveFallbehindMax: int = cfg(1024 * 1024 * 256)
    slaveTimeout: int = cfg(3000)
    offsetCheckInSlave: bool = cfg(False)
    duplicationEnable: bool = cfg(False)
    diskFallRecorded: bool = cfg(True)
    enableDLegerCommitLog: bool = cfg(False, wire=False)
    dLegerGroup: str = cfg("", wire=False)
    dLegerPeers: str = cfg("", wire=False)
    dLegerSelfId: str = cfg("", wire=False)
    preferredLeaderId: str = cfg("", wire=False)
    enableBatchPush: bool = cfg(False)
    # DLedger's bound of one batch push in bytes (RocketMQ 4.9.7 does not map it: DLedger's 4096, about
    # four 1 KiB messages per push; each push costs the group a fixed ~40 us of CPU, so bigger batches
    # cut CPU per message). Read at startup only.
    maxBatchPushSize: int = cfg(4096, wire=False)
    # Not a RocketMQ key: PUSH bodies in a binary form between members of this implementation
    # (dledger/push_codec.py, negotiated per peer); false: DLedger's JSON only
    enableBinaryPush: bool = cfg(True, wire=False)
    # DLedger's election timing (its DLedgerConfig names; RocketMQ 4.9.7 leaves DLedger's 2000 / 3 /
    # 300 / 1000, a 6-7 s failover for a leader that hangs). These give a follower 1.2 s without a
    # heartbeat (4 missed, so one late heartbeat is no failover), then 100-300 ms before it stands:
    # failover ~1.4 s median, <= 2.5 s for a paused or cut-off leader. Read at startup only (every
    # member of a group should use the same values).
    heartBeatTimeIntervalMs: int = cfg(300, wire=False)
    maxHeartBeatLeak: int = cfg(4, wire=False)
    minVoteIntervalMs: int = cfg(100, wire=False)
    maxVoteIntervalMs: int = cfg(300, wire=False)
    # Not RocketMQ keys: pre-vote and check-quorum (dledger/pre_vote.py, DLedgerConfig)
    enablePreVote: bool = cfg(True, wire=False)
    enableCheckQuorum: bool = cfg(True, wire=False)
    enableLmq: bool = cfg(False)
    enableMultiDispatch: bool = cfg(False)
    maxLmqConsumeQueueNum: int = cfg(20000)
    debugLockEnable: bool = cfg(False)
    putMsgIndexHightWater: int = cfg(600000)

    # -- derived paths ------------------------------------------------------

    @property
    def commit_log_dir(self) -> str:
        return self.storePathCommitLog or os.path.join(self.storePathRootDir, "commitlog")

    consume_queue_dir = _UnderRoot("consumequeue")
    index_dir = _UnderRoot("index")
    checkpoint_path = _UnderRoot("checkpoint")
    abort_path = _UnderRoot("abort")
    lock_path = _UnderRoot("lock")
    config_dir = _UnderRoot("config")

    @property
    def mapped_file_size_consume_queue(self) -> int:
        """CQ file size rounded up to a whole number of 20-byte units."""
        units = -(-self.mappedFileSizeConsumeQueue // 20)
        return units * 20

    def delay_levels_ms(self) -> list[int]:
        return parse_delay_levels(self.messageDelayLevel)

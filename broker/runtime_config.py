"""The broker config keys UPDATE_BROKER_CONFIG may change while the broker runs (an allow-list).

RocketMQ 4.9.7 accepts any key over the wire (later releases keep a deny-list of paths); a
deny-list misses what it did not foresee. Here only the tuning knobs operators change live are
accepted: flush, clean-up and retention, permission, message size and transfer limits, thread and
queue sizes, fast-failure waits, polling and transaction-check timing. Everything else — identity
(brokerName/Id/cluster), where clients and peers are sent (brokerIP1/2, namesrvAddr, HA addresses),
security switches (aclEnable, autoCreate*), roles, file sizes, paths, ports and anything that runs a
program — is fixed at start-up and refused with the key named.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["RUNTIME_UPDATABLE_KEYS", "not_updatable"]

RUNTIME_UPDATABLE_KEYS: frozenset[str] = frozenset({
    # BrokerConfig: permission, flow control and fast failure
    "brokerPermission",
    "startAcceptSendRequestTimeStamp",
    "rejectTransactionMessage",
    "brokerFastFailureEnable",
    "waitTimeMillsInSendQueue",
    "waitTimeMillsInPullQueue",
    "waitTimeMillsInHeartbeatQueue",
    "waitTimeMillsInTransactionQueue",
    "sendThreadPoolQueueCapacity",
    "putThreadPoolQueueCapacity",
    "pullThreadPoolQueueCapacity",
    "replyThreadPoolQueueCapacity",
    "queryThreadPoolQueueCapacity",
    "clientManagerThreadPoolQueueCapacity",
    "consumerManagerThreadPoolQueueCapacity",
    "heartbeatThreadPoolQueueCapacity",
    "endTransactionPoolQueueCapacity",
    "sendMessageThreadPoolNums",
    "putMessageFutureThreadPoolNums",
    "pullMessageThreadPoolNums",
    "processReplyMessageThreadPoolNums",
    "queryMessageThreadPoolNums",
    "adminBrokerThreadPoolNums",
    "clientManageThreadPoolNums",
    "consumerManageThreadPoolNums",
    "heartbeatThreadPoolNums",
    "endTransactionThreadPoolNums",
    # BrokerConfig: consumption, polling, filtering, transactions, stats
    "defaultTopicQueueNums",
    "flushConsumerOffsetInterval",
    "flushConsumerOffsetHistoryInterval",
    "longPollingEnable",
    "shortPollingTimeMills",
    "notifyConsumerIdsChangedEnable",
    "slaveReadEnable",
    "disableConsumeIfConsumerReadSlowly",
    "consumerFallbehindThreshold",
    "filterSupportRetry",
    "enablePropertyFilter",
    "enableCalcFilterBitMap",
    "expectConsumerNumUseFilter",
    "maxErrorRateOfBloomFilter",
    "filterDataCleanTimeSpan",
    "transactionTimeOut",
    "transactionCheckMax",
    "transactionCheckInterval",
    "registerBrokerTimeoutMills",
    "registerNameServerPeriod",
    "forceRegister",
    "compressedRegister",
    "maxDelayTime",
    "highSpeedMode",
    "transferMsgByHeap",
    "commercialEnable",
    "commercialTimerCount",
    "commercialTransCount",
    "commercialBigCount",
    "commercialBaseCount",
    "autoDeleteUnusedStats",
    "enableDetailStat",
    "storeReplyMessageEnable",
    "traceOn",
    "shutdownGraceSeconds",
    # MessageStoreConfig: flush and commit
    "flushIntervalCommitLog",
    "flushCommitLogTimed",
    "flushCommitLogLeastPages",
    "flushCommitLogThoroughInterval",
    "syncFlushTimeout",
    "flushIntervalConsumeQueue",
    "flushConsumeQueueLeastPages",
    "flushConsumeQueueThoroughInterval",
    "commitIntervalCommitLog",
    "commitCommitLogLeastPages",
    "commitCommitLogThoroughInterval",
    "flushDelayOffsetInterval",
    # MessageStoreConfig: clean-up and retention
    "deleteWhen",
    "fileReservedTime",
    "diskMaxUsedSpaceRatio",
    "cleanResourceInterval",
    "deleteCommitLogFilesInterval",
    "deleteConsumeQueueFilesInterval",
    "destroyMapedFileIntervalForcibly",
    "redeleteHangedFileInterval",
    "cleanFileForciblyEnable",
    # MessageStoreConfig: limits and read path
    "maxMessageSize",
    "osPageCacheBusyTimeOutMills",
    "maxMsgsNumBatch",
    "defaultQueryMaxNum",
    "maxTransferBytesOnMessageInMemory",
    "maxTransferCountOnMessageInMemory",
    "maxTransferBytesOnMessageInDisk",
    "maxTransferCountOnMessageInDisk",
    "accessMessageInMemoryMaxRatio",
    "putMsgIndexHightWater",
    # MessageStoreConfig: replication timing (never addresses)
    "haSendHeartbeatInterval",
    "haHousekeepingInterval",
    "haTransferBatchSize",
    "haSlaveFallbehindMax",
    "slaveTimeout",
})


def not_updatable(keys: Iterable[str]) -> list[str]:
    """The keys of ``keys`` that may not change at run time, sorted."""
    return sorted(k for k in keys if k not in RUNTIME_UPDATABLE_KEYS)

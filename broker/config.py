"""Broker component configs: BrokerConfig, NettyServerConfig, NettyClientConfig, and BrokerConfigs (all of one broker).

Field names are RocketMQ's property keys (case-sensitive); defaults are
RocketMQ 4.9.7's. Anything that is a path, a port, or could make the broker run
a program is ``wire=False`` so UPDATE_BROKER_CONFIG cannot change it
(CVE-2023-33246). The store's MessageStoreConfig lives in :mod:`store.config`.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from common import mixall
from common.config import cfg
from remoting.tls import TlsSystemConfig
from store.config import MessageStoreConfig

__all__ = ["BrokerConfig", "NettyServerConfig", "NettyClientConfig", "BrokerConfigs", "local_ipv4",
           "local_host_name"]

_CPUS = os.cpu_count() or 1


def local_host_name() -> str:
    """RocketMQ's default brokerName: the local host name."""
    try:
        return socket.gethostname() or "DEFAULT_BROKER"
    except OSError:
        return "DEFAULT_BROKER"


def local_ipv4() -> str:
    """First non-loopback IPv4 address of this host (RocketMQ's brokerIP1 default), else 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            # No packet is sent: connect() on UDP only picks the outgoing interface.
            s.connect(("10.255.255.255", 1))
            ip = s.getsockname()[0]
            if ip and not ip.startswith("127."):
                return ip
    except OSError:
        pass
    return "127.0.0.1"


@dataclass
class BrokerConfig:
    """RocketMQ's BrokerConfig (identity, features, thread/flow-control knobs)."""

    rocketmqHome: str = cfg(os.environ.get("ROCKETMQ_HOME", ""), wire=False)
    namesrvAddr: str = cfg(os.environ.get("NAMESRV_ADDR", ""))
    brokerIP1: str = cfg("")
    brokerIP2: str = cfg("")
    brokerName: str = cfg(local_host_name())
    brokerClusterName: str = cfg(mixall.DEFAULT_CLUSTER)
    brokerId: int = cfg(0)
    brokerPermission: int = cfg(6)
    defaultTopicQueueNums: int = cfg(8)
    autoCreateTopicEnable: bool = cfg(True)
    clusterTopicEnable: bool = cfg(True)
    brokerTopicEnable: bool = cfg(True)
    autoCreateSubscriptionGroup: bool = cfg(True)
    messageStorePlugIn: str = cfg("", wire=False)
    msgTraceTopicName: str = cfg(mixall.RMQ_SYS_TRACE_TOPIC)
    traceTopicEnable: bool = cfg(False)
    sendMessageThreadPoolNums: int = cfg(min(_CPUS, 4))
    putMessageFutureThreadPoolNums: int = cfg(min(_CPUS, 4))
    pullMessageThreadPoolNums: int = cfg(16 + _CPUS * 2)
    processReplyMessageThreadPoolNums: int = cfg(16 + _CPUS * 2)
    queryMessageThreadPoolNums: int = cfg(8 + _CPUS)
    adminBrokerThreadPoolNums: int = cfg(16)
    clientManageThreadPoolNums: int = cfg(32)
    consumerManageThreadPoolNums: int = cfg(32)
    heartbeatThreadPoolNums: int = cfg(min(32, _CPUS))
    endTransactionThreadPoolNums: int = cfg(max(8 + _CPUS * 2, min(_CPUS, 4) * 4))
    flushConsumerOffsetInterval: int = cfg(5000)
    flushConsumerOffsetHistoryInterval: int = cfg(60000)
    rejectTransactionMessage: bool = cfg(False)
    fetchNamesrvAddrByAddressServer: bool = cfg(False, wire=False)
    sendThreadPoolQueueCapacity: int = cfg(10000)
    putThreadPoolQueueCapacity: int = cfg(10000)
    pullThreadPoolQueueCapacity: int = cfg(100000)
    replyThreadPoolQueueCapacity: int = cfg(10000)
    queryThreadPoolQueueCapacity: int = cfg(20000)
    clientManagerThreadPoolQueueCapacity: int = cfg(1000000)
    consumerManagerThreadPoolQueueCapacity: int = cfg(1000000)
    heartbeatThreadPoolQueueCapacity: int = cfg(50000)
    endTransactionPoolQueueCapacity: int = cfg(100000)
    filterServerNums: int = cfg(0, wire=False)  # would spawn processes: never over the wire
    longPollingEnable: bool = cfg(True)
    shortPollingTimeMills: int = cfg(1000)
    notifyConsumerIdsChangedEnable: bool = cfg(True)
    highSpeedMode: bool = cfg(False)
    commercialEnable: bool = cfg(True)
    commercialTimerCount: int = cfg(1)
    commercialTransCount: int = cfg(1)
    commercialBigCount: int = cfg(1)
    commercialBaseCount: int = cfg(1)
    transferMsgByHeap: bool = cfg(True)
    maxDelayTime: int = cfg(40)
    regionId: str = cfg(mixall.DEFAULT_REGION)
    registerBrokerTimeoutMills: int = cfg(6000)
    slaveReadEnable: bool = cfg(False)
    disableConsumeIfConsumerReadSlowly: bool = cfg(False)
    consumerFallbehindThreshold: int = cfg(1024 * 1024 * 1024 * 16)
    brokerFastFailureEnable: bool = cfg(True)
    waitTimeMillsInSendQueue: int = cfg(200)
    waitTimeMillsInPullQueue: int = cfg(5000)
    waitTimeMillsInHeartbeatQueue: int = cfg(31000)
    waitTimeMillsInTransactionQueue: int = cfg(3000)
    startAcceptSendRequestTimeStamp: int = cfg(0)
    traceOn: bool = cfg(True)
    enableCalcFilterBitMap: bool = cfg(False)
    expectConsumerNumUseFilter: int = cfg(32)
    maxErrorRateOfBloomFilter: int = cfg(20)
    filterDataCleanTimeSpan: int = cfg(24 * 3600 * 1000)
    filterSupportRetry: bool = cfg(False)
    enablePropertyFilter: bool = cfg(False)
    compressedRegister: bool = cfg(False)
    forceRegister: bool = cfg(True)
    registerNameServerPeriod: int = cfg(30 * 1000)
    transactionTimeOut: int = cfg(6000)
    transactionCheckMax: int = cfg(15)
    transactionCheckInterval: int = cfg(60 * 1000)
    aclEnable: bool = cfg(False, wire=False)  # a security switch: never changed over the wire
    storeReplyMessageEnable: bool = cfg(True)
    autoDeleteUnusedStats: bool = cfg(False)
    enableDetailStat: bool = cfg(True)
    isolateLogEnable: bool = cfg(False)
    # RocketMQ 5.x's metrics keys (PROM only here). They open a port: never changed over the wire.
    metricsExporterType: str = cfg("DISABLE", wire=False)
    metricsPromExporterHost: str = cfg("", wire=False)  # "" = brokerIP1
    metricsPromExporterPort: int = cfg(5557, wire=False)
    metricsLabel: str = cfg("", wire=False)  # "k:v,k:v": extra labels on every series
    # Not a RocketMQ key: how often the gauges that walk topics and groups are recomputed.
    metricsRefreshIntervalMillis: int = cfg(5000)
    # Not a RocketMQ key: bound (seconds) for finishing in-flight requests at shutdown.
    shutdownGraceSeconds: float = cfg(5.0)

    def broker_ip1(self) -> str:
        return self.brokerIP1 or local_ipv4()

    def broker_ip2(self) -> str:
        return self.brokerIP2 or self.broker_ip1()

    def namesrv_list(self) -> list[str]:
        """``host:port;host:port`` as a list (empty entries dropped)."""
        return [a.strip() for a in (self.namesrvAddr or "").split(";") if a.strip()]


@dataclass
class NettyServerConfig:
    """Server-side remoting knobs (RocketMQ's NettyServerConfig)."""

    listenPort: int = cfg(10911, wire=False)
    serverWorkerThreads: int = cfg(8)
    serverCallbackExecutorThreads: int = cfg(0)
    serverSelectorThreads: int = cfg(3)
    serverOnewaySemaphoreValue: int = cfg(256)
    serverAsyncSemaphoreValue: int = cfg(64)
    serverChannelMaxIdleTimeSeconds: int = cfg(120)
    serverSocketSndBufSize: int = cfg(0)
    serverSocketRcvBufSize: int = cfg(0)
    serverSocketBacklog: int = cfg(1024)
    serverPooledByteBufAllocatorEnable: bool = cfg(True)
    useEpollNativeSelector: bool = cfg(False)
    # Not RocketMQ keys (remoting.fair_dispatch): requests a connection is served per fair turn, and
    # the backlog of read requests at which reading from it pauses. Fixed at start-up.
    serverRequestTurnBudget: int = cfg(16, wire=False)
    serverConnectionBacklogMax: int = cfg(256, wire=False)


@dataclass
class NettyClientConfig:
    """Client-side remoting knobs used for the broker's calls to the NameServer."""

    clientWorkerThreads: int = cfg(4)
    clientCallbackExecutorThreads: int = cfg(_CPUS)
    clientOnewaySemaphoreValue: int = cfg(65535)
    clientAsyncSemaphoreValue: int = cfg(65535)
    connectTimeoutMillis: int = cfg(3000)
    channelNotActiveInterval: int = cfg(60000)
    clientChannelMaxIdleTimeSeconds: int = cfg(120)
    clientSocketSndBufSize: int = cfg(0)
    clientSocketRcvBufSize: int = cfg(0)
    clientPooledByteBufAllocatorEnable: bool = cfg(False)
    clientCloseSocketIfTimeout: bool = cfg(True)
    useTLS: bool = cfg(False, wire=False)


@dataclass
class BrokerConfigs:
    """All component configs of one broker process plus the file they came from.

    They hold what start-up made of the file; the live role is the controller's RoleState."""

    broker: BrokerConfig = field(default_factory=BrokerConfig)
    netty_server: NettyServerConfig = field(default_factory=NettyServerConfig)
    netty_client: NettyClientConfig = field(default_factory=NettyClientConfig)
    store: MessageStoreConfig = field(default_factory=MessageStoreConfig)
    config_file: str | None = None
    #: tls.* settings (not part of all(): never listed or changed over the wire)
    tls: TlsSystemConfig = field(default_factory=TlsSystemConfig)

    def all(self) -> list[BrokerConfig | NettyServerConfig | NettyClientConfig | MessageStoreConfig]:
        return [self.broker, self.netty_server, self.netty_client, self.store]

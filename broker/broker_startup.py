"""Composition of a broker: build every part with its collaborators, start, serve, shut down.

:func:`create_broker` is the one place that knows how the parts fit together;
the returned :class:`Broker` only holds them for the life cycle (start,
periodic tasks, graceful shutdown). Processors never see it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from broker.broker_fast_failure import BrokerFastFailure, backlog_runtime_info
from broker.broker_outer_api import BrokerIdentity, BrokerOuterAPI
from broker.broker_stats_manager import BrokerStatsManager, SlavePutStatsDispatcher
from broker.config import BrokerConfig, NettyClientConfig, NettyServerConfig
from broker.consumer_manager import ConsumerManager
from broker.consumer_offset_manager import ConsumerOffsetManager
from broker.errors import BrokerStartError
from broker.filter import CommitLogDispatcherCalcBitMap, ConsumerFilterManager, consumer_filter_path
from broker.ha_service import HAService
from broker.metrics.install import install_metrics
from broker.processor.acl_admin_processor import AclAdminProcessor
from broker.processor.broker_config_processor import BrokerConfigProcessor
from broker.processor.client_manage_processor import ClientManageProcessor
from broker.processor.consume_queue_admin_processor import ConsumeQueueAdminProcessor
from broker.processor.consumer_manage_processor import ConsumerManageProcessor
from broker.processor.consumer_relay_processor import ConsumerRelayProcessor
from broker.processor.filter_server_processor import FilterServerProcessor
from broker.processor.group_admin_processor import GroupAdminProcessor
from broker.processor.producer_info_processor import ProducerInfoProcessor
from broker.processor.pull_message_processor import PullMessageProcessor
from broker.processor.query_message_processor import QueryMessageProcessor
from broker.processor.queue_offset_processor import QueueOffsetProcessor
from broker.processor.reply_message_processor import ReplyMessageProcessor
from broker.processor.send_message_processor import SendMessageProcessor
from broker.processor.topic_admin_processor import TopicAdminProcessor
from broker.processor.transaction_admin_processor import TransactionAdminProcessor
from broker.producer_manager import ProducerManager
from broker.semantics import install_semantics
from broker.slave_synchronize import SlaveSynchronize
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from common.config import ConfigError
from common.perm import is_readable, is_writeable
from remoting.body.topic_config import TopicConfig
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.fair_dispatch import FairDispatcher
from remoting.server import RemotingServer
from remoting.tls import TlsSystemConfig
from store.config import BrokerRole, FlushDiskType, MessageStoreConfig
from store.message_store import MessageStore

__all__ = ["BrokerConfigs", "Broker", "create_broker", "BrokerStartError"]

log = logging.getLogger("broker")


@dataclass
class BrokerConfigs:
    """All component configs of one broker process plus the file they came from."""

    broker: BrokerConfig = field(default_factory=BrokerConfig)
    netty_server: NettyServerConfig = field(default_factory=NettyServerConfig)
    netty_client: NettyClientConfig = field(default_factory=NettyClientConfig)
    store: MessageStoreConfig = field(default_factory=MessageStoreConfig)
    config_file: str | None = None
    #: tls.* settings (not part of all(): never listed or changed over the wire)
    tls: TlsSystemConfig = field(default_factory=TlsSystemConfig)

    def all(self) -> list[Any]:
        return [self.broker, self.netty_server, self.netty_client, self.store]


class Broker:
    """Holds the parts of a running broker for start-up and shutdown (built by :func:`create_broker`)."""

    def __init__(self, configs: BrokerConfigs):
        self.configs = configs
        self.store: MessageStore | None = None
        self.server: RemotingServer | None = None
        self.fast_server: RemotingServer | None = None
        self.client: RemotingClient | None = None
        self.outer_api: BrokerOuterAPI | None = None
        self.identity: BrokerIdentity | None = None
        self.topic_config_manager: TopicConfigManager | None = None
        self.subscription_group_manager: SubscriptionGroupManager | None = None
        self.consumer_offset_manager: ConsumerOffsetManager | None = None
        self.consumer_manager: ConsumerManager | None = None
        self.producer_manager: ProducerManager | None = None
        self.consumer_filter_manager: ConsumerFilterManager | None = None
        self.pull_processor: PullMessageProcessor | None = None
        self.send_processor: SendMessageProcessor | None = None
        self.slave_synchronize: SlaveSynchronize | None = None
        self.ha_service: HAService | None = None
        self.stats: BrokerStatsManager | None = None
        self.store_host: tuple[str, int] = ("127.0.0.1", 10911)
        self.is_slave = False
        self._services: list[tuple[Any, Any]] = []
        self._role_aware: list[Any] = []  # processors with an ``is_slave`` attribute
        self._role_listeners: list[Any] = []
        self._tasks: list[asyncio.Task] = []
        self._register_pending = False
        self._register_task: asyncio.Task | None = None
        self._stopped = False
        self.metrics_manager: Any = None  # BrokerMetricsManager when metricsExporterType=PROM

    def add_service(self, start: Any = None, stop: Any = None) -> None:
        """Run ``start()`` in :meth:`start` (after the store starts, before the port opens) and ``stop()``
        in :meth:`shutdown` (after the port closes, before config files are persisted and the store
        shuts down). Either may be a plain function or a coroutine function; stops run in reverse order."""
        self._services.append((start, stop))

    def add_role_change_listener(self, fn: Any) -> None:
        """``fn(is_master: bool)`` (plain or coroutine function) runs after every :meth:`change_role`."""
        self._role_listeners.append(fn)

    async def change_role(self, *, master: bool, broker_id: int | None = None) -> None:
        """Switch between master and slave at runtime (the hook a DLedger role change calls).

        A master gets brokerId 0 and role SYNC_MASTER when it was a slave (DLedger leaders confirm
        every write); a slave gets ``broker_id`` (> 0) and role SLAVE: the store then refuses puts,
        admin changes are refused, offsets come from the master through SlaveSynchronize. Listeners
        run, and the broker re-registers at once.
        """
        bc, sc = self.configs.broker, self.configs.store
        if master:
            if sc.brokerRole is BrokerRole.SLAVE:
                sc.brokerRole = BrokerRole.SYNC_MASTER
            bc.brokerId = 0
        else:
            if broker_id is None or broker_id <= 0:
                raise ValueError("a slave needs a brokerId > 0")
            sc.brokerRole = BrokerRole.SLAVE
            bc.brokerId = broker_id
        self.is_slave = not master
        self.identity.broker_id = bc.brokerId
        for proc in self._role_aware:
            proc.is_slave = not master
        if not master and self.slave_synchronize is None and self.client is not None:
            config_dir = os.path.join(sc.storePathRootDir, "config")
            self.slave_synchronize = SlaveSynchronize(
                self.client, self.topic_config_manager, self.consumer_offset_manager,
                self.subscription_group_manager, os.path.join(config_dir, "delayOffset.json"),
            )
            if self.server is not None and self.server.serving:
                self._every(10.0, self.slave_synchronize.sync_all, "slave-synchronize", initial_s=3.0)
        if master and self.slave_synchronize is not None:
            self.slave_synchronize.master_addr = None  # a master syncs from nobody
        if master and self.ha_service is not None:
            await self.ha_service.stop_client()
        for fn in self._role_listeners:
            try:
                r = fn(master)
                if asyncio.iscoroutine(r):
                    await r
            except Exception:  # noqa: BLE001
                log.exception("role change listener failed")
        log.info("broker %s is now %s (brokerId %d)", bc.brokerName, "master" if master else "slave", bc.brokerId)
        self.topic_config_manager.data_version.next_version()
        self.request_register()

    # -- registration -----------------------------------------------------------------

    def _wrapper_for_register(self):
        wrapper = self.topic_config_manager.build_serialize_wrapper()
        perm = self.configs.broker.brokerPermission
        if not is_writeable(perm) or not is_readable(perm):
            # Clients must stop routing to a broker that cannot serve: advertise the broker's perm.
            wrapper.topicConfigTable = {
                k: TopicConfig(
                    topicName=v.topicName,
                    readQueueNums=v.readQueueNums,
                    writeQueueNums=v.writeQueueNums,
                    perm=perm,
                    topicFilterType=v.topicFilterType,
                    topicSysFlag=v.topicSysFlag,
                    order=v.order,
                )
                for k, v in wrapper.topicConfigTable.items()
            }
        return wrapper

    async def register_broker_all(self, oneway: bool = False, force: bool = True) -> None:
        """REGISTER_BROKER to every NameServer; with ``force`` off only when some NameServer has another
        DataVersion (QUERY_DATA_VERSION first, RocketMQ's forceRegister=false)."""
        if self.outer_api is None or not self.outer_api.namesrv_addrs:
            return
        bc = self.configs.broker
        if bc.brokerId < 0:
            return  # DLedger mode before the first role change: not a master nor a slave yet
        if not force and not await self.outer_api.need_register(
            self.identity, self.topic_config_manager.data_version, bc.registerBrokerTimeoutMills
        ):
            return
        fsm = getattr(self, "filter_server_manager", None)  # the live filter servers are advertised
        results = await self.outer_api.register_broker_all(
            self.identity,
            self._wrapper_for_register(),
            oneway=oneway,
            timeout_ms=bc.registerBrokerTimeoutMills,
            compressed=bc.compressedRegister,
            filter_server_list=fsm.build_new_filter_server_list() if fsm is not None else None,
        )
        for r in results:
            if r.kv_table is not None:
                self.topic_config_manager.update_order_topic_config(set(r.kv_table))
                break
        if self.ha_service is not None and self.is_slave and not self.configs.store.haMasterAddress:
            for r in results:
                if r.ha_server_addr:
                    self.ha_service.update_master_address(r.ha_server_addr)
                    break
        if self.slave_synchronize is not None and self.is_slave and results:
            # the first NameServer naming a master wins; when none names one, there is none to sync
            # from (keeping the last address had a slave sync from a dead master after a failover)
            addr = next((r.master_addr for r in results if r.master_addr), None)
            self.slave_synchronize.offer_master(addr)

    def request_register(self) -> None:
        """Register at once (coalesced): called after topic changes."""
        if self._stopped or self.outer_api is None or not self.outer_api.namesrv_addrs:
            return
        if self._register_task is not None and not self._register_task.done():
            self._register_pending = True
            return

        async def run() -> None:
            while True:
                self._register_pending = False
                try:
                    await self.register_broker_all(oneway=False)
                except Exception:  # noqa: BLE001
                    log.exception("register broker failed")
                if not self._register_pending:
                    return

        try:
            self._register_task = asyncio.get_running_loop().create_task(run())
        except RuntimeError:  # no loop (tests building a broker synchronously)
            pass

    # -- periodic services ---------------------------------------------------------------

    def _every(self, period_s: float, fn, name: str, initial_s: float | None = None) -> None:
        async def loop() -> None:
            await asyncio.sleep(period_s if initial_s is None else initial_s)
            while True:
                try:
                    r = fn()
                    if asyncio.iscoroutine(r):
                        await r
                except Exception:  # noqa: BLE001 - a periodic job must keep running
                    log.exception("periodic task %s failed", name)
                await asyncio.sleep(period_s)

        self._tasks.append(asyncio.get_running_loop().create_task(loop(), name=name))

    def _scan_clients(self) -> None:
        expired = self.consumer_manager.scan_not_active_channel() + self.producer_manager.scan_not_active_channel()
        for ch in expired:
            with contextlib.suppress(Exception):
                ch.close()

    # -- life cycle ------------------------------------------------------------------------

    async def start(self) -> None:
        cfg = self.configs
        bc = cfg.broker
        self.store.start()
        if self.ha_service is not None:
            await self.ha_service.start()
            if self.is_slave and cfg.store.haMasterAddress:
                self.ha_service.update_master_address(cfg.store.haMasterAddress)
        for start, _stop in self._services:
            if start is not None:
                try:
                    r = start()
                    if asyncio.iscoroutine(r):
                        await r
                except BrokerStartError:
                    await self._abort_start()
                    raise
        try:
            await self.server.start()
        except OSError as e:
            await self._abort_start()
            raise BrokerStartError(
                f"cannot listen on port {cfg.netty_server.listenPort}: {e.strerror or e}"
            ) from e
        if self.fast_server is not None:
            try:
                await self.fast_server.start()
            except OSError as e:
                log.warning("fast port %s not available (%s); serving on the main port only",
                            cfg.netty_server.listenPort - 2, e.strerror or e)
                self.fast_server = None
        self.pull_processor.hold_service.start()
        self._every(bc.flushConsumerOffsetInterval / 1000.0, self.consumer_offset_manager.persist_if_dirty, "persist-offsets")
        self._every(10.0, self._scan_clients, "scan-clients")
        self._every(10.0, self.stats.sample, "stats-sample")
        self._every(10.0, self.consumer_filter_manager.persist, "persist-consumer-filter")
        period = min(max(bc.registerNameServerPeriod, 10000), 60000) / 1000.0
        if self.outer_api is not None and self.outer_api.namesrv_addrs:
            self._tasks.append(asyncio.get_running_loop().create_task(self.register_broker_all(), name="register-first"))
            if self.slave_synchronize is not None:
                self._every(10.0, self.slave_synchronize.sync_all, "slave-synchronize", initial_s=3.0)
            self._every(
                period,
                lambda: self.register_broker_all(force=self.configs.broker.forceRegister),
                "register-broker",
                initial_s=min(10.0, period),
            )
        log.info(
            "The broker[%s, %s] boot success. serializeType=JSON and name server is %s",
            bc.brokerName, self.identity.broker_addr, bc.namesrvAddr or "(none)",
        )

    async def _stop_services(self) -> None:
        for _start, stop in reversed(self._services):
            if stop is not None:
                try:
                    r = stop()
                    if asyncio.iscoroutine(r):
                        await r
                except Exception:  # noqa: BLE001 - keep shutting down
                    log.exception("service stop failed")

    async def _abort_start(self) -> None:
        await self._stop_services()
        if self.ha_service is not None:
            await self.ha_service.stop()
        with contextlib.suppress(Exception):
            await self.store.shutdown()
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()

    async def shutdown(self) -> None:
        """Stop accepting, finish in-flight requests (bounded), persist, flush the store, unregister."""
        if self._stopped:
            return
        self._stopped = True
        grace = self.configs.broker.shutdownGraceSeconds
        for srv in (self.fast_server, self.server):
            if srv is not None:
                with contextlib.suppress(Exception):
                    await srv.stop(grace)
        await self.pull_processor.hold_service.stop()
        await self._stop_services()
        if self.ha_service is not None:
            await self.ha_service.stop()
        for t in self._tasks:
            t.cancel()
        if self._register_task is not None:
            self._register_task.cancel()
        for t in self._tasks + ([self._register_task] if self._register_task else []):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        for mgr in (self.consumer_offset_manager, self.topic_config_manager, self.subscription_group_manager,
                    self.consumer_filter_manager):
            try:
                mgr.persist()
            except Exception:  # noqa: BLE001
                log.exception("persisting %s failed", getattr(mgr, "path", None) or mgr.config_file_path)
        try:
            await self.store.shutdown()
        except Exception:  # noqa: BLE001
            log.exception("store shutdown failed")
        if self.outer_api is not None and self.outer_api.namesrv_addrs:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.outer_api.unregister_broker_all(self.identity), 5)
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        log.info("broker %s shut down", self.configs.broker.brokerName)


def _notify_ids_changed(group: str, channels: list[Any]) -> None:
    cmd = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": group}, oneway=True)
    for ch in channels:
        if not getattr(ch, "closed", False):
            try:
                ch.invoke_oneway(cmd)
            except Exception:  # noqa: BLE001
                log.warning("notify consumer ids changed to %s failed", getattr(ch, "remote_addr", ch))


def _make_acl(b: Broker, bc: Any) -> tuple[Any, Any]:
    """With ``aclEnable``: load the ACL files (BrokerStartError when they are invalid), watch them for
    changes, and return (the request hook, the manager); else (None, None)."""
    if not bc.aclEnable:
        return None, None
    # only with aclEnable: a broker without ACL never loads it (start-up time)
    from broker.acl.acl_exception import AclException
    from broker.acl.acl_file_watcher import AclFileWatcher
    from broker.acl.plain_access_validator import AclRpcHook, PlainAccessValidator
    from broker.acl.plain_permission_manager import PlainPermissionManager, acl_home

    manager = PlainPermissionManager(acl_home(bc.rocketmqHome))
    try:
        manager.load()
    except AclException as e:
        raise BrokerStartError(f"ACL configuration not usable: {e}") from None
    log.info("ACL enabled: %d accounts from %s", manager.account_count, manager.file_list())
    watcher = AclFileWatcher(manager)
    b.add_service(watcher.start, watcher.stop)
    return AclRpcHook(PlainAccessValidator(manager)), manager


def create_broker(configs: BrokerConfigs) -> Broker:
    """Build (and load) every part of a broker; raises BrokerStartError when the store cannot load."""
    # here, not at the top: mqbroker --help / -p print without loading the store (start-up time)
    from store.default_message_store import DefaultMessageStore

    b = Broker(configs)
    bc, nsc, sc = configs.broker, configs.netty_server, configs.store
    is_slave = sc.brokerRole is BrokerRole.SLAVE
    if not is_slave and not sc.enableDLegerCommitLog:
        bc.brokerId = 0
    ip1 = bc.broker_ip1()
    port = nsc.listenPort
    sc.haListenPort = port + 1  # RocketMQ forces the HA port next to the main one
    store_host = (ip1, port)
    b.identity = BrokerIdentity(
        cluster_name=bc.brokerClusterName,
        broker_name=bc.brokerName,
        broker_addr=f"{ip1}:{port}",
        broker_id=bc.brokerId,
        ha_server_addr=f"{bc.broker_ip2()}:{port + 1}",
    )
    config_dir = os.path.join(sc.storePathRootDir, "config")
    b.stats = stats = BrokerStatsManager(bc.brokerClusterName)
    b.store_host = store_host
    b.is_slave = is_slave
    b.topic_config_manager = topics = TopicConfigManager(bc, os.path.join(config_dir, "topics.json"), b.request_register)
    b.subscription_group_manager = groups = SubscriptionGroupManager(bc, os.path.join(config_dir, "subscriptionGroup.json"))
    b.consumer_offset_manager = offsets = ConsumerOffsetManager(os.path.join(config_dir, "consumerOffset.json"))
    b.consumer_filter_manager = filters = ConsumerFilterManager.from_broker_config(
        consumer_filter_path(sc.storePathRootDir), bc
    )
    if not filters.load():
        raise BrokerStartError(f"cannot load {filters.config_file_path} (and its .bak): the file is corrupt")
    b.consumer_manager = consumers = ConsumerManager(_notify_ids_changed, on_group_removed=filters.unregister)
    b.producer_manager = producers = ProducerManager()
    for mgr in (topics, groups, offsets):
        if not mgr.load():
            raise BrokerStartError(f"cannot load {mgr.path} (and its .bak): the file is corrupt")

    hold_ref: list[Any] = []

    def arriving(topic, queue_id, logic_offset, tags_code, store_timestamp, properties):
        # runs for every dispatched record: the call only when some pull is held
        if hold_ref and hold_ref[0].table:
            hold_ref[0].notify_message_arriving(topic, queue_id, logic_offset, tags_code, store_timestamp, properties)
        if b.ha_service is not None:
            b.ha_service.wakeup()  # new data for the slaves

    b.store = store = DefaultMessageStore(sc, store_host=store_host, arriving_listener=arriving)
    if sc.enableDLegerCommitLog:
        store.commit_log.tls = configs.tls  # DLedger peer traffic follows the broker's TLS settings
    if not store.load():
        raise BrokerStartError(f"the message store under {sc.storePathRootDir} could not be loaded (see the log)")
    # after load: records recovery re-dispatches are not new puts
    store.dispatchers.append(SlavePutStatsDispatcher(stats, lambda: sc.brokerRole is BrokerRole.SLAVE))
    if not sc.enableDLegerCommitLog:  # DLedger replicates by itself
        b.ha_service = HAService(store, sc)
        store.replica_waiter = b.ha_service.wait_for_slave
    else:  # master or slave as the DLedger role says
        # DLedger mode only (start-up time of the others)
        from broker.dledger_role_change_handler import DLedgerRoleChangeHandler

        DLedgerRoleChangeHandler(b).install()
    if bc.enableCalcFilterBitMap:
        # must run before the consume-queue dispatcher, which stores the bitmap
        store.dispatchers.insert(0, CommitLogDispatcherCalcBitMap(True, filters))

    must_wait = (sc.flushDiskType is FlushDiskType.SYNC_FLUSH or sc.brokerRole is BrokerRole.SYNC_MASTER
                 or sc.enableDLegerCommitLog)  # a DLedger put completes once a quorum has it
    send = SendMessageProcessor(
        bc, store, topics, groups, stats, store_host,
        max_message_size=sc.maxMessageSize, must_wait=must_wait, is_slave=is_slave,
        max_delay_level=len(sc.delay_levels_ms()),
        batch_puts=True,  # one store call per read (in DLedger mode one quorum wait for the list)
    )
    b.send_processor = send
    pull = PullMessageProcessor(
        bc, store, topics, groups, consumers, offsets, stats,
        is_slave=is_slave, offset_check_in_slave=sc.offsetCheckInSlave, store_host=store_host,
        consumer_filter_manager=filters,
    )
    b.pull_processor = pull
    hold_ref.append(pull.hold_service)
    relay = ConsumerRelayProcessor(consumers)
    reply = ReplyMessageProcessor(send, producers)
    client_mgmt = ClientManageProcessor(bc, consumers, producers, groups, topics, filters)
    consumer_mgmt = ConsumerManageProcessor(consumers, offsets, store, is_slave=is_slave)
    queue_offsets = QueueOffsetProcessor(store)
    query = QueryMessageProcessor(store, sc.defaultQueryMaxNum)
    topic_admin = TopicAdminProcessor(bc, store, topics, offsets, consumers, is_slave=is_slave, register_now=b.request_register)
    group_admin = GroupAdminProcessor(
        bc, store, topics, groups, offsets, consumers, producers, stats,
        delay_offset_path=os.path.join(config_dir, "delayOffset.json"), is_slave=is_slave,
        broker_addr=b.identity.broker_addr,
    )
    acl_hook, acl_manager = _make_acl(b, bc)
    acl_admin = AclAdminProcessor(bc, acl_manager, b.identity.broker_addr)
    cq_admin = ConsumeQueueAdminProcessor(store, consumers, offsets, filters)
    tx_admin = TransactionAdminProcessor(store)
    producer_info = ProducerInfoProcessor(producers)
    filter_servers = FilterServerProcessor(bc)
    b.filter_server_manager = filter_servers.manager  # its list goes into each REGISTER_BROKER body

    def on_config_update(changed: dict[str, Any]) -> None:
        if "brokerPermission" in changed:
            topics.data_version.next_version()
            b.request_register()

    b._role_aware = [send, pull, consumer_mgmt, topic_admin, group_admin]
    # fair turns and fast failure for the main and the fast port (see remoting.fair_dispatch)
    fast_failure = BrokerFastFailure(bc, send)
    fairs = [FairDispatcher(nsc.serverRequestTurnBudget, nsc.serverConnectionBacklogMax, fast_failure,
                            gate=fast_failure.accepting) for _ in range(2)]
    config_proc = BrokerConfigProcessor(
        configs.all(), store, stats, config_file=configs.config_file, on_update=on_config_update,
        store_root=sc.storePathRootDir, queue_stats=lambda: backlog_runtime_info(fairs),
    )
    b.config_processor = config_proc  # install_semantics adds the schedule service's running stats

    handlers = {
        RequestCode.SEND_MESSAGE: send,
        RequestCode.SEND_MESSAGE_V2: send,
        RequestCode.SEND_BATCH_MESSAGE: send,
        RequestCode.SEND_REPLY_MESSAGE: reply,
        RequestCode.SEND_REPLY_MESSAGE_V2: reply,
        RequestCode.GET_CONSUMER_RUNNING_INFO: relay,
        RequestCode.CONSUME_MESSAGE_DIRECTLY: relay,
        RequestCode.HEART_BEAT: client_mgmt.heart_beat,
        RequestCode.UNREGISTER_CLIENT: client_mgmt.unregister_client,
        RequestCode.CHECK_CLIENT_CONFIG: client_mgmt.check_client_config,
        RequestCode.GET_CONSUMER_LIST_BY_GROUP: consumer_mgmt.get_consumer_list_by_group,
        RequestCode.UPDATE_CONSUMER_OFFSET: consumer_mgmt.update_consumer_offset,
        RequestCode.QUERY_CONSUMER_OFFSET: consumer_mgmt.query_consumer_offset,
        RequestCode.GET_MAX_OFFSET: queue_offsets.get_max_offset,
        RequestCode.GET_MIN_OFFSET: queue_offsets.get_min_offset,
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: queue_offsets.search_offset_by_timestamp,
        RequestCode.GET_EARLIEST_MSG_STORETIME: queue_offsets.get_earliest_msg_storetime,
        RequestCode.QUERY_MESSAGE: query.query_message,
        RequestCode.VIEW_MESSAGE_BY_ID: query.view_message_by_id,
        RequestCode.UPDATE_AND_CREATE_TOPIC: topic_admin.update_and_create_topic,
        RequestCode.DELETE_TOPIC_IN_BROKER: topic_admin.delete_topic,
        RequestCode.GET_ALL_TOPIC_CONFIG: topic_admin.get_all_topic_config,
        RequestCode.GET_TOPIC_CONFIG_LIST: topic_admin.get_all_topic_config,
        RequestCode.GET_TOPIC_NAME_LIST: topic_admin.get_topic_name_list,
        RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: topic_admin.get_system_topic_list,
        RequestCode.GET_TOPIC_STATS_INFO: topic_admin.get_topic_stats_info,
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: topic_admin.query_topic_consume_by_who,
        RequestCode.QUERY_CONSUME_TIME_SPAN: topic_admin.query_consume_time_span,
        RequestCode.CLEAN_UNUSED_TOPIC: topic_admin.clean_unused_topic,
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: topic_admin.clean_expired_consume_queue,
        RequestCode.DELETE_EXPIRED_COMMITLOG: topic_admin.delete_expired_commit_log,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: group_admin.update_and_create_subscription_group,
        RequestCode.DELETE_SUBSCRIPTIONGROUP: group_admin.delete_subscription_group,
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: group_admin.get_all_subscription_group,
        RequestCode.GET_CONSUME_STATS: group_admin.get_consume_stats,
        RequestCode.GET_BROKER_CONSUME_STATS: group_admin.get_broker_consume_stats,
        RequestCode.GET_CONSUMER_CONNECTION_LIST: group_admin.get_consumer_connection_list,
        RequestCode.GET_PRODUCER_CONNECTION_LIST: group_admin.get_producer_connection_list,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: group_admin.reset_offset,
        RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: group_admin.get_consumer_status,
        RequestCode.GET_ALL_CONSUMER_OFFSET: group_admin.get_all_consumer_offset,
        RequestCode.GET_ALL_DELAY_OFFSET: group_admin.get_all_delay_offset,
        RequestCode.CLONE_GROUP_OFFSET: group_admin.clone_group_offset,
        RequestCode.GET_BROKER_CONFIG: config_proc.get_broker_config,
        RequestCode.UPDATE_BROKER_CONFIG: config_proc.update_broker_config,
        RequestCode.GET_BROKER_RUNTIME_INFO: config_proc.get_runtime_info,
        RequestCode.VIEW_BROKER_STATS_DATA: config_proc.view_broker_stats_data,
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: acl_admin.update_and_create_acl_config,
        RequestCode.DELETE_ACL_CONFIG: acl_admin.delete_acl_config,
        RequestCode.GET_BROKER_CLUSTER_ACL_INFO: acl_admin.get_broker_cluster_acl_info,
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: acl_admin.update_global_white_addrs_config,
        RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: acl_admin.get_broker_cluster_acl_config,
        RequestCode.QUERY_CONSUME_QUEUE: cq_admin.query_consume_queue,
        RequestCode.QUERY_CORRECTION_OFFSET: cq_admin.query_correction_offset,
        RequestCode.RESUME_CHECK_HALF_MESSAGE: tx_admin.resume_check_half_message,
        RequestCode.GET_ALL_PRODUCER_INFO: producer_info.get_all_producer_info,
        RequestCode.REGISTER_FILTER_SERVER: filter_servers.register_filter_server,
    }

    def on_close(conn: Any) -> None:
        consumers.do_channel_close_event(
            conn,
            lambda g: bc.notifyConsumerIdsChangedEnable
            and (groups.table.get(g) is None or groups.table[g].notifyConsumerIdsChangedEnable),
        )
        producers.do_channel_close_event(conn)

    host = "0.0.0.0"
    idle = nsc.serverChannelMaxIdleTimeSeconds or None
    b.server = RemotingServer(host, port, name="broker", backlog=nsc.serverSocketBacklog, idle_timeout=idle,
                              tls=configs.tls)
    b.server.set_fair_dispatch(fairs[0])
    b.server.register_processor(RequestCode.PULL_MESSAGE, pull)
    for code, h in handlers.items():
        b.server.register_processor(code, h)
    b.server.add_connection_listener(on_close=on_close)
    if acl_hook is not None:
        b.server.add_rpc_hook(acl_hook, after=False)
    if port > 2:
        b.fast_server = RemotingServer(host, port - 2, name="broker-fast", backlog=nsc.serverSocketBacklog,
                                       idle_timeout=idle, tls=configs.tls)
        b.fast_server.set_fair_dispatch(fairs[1])
        for code, h in handlers.items():
            b.fast_server.register_processor(code, h)
        b.fast_server.add_connection_listener(on_close=on_close)
        if acl_hook is not None:
            b.fast_server.add_rpc_hook(acl_hook, after=False)

    install_semantics(b)
    try:
        install_metrics(b, BrokerStartError)
    except ConfigError as e:
        raise BrokerStartError(str(e)) from e
    namesrvs = bc.namesrv_list()
    if namesrvs:
        b.client = RemotingClient(
            connect_timeout=configs.netty_client.connectTimeoutMillis / 1000, name="broker-outer",
            ssl_context=configs.tls.client_context() if configs.tls.client_enabled else None,
        )
        b.outer_api = BrokerOuterAPI(b.client, namesrvs)
        if is_slave:
            b.slave_synchronize = SlaveSynchronize(
                b.client, topics, offsets, groups, os.path.join(config_dir, "delayOffset.json")
            )
    return b

"""BrokerController: builds every part of a broker with its collaborators, starts, serves, shuts down.

RocketMQ's BrokerController. :func:`create_broker` builds one (``BrokerController(configs)``
makes and loads the parts, BrokerStartError when something cannot load) and
:meth:`BrokerController.start` / :meth:`BrokerController.shutdown` run its life cycle; a start
that fails at any step undoes every step before it (the store lock released, the ports closed),
so a second start in the same directory can succeed. The live role is one
:class:`~broker.role_state.RoleState`, passed to every part that acts by role; the parts that
other modules build (semantics, metrics, ACL, the DLedger role handler) are returned to the
controller, which registers them. Processors never see the controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from broker.broker_fast_failure import BrokerFastFailure, backlog_runtime_info
from broker.broker_outer_api import BrokerIdentity, BrokerOuterAPI
from broker.broker_processors import BrokerProcessors, build_processors
from broker.broker_stats_manager import BrokerStatsManager, SlavePutStatsDispatcher
from broker.config import BrokerConfig, BrokerConfigs
from broker.consumer_manager import ConsumerManager
from broker.consumer_offset_manager import ConsumerOffsetManager
from broker.errors import BrokerStartError
from broker.filter import CommitLogDispatcherCalcBitMap, ConsumerFilterManager, consumer_filter_path
from broker.ha_service import HAService
from broker.managers import Managers
from broker.metrics.broker_metrics_manager import BrokerMetricsManager
from broker.metrics.install import install_metrics, start_metrics
from broker.metrics.request_path_metrics import make_request_path_metrics
from broker.producer_manager import ProducerManager
from broker.pull_request_hold_service import PullRequestHoldService
from broker.role_state import RoleState
from broker.semantics import Semantics, build_semantics
from broker.slave_synchronize import SlaveSynchronize
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from common.config import ConfigError
from common.perm import is_readable, is_writeable
from common.util import cancel_all
from remoting.body.topic_config import TopicConfig, TopicConfigSerializeWrapper
from remoting.client import RemotingClient
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.fair_dispatch import FairDispatcher
from remoting.server import RemotingServer
from store.message_store import MessageStore

if TYPE_CHECKING:  # DLedger mode only (start-up time of the others)
    from broker.dledger_role_change_handler import DLedgerRoleChangeHandler
    from store.dispatch import DispatchRequest

__all__ = ["BrokerController", "create_broker"]

log = logging.getLogger("broker")

#: A start or stop hook of a broker service: a plain function or a coroutine function.
Hook = Callable[[], Awaitable[None] | None]


async def _call(fn: Hook) -> None:
    r = fn()
    if asyncio.iscoroutine(r):
        await r


class BrokerController:
    """The parts of one broker and their life cycle (see the module doc)."""

    def __init__(self, configs: BrokerConfigs) -> None:
        """Build and load every part; BrokerStartError when a config file or the store cannot load
        (what was opened is closed again: the store lock is not kept)."""
        self.configs = configs
        bc, nsc, sc = configs.broker, configs.netty_server, configs.store
        self.role = RoleState.from_configs(bc.brokerId, sc)
        ip1 = bc.broker_ip1()
        port = nsc.listenPort
        sc.haListenPort = port + 1  # RocketMQ forces the HA port next to the main one
        self.store_host: tuple[str, int] = (ip1, port)
        self.identity = BrokerIdentity(
            cluster_name=bc.brokerClusterName, broker_name=bc.brokerName, broker_addr=f"{ip1}:{port}",
            role=self.role, ha_server_addr=f"{bc.broker_ip2()}:{port + 1}",
        )
        self._services: list[tuple[Hook | None, Hook | None]] = []
        self._role_listeners: list[Callable[[bool], Awaitable[None] | None]] = []
        self._tasks: list[asyncio.Task] = []
        self._register_pending = False
        self._register_task: asyncio.Task | None = None
        self._stopped = False
        self._started_services = 0  # how many of _services a start got through (what an abort stops)
        self.server: RemotingServer | None = None
        self.fast_server: RemotingServer | None = None
        self.client: RemotingClient | None = None
        self.outer_api: BrokerOuterAPI | None = None
        self.slave_synchronize: SlaveSynchronize | None = None
        self.ha_service: HAService | None = None
        self.metrics_manager: BrokerMetricsManager | None = None
        self.dledger_role_change_handler: DLedgerRoleChangeHandler | None = None  # in DLedger mode
        self._hold: PullRequestHoldService | None = None  # set once the pull processor exists
        self.stats = BrokerStatsManager(bc.brokerClusterName)
        config_dir = os.path.join(sc.storePathRootDir, "config")
        self.delay_offset_path = os.path.join(config_dir, "delayOffset.json")
        self.topic_config_manager = TopicConfigManager(bc, os.path.join(config_dir, "topics.json"),
                                                       self.request_register)
        self.subscription_group_manager = SubscriptionGroupManager(bc, os.path.join(config_dir, "subscriptionGroup.json"))
        self.consumer_offset_manager = ConsumerOffsetManager(os.path.join(config_dir, "consumerOffset.json"))
        self.consumer_filter_manager = ConsumerFilterManager.from_broker_config(
            consumer_filter_path(sc.storePathRootDir), bc)
        if not self.consumer_filter_manager.load():
            raise BrokerStartError(f"cannot load {self.consumer_filter_manager.config_file_path} (and its .bak): "
                                   "the file is corrupt")
        self.consumer_manager = ConsumerManager(_notify_ids_changed,
                                                on_group_removed=self.consumer_filter_manager.unregister)
        self.producer_manager = ProducerManager()
        for mgr in (self.topic_config_manager, self.subscription_group_manager, self.consumer_offset_manager):
            if not mgr.load():
                raise BrokerStartError(f"cannot load {mgr.path} (and its .bak): the file is corrupt")
        self.store = self._load_store()
        try:
            self._build()
        except BaseException:
            self.store.shutdown_sync()  # releases the store lock: a later try in this directory can load it
            raise

    def _load_store(self) -> MessageStore:
        # here, not at the top: mqbroker --help / -p print without loading the store (start-up time)
        from store.default_message_store import DefaultMessageStore

        sc = self.configs.store
        store = DefaultMessageStore(sc, store_host=self.store_host, arrivals_listener=self._arrivals, role=self.role)
        if sc.enableDLegerCommitLog:
            store.commit_log.tls = self.configs.tls  # DLedger peer traffic follows the broker's TLS settings
        if not store.load():  # (not shut down: the files may be another process's, whose lock refused us)
            raise BrokerStartError(f"the message store under {sc.storePathRootDir} could not be loaded (see the log)")
        return store

    def _arrivals(self, run: list[DispatchRequest]) -> None:
        # once per dispatched run, not per record: the records are looked at only when some pull is held
        hold = self._hold
        if hold is not None and hold.table:
            notify = hold.notify_message_arriving
            for req in run:
                notify(req.topic, req.queue_id, req.consume_queue_offset + 1, req.tags_code, req.store_timestamp,
                       req.properties_mapping())
        if self.ha_service is not None:
            self.ha_service.wakeup()  # new data for the slaves

    def _build(self) -> None:
        """Everything after the store: replication, semantics, processors, servers, metrics, NameServer client."""
        configs = self.configs
        bc, nsc, sc = configs.broker, configs.netty_server, configs.store
        store = self.store
        # after load: records recovery re-dispatches are not new puts
        store.dispatchers.append(SlavePutStatsDispatcher(self.stats, self.role))
        if not sc.enableDLegerCommitLog:  # DLedger replicates by itself
            self.ha_service = HAService(store, sc)
            store.replica_waiter = self.ha_service.wait_for_slave
        if bc.enableCalcFilterBitMap:
            # must run before the consume-queue dispatcher, which stores the bitmap
            store.dispatchers.insert(0, CommitLogDispatcherCalcBitMap(True, self.consumer_filter_manager))
        managers = Managers(
            topics=self.topic_config_manager, groups=self.subscription_group_manager,
            offsets=self.consumer_offset_manager, consumers=self.consumer_manager, producers=self.producer_manager,
            filters=self.consumer_filter_manager, stats=self.stats,
        )
        self.semantics: Semantics = build_semantics(
            bc, sc, self.role, store, topics=managers.topics, groups=managers.groups, offsets=managers.offsets,
            producers=managers.producers, stats=self.stats,
        )
        acl_hook, acl_manager, acl_watcher = _make_acl(bc)
        try:
            recorders = make_request_path_metrics(bc, self.stats)
        except ConfigError as e:
            raise BrokerStartError(str(e)) from e
        fairs: list[FairDispatcher] = []
        self.processors: BrokerProcessors = build_processors(
            configs, self.role, store, managers, self.semantics, store_host=self.store_host,
            broker_addr=self.identity.broker_addr, acl_manager=acl_manager, register_now=self.request_register,
            on_config_update=self._on_config_update, queue_stats=lambda: backlog_runtime_info(fairs),
            metrics=recorders,
        )
        procs = self.processors
        self._hold = procs.pull.hold_service
        self.filter_server_manager = procs.filter_servers.manager  # its list goes into each REGISTER_BROKER body
        # fair turns and fast failure for the main and the fast port (see remoting.fair_dispatch)
        fast_failure = BrokerFastFailure(bc, procs.send)
        fairs.extend(FairDispatcher(nsc.serverRequestTurnBudget, nsc.serverConnectionBacklogMax, fast_failure,
                                    gate=fast_failure.accepting) for _ in range(2))
        handlers = {**procs.handlers, **self.semantics.handlers}
        port = nsc.listenPort
        self.server = self._make_server(port, "broker", fairs[0], {RequestCode.PULL_MESSAGE: procs.pull, **handlers},
                                        acl_hook)
        if port > 2:
            self.fast_server = self._make_server(port - 2, "broker-fast", fairs[1], handlers, acl_hook)
        send, hold = procs.send, procs.pull.hold_service
        self.metrics_manager = install_metrics(
            configs, self.role, store, recorders, topics=managers.topics, groups=managers.groups,
            offsets=managers.offsets, consumers=managers.consumers, producers=managers.producers, stats=self.stats,
            watermarks=lambda: {"send": send.waiting_puts, "pull": hold.parked_count()},
            servers=[s for s in (self.server, self.fast_server) if s is not None],
        )
        namesrvs = bc.namesrv_list()
        if namesrvs:
            self.client = RemotingClient(
                connect_timeout=configs.netty_client.connectTimeoutMillis / 1000, name="broker-outer",
                ssl_context=configs.tls.client_context() if configs.tls.client_enabled else None,
            )
            self.outer_api = BrokerOuterAPI(self.client, namesrvs)
            if self.role.is_slave:
                self.slave_synchronize = self._make_slave_synchronize(self.client)
        # services: started in this order after the store, stopped in reverse before it shuts down
        if sc.enableDLegerCommitLog:  # master or slave as the DLedger role says
            # DLedger mode only (start-up time of the others)
            from broker.dledger_role_change_handler import DLedgerRoleChangeHandler

            handler = DLedgerRoleChangeHandler(self, store, self.role).install()
            self.dledger_role_change_handler = handler
            self.add_service(handler.start, handler.stop)
        if acl_watcher is not None:
            self.add_service(acl_watcher.start, acl_watcher.stop)
        self.add_service(self.semantics.start, self.semantics.shutdown)
        self.add_role_change_listener(self.semantics.on_role_change)
        if self.metrics_manager is not None:
            m = self.metrics_manager
            self.add_service(lambda: start_metrics(m), m.stop)

    def _make_server(self, port: int, name: str, fair: FairDispatcher, handlers: dict[int, Any],
                     acl_hook: Any) -> RemotingServer:
        nsc = self.configs.netty_server
        srv = RemotingServer("0.0.0.0", port, name=name, backlog=nsc.serverSocketBacklog,
                             idle_timeout=nsc.serverChannelMaxIdleTimeSeconds or None, tls=self.configs.tls)
        srv.set_fair_dispatch(fair)
        for code, h in handlers.items():
            srv.register_processor(code, h)
        srv.add_connection_listener(on_close=self._on_channel_close)
        if acl_hook is not None:
            srv.add_rpc_hook(acl_hook, after=False)
        return srv

    def _make_slave_synchronize(self, client: RemotingClient) -> SlaveSynchronize:
        return SlaveSynchronize(client, self.topic_config_manager, self.consumer_offset_manager,
                                self.subscription_group_manager, self.delay_offset_path)

    def _on_channel_close(self, conn: Connection) -> None:
        bc, groups = self.configs.broker, self.subscription_group_manager.table

        def notify(g: str) -> bool:
            return bc.notifyConsumerIdsChangedEnable and (groups.get(g) is None or groups[g].notifyConsumerIdsChangedEnable)

        self.consumer_manager.do_channel_close_event(conn, notify)
        self.producer_manager.do_channel_close_event(conn)

    def _on_config_update(self, changed: dict[str, Any]) -> None:
        if "brokerPermission" in changed:
            self.topic_config_manager.data_version.next_version()
            self.request_register()

    def add_service(self, start: Hook | None = None, stop: Hook | None = None) -> None:
        """Run ``start()`` in :meth:`start` (after the store starts, before the port opens) and ``stop()``
        in :meth:`shutdown` (after the port closes, before config files are persisted and the store
        shuts down). Either may be a plain function or a coroutine function; stops run in reverse order."""
        self._services.append((start, stop))

    def add_role_change_listener(self, fn: Callable[[bool], Awaitable[None] | None]) -> None:
        """``fn(is_master: bool)`` (plain or coroutine function) runs after every :meth:`change_role`."""
        self._role_listeners.append(fn)

    async def change_role(self, *, master: bool, broker_id: int | None = None) -> None:
        """Switch between master and slave at runtime (the hook a DLedger role change calls).

        A master gets brokerId 0 (role SYNC_MASTER when it was a slave: DLedger leaders confirm every
        write); a slave gets ``broker_id`` (> 0) and role SLAVE: the store then refuses puts, admin
        changes are refused, offsets come from the master through SlaveSynchronize. The RoleState
        changes, not the configs. Listeners run, and the broker re-registers at once.
        """
        if master:
            self.role.become_master()
        else:
            if broker_id is None:
                raise ValueError("a slave needs a brokerId > 0")
            self.role.become_slave(broker_id)
        if not master and self.slave_synchronize is None and self.client is not None:
            self.slave_synchronize = self._make_slave_synchronize(self.client)
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
        log.info("broker %s is now %s", self.configs.broker.brokerName, self.role)
        self.topic_config_manager.data_version.next_version()
        self.request_register()

    # -- registration -----------------------------------------------------------------

    def _wrapper_for_register(self) -> TopicConfigSerializeWrapper:
        wrapper = self.topic_config_manager.build_serialize_wrapper()
        perm = self.configs.broker.brokerPermission
        if not is_writeable(perm) or not is_readable(perm):
            # Clients must stop routing to a broker that cannot serve: advertise the broker's perm.
            wrapper.topicConfigTable = {
                k: TopicConfig(
                    topicName=v.topicName, readQueueNums=v.readQueueNums, writeQueueNums=v.writeQueueNums,
                    perm=perm, topicFilterType=v.topicFilterType, topicSysFlag=v.topicSysFlag, order=v.order,
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
        if self.role.broker_id < 0:
            return  # DLedger mode before the first role change: not a master nor a slave yet
        if not force and not await self.outer_api.need_register(
            self.identity, self.topic_config_manager.data_version, bc.registerBrokerTimeoutMills
        ):
            return
        results = await self.outer_api.register_broker_all(
            self.identity,
            self._wrapper_for_register(),
            oneway=oneway,
            timeout_ms=bc.registerBrokerTimeoutMills,
            compressed=bc.compressedRegister,
            filter_server_list=self.filter_server_manager.build_new_filter_server_list(),  # the live ones
        )
        for r in results:
            if r.kv_table is not None:
                self.topic_config_manager.update_order_topic_config(set(r.kv_table))
                break
        if self.ha_service is not None and self.role.is_slave and not self.configs.store.haMasterAddress:
            for r in results:
                if r.ha_server_addr:
                    self.ha_service.update_master_address(r.ha_server_addr)
                    break
        if self.slave_synchronize is not None and self.role.is_slave and results:
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

    def _every(self, period_s: float, fn: Hook, name: str, initial_s: float | None = None) -> None:
        async def loop() -> None:
            await asyncio.sleep(period_s if initial_s is None else initial_s)
            while True:
                try:
                    await _call(fn)
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
        """Start the store, replication, the services and the ports; BrokerStartError when a step
        fails, after undoing every step before it (see :meth:`_abort_start`)."""
        try:
            await self._start_steps()
        except BaseException:  # cancelled too: nothing started may outlive a start that did not finish
            await self._abort_start()
            raise

    async def _start_steps(self) -> None:
        cfg = self.configs
        bc = cfg.broker
        self._started_services = 0
        self.store.start()
        if self.ha_service is not None:
            await self.ha_service.start()
            if self.role.is_slave and cfg.store.haMasterAddress:
                self.ha_service.update_master_address(cfg.store.haMasterAddress)
        for start, _stop in self._services:
            if start is not None:
                await _call(start)
            self._started_services += 1
        try:
            await self.server.start()
        except OSError as e:
            raise BrokerStartError(f"cannot listen on port {cfg.netty_server.listenPort}: {e.strerror or e}") from e
        if self.fast_server is not None:
            try:
                await self.fast_server.start()
            except OSError as e:
                log.warning("fast port %s not available (%s); serving on the main port only",
                            cfg.netty_server.listenPort - 2, e.strerror or e)
                self.fast_server = None
        self.processors.pull.hold_service.start()
        self._every(bc.flushConsumerOffsetInterval / 1000.0, self.consumer_offset_manager.persist_if_dirty,
                    "persist-offsets")
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

    async def _stop_services(self, count: int | None = None) -> None:
        """Stop the first ``count`` services (all by default), the last first."""
        services = self._services if count is None else self._services[:count]
        for _start, stop in reversed(services):
            if stop is not None:
                try:
                    await _call(stop)
                except Exception:  # noqa: BLE001 - keep shutting down
                    log.exception("service stop failed")

    async def _cancel_tasks(self) -> None:
        await cancel_all([*self._tasks, self._register_task])
        self._tasks.clear()
        self._register_task = None

    async def _abort_start(self) -> None:
        """Undo a start that failed part-way: close the ports, end the tasks, stop the services that
        started (and the one that failed, which may have half-started), replication, the store (its
        lock released) and the NameServer client. Nothing is registered, nothing persisted but the store."""
        self._stopped = True
        for srv in (self.fast_server, self.server):
            if srv is not None:
                with contextlib.suppress(Exception):
                    await srv.stop(0)
        with contextlib.suppress(Exception):
            await self.processors.pull.hold_service.stop()
        await self._cancel_tasks()
        await self._stop_services(min(self._started_services + 1, len(self._services)))
        if self.ha_service is not None:
            with contextlib.suppress(Exception):
                await self.ha_service.stop()
        try:
            await self.store.shutdown()
        except Exception:  # noqa: BLE001
            log.exception("store shutdown failed")
            self.store.shutdown_sync()
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
        await self.processors.pull.hold_service.stop()
        await self._stop_services()
        if self.ha_service is not None:
            await self.ha_service.stop()
        await self._cancel_tasks()
        for mgr in (self.consumer_offset_manager, self.topic_config_manager, self.subscription_group_manager):
            try:
                mgr.persist()
            except Exception:  # noqa: BLE001
                log.exception("persisting %s failed", mgr.path)
        try:
            self.consumer_filter_manager.persist()
        except Exception:  # noqa: BLE001
            log.exception("persisting %s failed", self.consumer_filter_manager.config_file_path)
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
        if not ch.closed:
            try:
                ch.invoke_oneway(cmd)
            except Exception:  # noqa: BLE001
                log.warning("notify consumer ids changed to %s failed", ch.remote_addr)


def _make_acl(bc: BrokerConfig) -> tuple[Any, Any, Any]:
    """With ``aclEnable``: load the ACL files (BrokerStartError when they are invalid) and return
    (the request hook, the manager, the file watcher to run as a service); else (None, None, None)."""
    if not bc.aclEnable:
        return None, None, None
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
    return AclRpcHook(PlainAccessValidator(manager)), manager, AclFileWatcher(manager)


def create_broker(configs: BrokerConfigs) -> BrokerController:
    """Build (and load) every part of a broker; BrokerStartError when something cannot load."""
    return BrokerController(configs)

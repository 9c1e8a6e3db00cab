"""Composition of the broker semantics: delayed delivery, transactions, orderly locks.

:func:`install_semantics` is called once by ``create_broker``: it builds the
services from the Broker's parts, registers CONSUMER_SEND_MSG_BACK,
END_TRANSACTION and LOCK/UNLOCK_BATCH_MQ on both servers and gives the send
processor the transactional bridge. Send-back and commit park delayed
messages in SCHEDULE_TOPIC_XXXX themselves (the send path already does). The returned
:class:`Semantics` is kept as ``broker.semantics`` and registered with
``broker.add_service`` (start after the store starts, stop before the config
files are persisted and the store shuts down) and as a role-change listener
(master: start delayed delivery and the transaction check; slave: stop them).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from broker.errors import BrokerStartError
from broker.processor.lock_processor import LockProcessor
from broker.processor.send_back_processor import SendBackProcessor
from broker.rebalance_lock_manager import LOCK_MAX_LIVE_TIME_MS, RebalanceLockManager
from broker.schedule_message_service import ScheduleMessageService
from broker.transaction.end_transaction_processor import EndTransactionProcessor
from broker.transaction.transactional_message_bridge import TransactionalMessageBridge
from broker.transaction.transactional_message_check_service import TransactionalMessageCheckService
from broker.transaction.transactional_message_service import (
    TransactionalMessageService,
    TransactionCheckListener,
)
from remoting.codes import RequestCode
from store.config import BrokerRole

__all__ = ["Semantics", "install_semantics", "LOCK_MAX_LIVE_TIME_ENV"]

log = logging.getLogger(__name__)

#: Overrides the 60 s lock expiry (RocketMQ's -Drocketmq.broker.rebalance.lockMaxLiveTime), in ms.
LOCK_MAX_LIVE_TIME_ENV = "ROCKETMQ_REBALANCE_LOCK_MAX_LIVE_TIME"


class Semantics:
    """The semantics services of one broker and their master-only life cycle."""

    def __init__(self, *, store_config: Any, schedule: ScheduleMessageService,
                 tx_service: TransactionalMessageService, tx_check: TransactionalMessageCheckService,
                 end_transaction: EndTransactionProcessor, lock_manager: RebalanceLockManager,
                 lock_processor: LockProcessor, bridge: TransactionalMessageBridge, send_back: SendBackProcessor):
        self.store_config = store_config
        self.schedule = schedule
        self.tx_service = tx_service
        self.tx_check = tx_check
        self.end_transaction = end_transaction
        self.lock_manager = lock_manager
        self.lock_processor = lock_processor
        self.bridge = bridge
        self.send_back = send_back
        self.master_services_running = False

    def is_master(self) -> bool:
        return self.store_config.brokerRole is not BrokerRole.SLAVE

    def start(self) -> None:
        """Broker start hook (after the store started): masters run the services.

        In DLedger mode the broker is neither until its first role change, which starts them.
        """
        if self.is_master() and not self.store_config.enableDLegerCommitLog:
            self.start_master_services()

    async def shutdown(self) -> None:
        """Broker shutdown hook (before offsets are persisted and the store shuts down)."""
        await self.stop_master_services()

    def start_master_services(self) -> None:
        """Start delayed delivery and the transaction check (becoming master)."""
        # remember which transactions the op queue says are ended (END_TRANSACTION stays idempotent)
        self.tx_service.rebuild_resolved()
        self.schedule.start()
        self.tx_check.start()
        self.master_services_running = True

    async def stop_master_services(self) -> None:
        """Stop them and persist delayOffset.json (becoming slave, or shutting down)."""
        await self.tx_check.stop()
        await self.schedule.stop()
        self.master_services_running = False

    async def on_role_change(self, is_master: bool) -> None:
        """DLedger role change hook: the store role is already switched by the caller."""
        if is_master:
            self.start_master_services()
        else:
            await self.stop_master_services()


def _lock_max_live_ms() -> int:
    raw = os.environ.get(LOCK_MAX_LIVE_TIME_ENV)
    if raw:
        try:
            return max(int(raw), 1)
        except ValueError:
            log.warning("ignoring %s=%r (not a number of ms)", LOCK_MAX_LIVE_TIME_ENV, raw)
    return LOCK_MAX_LIVE_TIME_MS


def install_semantics(broker: Any) -> Semantics:
    """Build and register the semantics parts on ``broker`` (see the module doc); returns them."""
    sc = broker.configs.store
    bc = broker.configs.broker
    store = broker.store
    config_dir = os.path.join(sc.storePathRootDir, "config")

    schedule = ScheduleMessageService(
        store, sc.delay_levels_ms(), os.path.join(config_dir, "delayOffset.json"),
        flush_interval_ms=sc.flushDelayOffsetInterval,
    )
    if not schedule.load():
        raise BrokerStartError(f"cannot load {schedule.offsets.path} (and its .bak): the file is corrupt")

    bridge = TransactionalMessageBridge(store, broker.topic_config_manager, broker.consumer_offset_manager,
                                        bc.brokerName, store.store_host)
    tx_service = TransactionalMessageService(bridge, file_reserved_hours=sc.fileReservedTime)
    listener = TransactionCheckListener(bridge, broker.producer_manager, broker.topic_config_manager)
    tx_check = TransactionalMessageCheckService(
        tx_service, listener,
        lambda: (bc.transactionCheckInterval, bc.transactionTimeOut, bc.transactionCheckMax),
    )
    end_tx = EndTransactionProcessor(tx_service, store, is_slave=lambda: sc.brokerRole is BrokerRole.SLAVE,
                                     max_message_size=sc.maxMessageSize, rewrite_delay=schedule.rewrite)
    send_back = SendBackProcessor(bc, store, broker.topic_config_manager, broker.subscription_group_manager,
                                  getattr(broker, "stats", None), rewrite_delay=schedule.rewrite)
    lock_manager = RebalanceLockManager(_lock_max_live_ms())
    locks = LockProcessor(lock_manager)

    handlers = {
        RequestCode.CONSUMER_SEND_MSG_BACK: send_back,
        RequestCode.END_TRANSACTION: end_tx,
        RequestCode.LOCK_BATCH_MQ: locks.lock_batch_mq,
        RequestCode.UNLOCK_BATCH_MQ: locks.unlock_batch_mq,
    }
    for srv in (broker.server, broker.fast_server):
        if srv is None:
            continue
        for code, h in handlers.items():
            srv.register_processor(code, h)
    if getattr(broker, "send_processor", None) is not None:
        broker.send_processor.transactional_bridge = bridge  # half messages go through the bridge

    sem = Semantics(store_config=sc, schedule=schedule, tx_service=tx_service, tx_check=tx_check,
                    end_transaction=end_tx, lock_manager=lock_manager, lock_processor=locks, bridge=bridge,
                    send_back=send_back)
    broker.semantics = sem
    config_proc = getattr(broker, "config_processor", None)
    if config_proc is not None:
        config_proc.runtime_extra = schedule.running_stats  # scheduleMessageOffset_<level> in the runtime info
    broker.add_service(sem.start, sem.shutdown)
    if hasattr(broker, "add_role_change_listener"):
        broker.add_role_change_listener(sem.on_role_change)
    return sem

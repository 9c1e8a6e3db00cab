"""The broker semantics: delayed delivery, transactions, orderly locks.

:func:`build_semantics` is called once by ``create_broker``: it builds the
services from the broker's parts it is given and returns them as a
:class:`Semantics`, which the controller registers: its :attr:`Semantics.handlers`
(CONSUMER_SEND_MSG_BACK, END_TRANSACTION, LOCK/UNLOCK_BATCH_MQ) on both servers, its
``bridge`` for the send processor's half messages, :meth:`Semantics.start` /
:meth:`Semantics.shutdown` as a broker service (start after the store starts, stop before
the config files are persisted and the store shuts down) and
:meth:`Semantics.on_role_change` as a role-change listener (master: start delayed delivery
and the transaction check; slave: stop them). Send-back and commit park delayed messages in
SCHEDULE_TOPIC_XXXX themselves (the send path already does).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from broker.broker_stats_manager import BrokerStatsManager
from broker.config import BrokerConfig
from broker.consumer_offset_manager import ConsumerOffsetManager
from broker.errors import BrokerStartError
from broker.processor.lock_processor import LockProcessor
from broker.processor.send_back_processor import SendBackProcessor
from broker.producer_manager import ProducerManager
from broker.rebalance_lock_manager import LOCK_MAX_LIVE_TIME_MS, RebalanceLockManager
from broker.role_state import RoleState
from broker.schedule_message_service import ScheduleMessageService
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from broker.transaction.end_transaction_processor import EndTransactionProcessor
from broker.transaction.transactional_message_bridge import TransactionalMessageBridge
from broker.transaction.transactional_message_check_service import TransactionalMessageCheckService
from broker.transaction.transactional_message_service import (
    TransactionalMessageService,
    TransactionCheckListener,
)
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from store.config import MessageStoreConfig

__all__ = ["Semantics", "build_semantics", "LOCK_MAX_LIVE_TIME_ENV"]

log = logging.getLogger(__name__)

#: Overrides the 60 s lock expiry (RocketMQ's -Drocketmq.broker.rebalance.lockMaxLiveTime), in ms.
LOCK_MAX_LIVE_TIME_ENV = "ROCKETMQ_REBALANCE_LOCK_MAX_LIVE_TIME"


class Semantics:
    """The semantics services of one broker and their master-only life cycle."""

    def __init__(self, *, store_config: MessageStoreConfig, role: RoleState, schedule: ScheduleMessageService,
                 tx_service: TransactionalMessageService, tx_check: TransactionalMessageCheckService,
                 end_transaction: EndTransactionProcessor, lock_manager: RebalanceLockManager,
                 lock_processor: LockProcessor, bridge: TransactionalMessageBridge, send_back: SendBackProcessor):
        self.store_config = store_config
        self.role = role
        self.schedule = schedule
        self.tx_service = tx_service
        self.tx_check = tx_check
        self.end_transaction = end_transaction
        self.lock_manager = lock_manager
        self.lock_processor = lock_processor
        self.bridge = bridge
        self.send_back = send_back
        self.master_services_running = False

    @property
    def handlers(self) -> dict[int, Callable[[RemotingCommand, Any], Any]]:
        """The request codes these semantics serve, for the controller to register on its servers."""
        return {
            RequestCode.CONSUMER_SEND_MSG_BACK: self.send_back,
            RequestCode.END_TRANSACTION: self.end_transaction,
            RequestCode.LOCK_BATCH_MQ: self.lock_processor.lock_batch_mq,
            RequestCode.UNLOCK_BATCH_MQ: self.lock_processor.unlock_batch_mq,
        }

    def running_stats(self) -> dict[str, str]:
        """scheduleMessageOffset_<level> for the broker's runtime info."""
        return self.schedule.running_stats()

    def start(self) -> None:
        """Broker start hook (after the store started): masters run the services.

        In DLedger mode the broker is neither until its first role change, which starts them.
        """
        if self.role.is_master and not self.store_config.enableDLegerCommitLog:
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
        """Role change hook: the RoleState is already switched by the caller."""
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


def build_semantics(
    bc: BrokerConfig, sc: MessageStoreConfig, role: RoleState, store: Any, *, topics: TopicConfigManager,
    groups: SubscriptionGroupManager, offsets: ConsumerOffsetManager, producers: ProducerManager,
    stats: BrokerStatsManager,
) -> Semantics:
    """Build (and load) the semantics parts; BrokerStartError when delayOffset.json is unreadable."""
    config_dir = os.path.join(sc.storePathRootDir, "config")
    schedule = ScheduleMessageService(
        store, sc.delay_levels_ms(), os.path.join(config_dir, "delayOffset.json"),
        flush_interval_ms=sc.flushDelayOffsetInterval,
    )
    if not schedule.load():
        raise BrokerStartError(f"cannot load {schedule.offsets.path} (and its .bak): the file is corrupt")

    bridge = TransactionalMessageBridge(store, topics, offsets, bc.brokerName, store.store_host)
    tx_service = TransactionalMessageService(bridge, file_reserved_hours=sc.fileReservedTime)
    listener = TransactionCheckListener(bridge, producers, topics)
    tx_check = TransactionalMessageCheckService(
        tx_service, listener,
        lambda: (bc.transactionCheckInterval, bc.transactionTimeOut, bc.transactionCheckMax),
    )
    end_tx = EndTransactionProcessor(tx_service, store, role=role, max_message_size=sc.maxMessageSize,
                                     rewrite_delay=schedule.rewrite)
    send_back = SendBackProcessor(bc, store, topics, groups, stats, rewrite_delay=schedule.rewrite)
    lock_manager = RebalanceLockManager(_lock_max_live_ms())
    return Semantics(store_config=sc, role=role, schedule=schedule, tx_service=tx_service, tx_check=tx_check,
                     end_transaction=end_tx, lock_manager=lock_manager, lock_processor=LockProcessor(lock_manager),
                     bridge=bridge, send_back=send_back)

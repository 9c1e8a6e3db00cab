"""The request processors of one broker and the request-code table that routes to them.

RocketMQ's BrokerController.registerProcessor: :func:`build_processors` makes every processor
with only its collaborators (the live :class:`~broker.role_state.RoleState` for those that act by
role) and :attr:`BrokerProcessors.handlers` is what the controller registers on its servers
(PULL_MESSAGE and the semantics' codes are registered apart).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from broker.config import BrokerConfigs
from broker.managers import Managers
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
from broker.role_state import RoleState
from broker.semantics import Semantics
from remoting.codes import RequestCode
from remoting.command import RemotingCommand
from store.config import BrokerRole, FlushDiskType

if TYPE_CHECKING:  # ACL is loaded only with aclEnable (start-up time)
    from broker.acl.plain_permission_manager import PlainPermissionManager
    from broker.metrics.request_path_metrics import RequestPathMetrics

__all__ = ["BrokerProcessors", "build_processors"]

#: A request handler as the remoting server calls it.
Handler = Callable[[RemotingCommand, Any], Any]


@dataclass
class BrokerProcessors:
    """Every request processor of one broker."""

    send: SendMessageProcessor
    pull: PullMessageProcessor
    reply: ReplyMessageProcessor
    relay: ConsumerRelayProcessor
    client_mgmt: ClientManageProcessor
    consumer_mgmt: ConsumerManageProcessor
    queue_offsets: QueueOffsetProcessor
    query: QueryMessageProcessor
    topic_admin: TopicAdminProcessor
    group_admin: GroupAdminProcessor
    config: BrokerConfigProcessor
    acl_admin: AclAdminProcessor
    cq_admin: ConsumeQueueAdminProcessor
    tx_admin: TransactionAdminProcessor
    producer_info: ProducerInfoProcessor
    filter_servers: FilterServerProcessor

    @property
    def handlers(self) -> dict[int, Handler]:
        """Request code -> handler for both ports (PULL_MESSAGE: the main port only)."""
        table: dict[int, Handler] = {
            RequestCode.SEND_MESSAGE: self.send,
            RequestCode.SEND_MESSAGE_V2: self.send,
            RequestCode.SEND_BATCH_MESSAGE: self.send,
            RequestCode.SEND_REPLY_MESSAGE: self.reply,
            RequestCode.SEND_REPLY_MESSAGE_V2: self.reply,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.relay,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.relay,
            RequestCode.HEART_BEAT: self.client_mgmt.heart_beat,
            RequestCode.UNREGISTER_CLIENT: self.client_mgmt.unregister_client,
            RequestCode.CHECK_CLIENT_CONFIG: self.client_mgmt.check_client_config,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.consumer_mgmt.get_consumer_list_by_group,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.consumer_mgmt.update_consumer_offset,
            RequestCode.QUERY_CONSUMER_OFFSET: self.consumer_mgmt.query_consumer_offset,
            RequestCode.GET_MAX_OFFSET: self.queue_offsets.get_max_offset,
            RequestCode.GET_MIN_OFFSET: self.queue_offsets.get_min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.queue_offsets.search_offset_by_timestamp,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.queue_offsets.get_earliest_msg_storetime,
            RequestCode.QUERY_MESSAGE: self.query.query_message,
            RequestCode.VIEW_MESSAGE_BY_ID: self.query.view_message_by_id,
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.topic_admin.update_and_create_topic,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.topic_admin.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.topic_admin.get_all_topic_config,
            RequestCode.GET_TOPIC_CONFIG_LIST: self.topic_admin.get_all_topic_config,
            RequestCode.GET_TOPIC_NAME_LIST: self.topic_admin.get_topic_name_list,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: self.topic_admin.get_system_topic_list,
            RequestCode.GET_TOPIC_STATS_INFO: self.topic_admin.get_topic_stats_info,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.topic_admin.query_topic_consume_by_who,
            RequestCode.QUERY_CONSUME_TIME_SPAN: self.topic_admin.query_consume_time_span,
            RequestCode.CLEAN_UNUSED_TOPIC: self.topic_admin.clean_unused_topic,
            RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: self.topic_admin.clean_expired_consume_queue,
            RequestCode.DELETE_EXPIRED_COMMITLOG: self.topic_admin.delete_expired_commit_log,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.group_admin.update_and_create_subscription_group,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.group_admin.delete_subscription_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.group_admin.get_all_subscription_group,
            RequestCode.GET_CONSUME_STATS: self.group_admin.get_consume_stats,
            RequestCode.GET_BROKER_CONSUME_STATS: self.group_admin.get_broker_consume_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.group_admin.get_consumer_connection_list,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.group_admin.get_producer_connection_list,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.group_admin.reset_offset,
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: self.group_admin.get_consumer_status,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.group_admin.get_all_consumer_offset,
            RequestCode.GET_ALL_DELAY_OFFSET: self.group_admin.get_all_delay_offset,
            RequestCode.CLONE_GROUP_OFFSET: self.group_admin.clone_group_offset,
            RequestCode.GET_BROKER_CONFIG: self.config.get_broker_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.config.update_broker_config,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.config.get_runtime_info,
            RequestCode.VIEW_BROKER_STATS_DATA: self.config.view_broker_stats_data,
            RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: self.acl_admin.update_and_create_acl_config,
            RequestCode.DELETE_ACL_CONFIG: self.acl_admin.delete_acl_config,
            RequestCode.GET_BROKER_CLUSTER_ACL_INFO: self.acl_admin.get_broker_cluster_acl_info,
            RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: self.acl_admin.update_global_white_addrs_config,
            RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: self.acl_admin.get_broker_cluster_acl_config,
            RequestCode.QUERY_CONSUME_QUEUE: self.cq_admin.query_consume_queue,
            RequestCode.QUERY_CORRECTION_OFFSET: self.cq_admin.query_correction_offset,
            RequestCode.RESUME_CHECK_HALF_MESSAGE: self.tx_admin.resume_check_half_message,
            RequestCode.GET_ALL_PRODUCER_INFO: self.producer_info.get_all_producer_info,
            RequestCode.REGISTER_FILTER_SERVER: self.filter_servers.register_filter_server,
        }
        return table


def build_processors(
    configs: BrokerConfigs, role: RoleState, store: Any, m: Managers, semantics: Semantics, *,
    store_host: tuple[str, int], broker_addr: str, acl_manager: PlainPermissionManager | None,
    register_now: Callable[[], None], on_config_update: Callable[[dict[str, Any]], None],
    queue_stats: Callable[[], dict[str, str]], metrics: RequestPathMetrics | None = None,
) -> BrokerProcessors:
    """Make every processor with its collaborators (``metrics``: the recorders, when metrics are on)."""
    bc, sc = configs.broker, configs.store
    must_wait = (sc.flushDiskType is FlushDiskType.SYNC_FLUSH or sc.brokerRole is BrokerRole.SYNC_MASTER
                 or sc.enableDLegerCommitLog)  # a DLedger put completes once a quorum has it
    send = SendMessageProcessor(
        bc, store, m, store_host,
        max_message_size=sc.maxMessageSize, must_wait=must_wait, max_delay_level=len(sc.delay_levels_ms()),
        transactional_bridge=semantics.bridge,  # half messages go through the bridge
        batch_puts=True,  # one store call per read (in DLedger mode one quorum wait for the list)
        rpc_latency=metrics.rpc_latency if metrics else None,
    )
    pull = PullMessageProcessor(
        bc, store, m, role=role, offset_check_in_slave=sc.offsetCheckInSlave, store_host=store_host,
        pull_offsets=metrics.pull_offsets if metrics else None,
        rpc_latency=metrics.rpc_latency if metrics else None,  # held pulls are answered late: timed by the holder
    )
    config_dir = os.path.join(sc.storePathRootDir, "config")
    return BrokerProcessors(
        send=send,
        pull=pull,
        reply=ReplyMessageProcessor(send, m.producers),
        relay=ConsumerRelayProcessor(m.consumers),
        client_mgmt=ClientManageProcessor(bc, m.consumers, m.producers, m.groups, m.topics, m.filters),
        consumer_mgmt=ConsumerManageProcessor(m.consumers, m.offsets, store),
        queue_offsets=QueueOffsetProcessor(store),
        query=QueryMessageProcessor(store, sc.defaultQueryMaxNum),
        topic_admin=TopicAdminProcessor(bc, store, m.topics, m.offsets, m.consumers, role=role,
                                        register_now=register_now),
        group_admin=GroupAdminProcessor(
            bc, store, m, delay_offset_path=os.path.join(config_dir, "delayOffset.json"), role=role,
            broker_addr=broker_addr,
        ),
        config=BrokerConfigProcessor(
            configs.all(), store, m.stats, config_file=configs.config_file, on_update=on_config_update,
            store_root=sc.storePathRootDir, queue_stats=queue_stats, runtime_extra=semantics.running_stats,
            role=role,
        ),
        acl_admin=AclAdminProcessor(bc, acl_manager, broker_addr),
        cq_admin=ConsumeQueueAdminProcessor(store, m.consumers, m.offsets, m.filters),
        tx_admin=TransactionAdminProcessor(store),
        producer_info=ProducerInfoProcessor(m.producers),
        filter_servers=FilterServerProcessor(bc, role=role),
    )

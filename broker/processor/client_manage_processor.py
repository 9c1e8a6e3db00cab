"""HEART_BEAT (34), UNREGISTER_CLIENT (35), CHECK_CLIENT_CONFIG (46)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.client_channel_info import ClientChannelInfo
from broker.config import BrokerConfig
from broker.consumer_manager import ConsumerManager
from remoting import fastjson
from remoting.body import BodyError
from remoting.connection import Connection
from remoting.header.broker import UnregisterClientRequestHeader

if TYPE_CHECKING:  # imported where used: not needed to start a broker
    from broker.filter import ConsumerFilterManager
from broker.producer_manager import ProducerManager
from broker.subscription_group_manager import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from common import mixall, topic_validator
from common.filter import ExpressionType
from common.perm import PERM_READ, PERM_WRITE
from remoting.codes import LanguageCode, ResponseCode
from remoting.command import RemotingCommand

__all__ = ["ClientManageProcessor"]

log = logging.getLogger(__name__)


def _language_name(code: int) -> str:
    try:
        return LanguageCode(code).name
    except ValueError:
        return "OTHER"


class ClientManageProcessor:
    """Registers producers and consumers per connection."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        consumer_manager: ConsumerManager,
        producer_manager: ProducerManager,
        subscription_group_manager: SubscriptionGroupManager,
        topic_config_manager: TopicConfigManager,
        consumer_filter_manager: ConsumerFilterManager | None = None,
    ):
        self.broker_config = broker_config
        self.consumers = consumer_manager
        self.producers = producer_manager
        self.groups = subscription_group_manager
        self.topics = topic_config_manager
        self.filters = consumer_filter_manager

    def heart_beat(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.heartbeat import HeartbeatData

        try:
            data = HeartbeatData.from_json(req.body)
        except BodyError as e:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"bad heartbeat body: {e}")
        for cd in data.consumerDataSet:
            err = topic_validator.validate_group(cd.groupName)
            if err is not None:
                return req.response_to(ResponseCode.SYSTEM_ERROR, err)
            for sd in cd.subscriptionDataSet:
                err = topic_validator.validate_topic(sd.topic)
                if err is not None:
                    return req.response_to(ResponseCode.SYSTEM_ERROR, err)
        for pd in data.producerDataSet:
            err = topic_validator.validate_group(pd.groupName)
            if err is not None:
                return req.response_to(ResponseCode.SYSTEM_ERROR, err)
        language = _language_name(req.language)
        for cd in data.consumerDataSet:
            info = ClientChannelInfo(conn, data.clientID, language, req.version)
            sgc = self.groups.find_subscription_group_config(cd.groupName)
            notify = True
            if sgc is not None:
                notify = sgc.notifyConsumerIdsChangedEnable
                self.topics.create_topic_in_send_message_back_method(
                    mixall.get_retry_topic(cd.groupName), sgc.retryQueueNums, PERM_READ | PERM_WRITE, 0
                )
            changed = self.consumers.register_consumer(
                cd.groupName,
                info,
                cd.consumeType,
                cd.messageModel,
                cd.consumeFromWhere,
                cd.subscriptionDataSet,
                notify and self.broker_config.notifyConsumerIdsChangedEnable,
            )
            if changed:
                log.info("registered consumer group %s client %s %s", cd.groupName, data.clientID, conn.remote_addr)
            if self.filters is not None:
                self.filters.register(cd.groupName, cd.subscriptionDataSet)
        for pd in data.producerDataSet:
            self.producers.register_producer(pd.groupName, ClientChannelInfo(conn, data.clientID, language, req.version))
        return req.response_to(ResponseCode.SUCCESS)

    def unregister_client(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        h = req.decode_header(UnregisterClientRequestHeader)
        if h.producerGroup:
            self.producers.unregister_producer(h.producerGroup, conn)
        if h.consumerGroup:
            sgc = self.groups.table.get(h.consumerGroup)
            notify = sgc.notifyConsumerIdsChangedEnable if sgc is not None else True
            self.consumers.unregister_consumer(
                h.consumerGroup, conn, notify and self.broker_config.notifyConsumerIdsChangedEnable
            )
        return req.response_to(ResponseCode.SUCCESS)

    def check_client_config(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        # imported on first use: the SQL92 compiler (lark) stays off start-up (start-up time)
        from broker.filter.expression_message_filter import build_message_filter
        from broker.filter.selector_parser import FilterParseError
        from remoting.body.heartbeat import SubscriptionData

        try:
            tree = fastjson.loads(req.body or b"")
            sd = SubscriptionData.from_obj((tree or {}).get("subscriptionData"))
        except (BodyError, fastjson.JSONDecodeError, AttributeError) as e:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"bad check client config body: {e}")
        if ExpressionType.is_tag_type(sd.expressionType):
            return req.response_to(ResponseCode.SUCCESS)
        if not self.broker_config.enablePropertyFilter:
            return req.response_to(
                ResponseCode.SYSTEM_ERROR, f"The broker does not support consumer to filter message by {sd.expressionType}"
            )
        try:
            build_message_filter(sd, None, enable_property_filter=True)
        except (FilterParseError, ValueError) as e:
            return req.response_to(ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"Parameter check error: {e}")
        return req.response_to(ResponseCode.SUCCESS)

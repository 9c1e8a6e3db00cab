"""rocketmq-py client library: producers, push / lite-pull consumers, transactions and admin.

Asyncio-native (``await producer.send(...)``); :mod:`client.blocking` wraps every
client for threaded code. Wire-compatible with RocketMQ 4.9.x brokers, and it
computes the same queue assignments as Java clients in one consumer group.
See docs/client.md.
"""

from client.admin import MQAdmin
from client.allocate_strategy import allocate_averagely, allocate_averagely_by_circle
from client.client_config import ClientConfig
from client.consumer_common import (
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyContext,
    ConsumeOrderlyStatus,
)
from client.exceptions import MQBrokerError, MQClientError, RequestTimeoutError
from client.lite_pull_consumer import LitePullConsumer
from client.message import Message, MessageBatch, MessageExt, MessageQueue, SendResult, SendStatus, msg_id_of
from client.producer import Producer, select_message_queue_by_hash, select_message_queue_by_random
from client.push_consumer import PushConsumer
from client.rebalance_impl import MessageModel
from client.transaction_producer import LocalTransactionState, TransactionProducer, TransactionSendResult

__all__ = [
    "ClientConfig", "Producer", "TransactionProducer", "PushConsumer", "LitePullConsumer", "MQAdmin",
    "Message", "MessageBatch", "MessageExt", "MessageQueue", "SendResult", "SendStatus", "msg_id_of",
    "TransactionSendResult", "LocalTransactionState", "MessageModel", "ConsumeFromWhere",
    "ConsumeConcurrentlyStatus", "ConsumeConcurrentlyContext", "ConsumeOrderlyStatus", "ConsumeOrderlyContext",
    "select_message_queue_by_hash", "select_message_queue_by_random", "allocate_averagely",
    "allocate_averagely_by_circle", "MQClientError", "MQBrokerError", "RequestTimeoutError",
]

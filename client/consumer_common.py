"""Shared consumer vocabulary: statuses, contexts, ConsumeFromWhere, subscriptions, listener calls."""

from __future__ import annotations

import asyncio
import datetime
import enum
import inspect
import time
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from common.filter import ExpressionType, build_subscription_data
from remoting.body.consumer import MessageQueue
from remoting.body.heartbeat import SubscriptionData

__all__ = [
    "ConsumeConcurrentlyStatus",
    "ConsumeOrderlyStatus",
    "ConsumeFromWhere",
    "ConsumeConcurrentlyContext",
    "ConsumeOrderlyContext",
    "make_subscription",
    "call_listener",
    "parse_consume_timestamp",
    "default_consume_timestamp",
]


class ConsumeConcurrentlyStatus(enum.Enum):
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


class ConsumeFromWhere:
    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


@dataclass(slots=True)
class ConsumeConcurrentlyContext:
    """Passed to concurrent listeners; set ``delay_level_when_next_consume`` (0 = broker decides, -1 = DLQ)."""

    message_queue: MessageQueue
    delay_level_when_next_consume: int = 0
    ack_index: int = 2**31 - 1


@dataclass(slots=True)
class ConsumeOrderlyContext:
    """Passed to orderly listeners; ``suspend_current_queue_time_millis`` overrides the consumer's pause."""

    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time_millis: int = -1


def make_subscription(topic: str, expression: str | None, expression_type: str | None = ExpressionType.TAG
                      ) -> SubscriptionData:
    """The heartbeat/pull SubscriptionData for ``topic`` (tags parsed and hashed as FilterAPI does)."""
    sd = build_subscription_data(topic, expression, expression_type or ExpressionType.TAG)
    return SubscriptionData(topic=sd.topic, subString=sd.subString, expressionType=sd.expressionType,
                            tagsSet=list(sd.tagsSet), codeSet=list(sd.codeSet), subVersion=sd.subVersion)


async def call_listener(listener, executor: Executor | None, *args) -> Any:
    """Run a listener: coroutine functions on the loop, plain functions on the consume executor."""
    if inspect.iscoroutinefunction(listener):
        return await listener(*args)
    result = await asyncio.get_running_loop().run_in_executor(executor, listener, *args)
    if inspect.isawaitable(result):
        result = await result
    return result


def parse_consume_timestamp(ts: str) -> int:
    """``yyyyMMddHHmmss`` (local time) to epoch ms."""
    return int(datetime.datetime.strptime(ts, "%Y%m%d%H%M%S").timestamp() * 1000)


def default_consume_timestamp() -> str:
    """Java default: half an hour ago."""
    return datetime.datetime.fromtimestamp(time.time() - 1800).strftime("%Y%m%d%H%M%S")

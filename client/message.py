"""Messages as applications see them: Message, MessageExt, SendResult, MessageQueue.

``MessageExt`` (decoded records) and ``MessageQueue`` come from common/remoting;
this module adds the message to send and the send result.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from common.message import MessageConst, MessageExt
from remoting.body.consumer import MessageQueue

__all__ = ["Message", "MessageExt", "MessageQueue", "MessageBatch", "SendStatus", "SendResult", "msg_id_of"]


@dataclass(slots=True)
class Message:
    """A message to send: topic, body, user flag and properties (tags, keys, user properties)."""

    topic: str
    body: bytes = b""
    tags: str | None = None
    keys: str | Iterable[str] | None = None
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    delay_time_level: int = 0
    wait_store_msg_ok: bool = True

    def __post_init__(self) -> None:
        if self.tags:
            self.properties[MessageConst.TAGS] = self.tags
        if self.keys:
            k = self.keys if isinstance(self.keys, str) else MessageConst.KEY_SEPARATOR.join(self.keys)
            self.properties[MessageConst.KEYS] = k
        if self.delay_time_level > 0:
            self.properties[MessageConst.DELAY] = str(self.delay_time_level)
        if not self.wait_store_msg_ok:
            self.properties[MessageConst.WAIT] = "false"

    def put_user_property(self, key: str, value: str) -> None:
        """Set one user property (keys and values must not contain \\x01 or \\x02)."""
        if not key or value is None or value == "":
            raise ValueError("user property key and value must not be empty")
        self.properties[key] = str(value)

    def get_property(self, key: str) -> str | None:
        return self.properties.get(key)

    def set_delay_time_level(self, level: int) -> None:
        self.delay_time_level = level
        self.properties[MessageConst.DELAY] = str(level)

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(MessageConst.UNIQ_KEY)


@dataclass(slots=True)
class MessageBatch:
    """Several messages of one topic sent in one SEND_BATCH_MESSAGE (no delay, no transaction)."""

    messages: list[Message]

    @property
    def topic(self) -> str:
        return self.messages[0].topic


class SendStatus(enum.Enum):
    """How a send ended (only SEND_OK means stored and replicated as configured)."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


@dataclass(slots=True)
class SendResult:
    """Result of a send: ``msg_id`` is the UNIQ_KEY, ``offset_msg_id`` the broker's offset id."""

    send_status: SendStatus
    msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    offset_msg_id: str = ""
    transaction_id: str | None = None
    region_id: str = "DefaultRegion"
    trace_on: bool = True

    def __str__(self) -> str:
        return (
            f"SendResult [sendStatus={self.send_status.value}, msgId={self.msg_id}, offsetMsgId={self.offset_msg_id}, "
            f"messageQueue={self.message_queue}, queueOffset={self.queue_offset}]"
        )


def msg_id_of(msg: MessageExt) -> str:
    """The id applications see for a consumed message: UNIQ_KEY, else the offset msgId."""
    return msg.properties.get(MessageConst.UNIQ_KEY) or msg.msg_id

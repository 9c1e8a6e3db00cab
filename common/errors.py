"""The error roots: one ``RocketMQError`` above every error this project raises on purpose.

Each side has its root under it, as h11 and aiokafka do: ``RemotingError`` (remoting.errors),
``StoreError`` (here: store and file errors, whose mapped files live in common), ``BrokerError``
(broker.errors) and the client's ``ClientError`` (client.exceptions, each carrying its response
code and whether a retry can help). A caller that wants "anything RocketMQ" catches RocketMQError.
"""

from __future__ import annotations

__all__ = ["RocketMQError", "StoreError", "RecordDecodeError"]


class RocketMQError(Exception):
    """Root of every error raised on purpose by rocketmq-py."""


class StoreError(RocketMQError):
    """Root of the message store's errors (files, records, recovery)."""


class RecordDecodeError(StoreError, ValueError):
    """The bytes are not a well-formed CommitLog record (magic, lengths, offsets or properties)."""

"""The connector's options, parsed and checked once on the driver into typed configs.

Names follow the Spark-Kafka source where RocketMQ has the same concept
(``subscribe``, ``subscribePattern``, ``assign``, ``startingOffsets``,
``endingOffsets``, ``startingTimestamp``, ``maxOffsetsPerTrigger``,
``failOnDataLoss``, ``minPartitions``); every error names the option.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from common.topic_validator import check_topic, validate_group
from connectors.spark.errors import ConnectorError
from connectors.spark.offsets import QueueKey, parse_assign, parse_offsets
from connectors.spark.send_pipeline import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_BATCH_MESSAGES,
    DEFAULT_IN_FLIGHT,
    DEFAULT_MAX_MESSAGE_SIZE,
)

__all__ = ["SourceOptions", "SinkOptions", "StoreOptions", "DEFAULT_READER_GROUP"]

# The subscription group the source pulls under when no ``group`` is given (auto-created by
# the broker like any group; it never commits offsets).
DEFAULT_READER_GROUP = "spark-rocketmq-source"


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _int(opts: dict[str, str], name: str, default: int | None, low: int) -> int | None:
    raw = opts.get(name.lower())
    if raw is None or raw.strip() == "":
        return default
    try:
        v = int(raw)
    except ValueError:
        raise ConnectorError(f"option {name}: {raw!r} is not an integer") from None
    if v < low:
        raise ConnectorError(f"option {name}: {v} must be >= {low}")
    return v


def _bool(opts: dict[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() in ("true", "1", "yes"):
        return True
    if raw.strip().lower() in ("false", "0", "no"):
        return False
    raise ConnectorError(f"option {name}: {raw!r} is not true or false")


def _name_server(opts: dict[str, str]) -> str:
    ns = opts.get("nameserver", "").strip()
    if not ns:
        raise ConnectorError("option nameServer is required (host:port[;host:port])")
    for addr in ns.replace(",", ";").split(";"):
        host, _, port = addr.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ConnectorError(f"option nameServer: {addr.strip()!r} is not host:port")
    return ns


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """Options of the "rocketmq" source (batch and streaming)."""

    name_server: str
    subscribe: tuple[str, ...] | None
    subscribe_pattern: str | None
    assign: dict[str, dict[str, list[int]]] | None
    sub_expression: str
    starting: str | dict[QueueKey, int]
    ending: str | dict[QueueKey, int]
    starting_timestamp: int | None
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    min_partitions: int | None
    pull_batch_size: int
    group: str | None
    timeout: float

    @property
    def pull_group(self) -> str:
        return self.group or DEFAULT_READER_GROUP

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool = False) -> SourceOptions:
        opts = _lower(options)
        ns = _name_server(opts)
        given = [n for n in ("subscribe", "subscribePattern", "assign") if opts.get(n.lower(), "").strip()]
        if len(given) != 1:
            both = " and ".join(given) if given else "none"
            raise ConnectorError(f"exactly one of the options subscribe, subscribePattern, assign is needed; got {both}")
        subscribe = pattern = assign = None
        if given[0] == "subscribe":
            subscribe = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
            for t in subscribe:
                err = check_topic(t)
                if err:
                    raise ConnectorError(f"option subscribe: {err}")
        elif given[0] == "subscribePattern":
            pattern = opts["subscribepattern"]
            try:
                re.compile(pattern)
            except re.error as e:
                raise ConnectorError(f"option subscribePattern: bad regular expression {pattern!r}: {e}") from None
        else:
            assign = parse_assign(opts["assign"])
        starting = parse_offsets("startingOffsets", opts.get("startingoffsets", "latest" if streaming else "earliest"))
        if streaming and "endingoffsets" in opts:
            raise ConnectorError("option endingOffsets is for batch queries only")
        ending = parse_offsets("endingOffsets", opts.get("endingoffsets", "latest"), allow_earliest=False)
        if ending == "earliest":
            raise ConnectorError("option endingOffsets: 'earliest' is not allowed")
        ts = _int(opts, "startingTimestamp", None, 0)
        if ts is not None and "startingoffsets" in opts:
            raise ConnectorError("options startingTimestamp and startingOffsets exclude each other")
        group = opts.get("group") or None
        if group is not None:
            err = validate_group(group)
            if err:
                raise ConnectorError(f"option group: {err}")
        return cls(
            name_server=ns,
            subscribe=subscribe,
            subscribe_pattern=pattern,
            assign=assign,
            sub_expression=opts.get("subexpression", "*").strip() or "*",
            starting=starting,
            ending=ending,
            starting_timestamp=ts,
            max_offsets_per_trigger=_int(opts, "maxOffsetsPerTrigger", None, 1),
            fail_on_data_loss=_bool(opts, "failOnDataLoss", True),
            min_partitions=_int(opts, "minPartitions", None, 1),
            pull_batch_size=_int(opts, "pullBatchSize", 32, 1),
            group=group,
            timeout=_int(opts, "timeoutMs", 5000, 100) / 1000.0,
        )


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """Options of the "rocketmq" sink."""

    name_server: str
    topic: str | None
    producer_group: str
    batch_size: int
    batch_bytes: int
    in_flight: int
    timeout: float
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        opts = _lower(options)
        ns = _name_server(opts)
        topic = opts.get("topic") or None
        if topic is not None:
            err = check_topic(topic)
            if err:
                raise ConnectorError(f"option topic: {err}")
        group = opts.get("producergroup", "spark-rocketmq-sink")
        err = validate_group(group)
        if err:
            raise ConnectorError(f"option producerGroup: {err}")
        return cls(ns, topic, group, _int(opts, "sendBatchSize", DEFAULT_BATCH_MESSAGES, 1),
                   _int(opts, "sendBatchBytes", DEFAULT_BATCH_BYTES, 1024),
                   _int(opts, "sendInFlight", DEFAULT_IN_FLIGHT, 1), _int(opts, "timeoutMs", 10000, 100) / 1000.0,
                   _int(opts, "maxMessageSize", DEFAULT_MAX_MESSAGE_SIZE, 1024))


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """Options of the "rocketmq-store" source: the store root (``load(path)``) and filters."""

    root: str
    topic: str | None
    from_offset: int
    to_offset: int | None
    commit_log_dir: str | None
    broker_name: str | None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StoreOptions:
        opts = _lower(options)
        root = opts.get("path", "").strip()
        if not root:
            raise ConnectorError("the store root is required: spark.read.format('rocketmq-store').load(STORE_ROOT)")
        from_offset = _int(opts, "fromOffset", 0, 0)
        to_offset = _int(opts, "toOffset", None, 0)
        if to_offset is not None and to_offset < from_offset:
            raise ConnectorError(f"option toOffset: {to_offset} is below fromOffset {from_offset}")
        return cls(root, opts.get("topic") or None, from_offset, to_offset, opts.get("storepathcommitlog") or None,
                   opts.get("brokername") or None)

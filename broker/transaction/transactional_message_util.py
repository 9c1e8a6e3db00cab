"""Names and small helpers shared by the transaction parts (op markers, check body encoding)."""

from __future__ import annotations

from common import mixall, record_codec
from common.message import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    MessageExt,
    MessageSysFlag,
    host_to_bytes,
    properties_to_string,
)
from common.util import java_string_hash

__all__ = [
    "REMOVE_TAG",
    "HALF_TOPIC",
    "OP_TOPIC",
    "CHECK_MAX_TIME_TOPIC",
    "CONSUMER_GROUP",
    "op_body",
    "parse_op_body",
    "encode_message_ext",
    "java_properties_string",
]

REMOVE_TAG = "d"
HALF_TOPIC = mixall.RMQ_SYS_TRANS_HALF_TOPIC
OP_TOPIC = mixall.RMQ_SYS_TRANS_OP_HALF_TOPIC
CHECK_MAX_TIME_TOPIC = mixall.TRANS_CHECK_MAX_TIME_TOPIC
CONSUMER_GROUP = mixall.CID_SYS_RMQ_TRANS  # its consumer offsets hold the check progress


def _java_bucket(key: str, capacity: int) -> int:
    h = java_string_hash(key) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & (capacity - 1)


def java_properties_string(props: dict[str, str]) -> str:
    """The properties string RocketMQ's broker writes when it re-serializes a map (``messageProperties2String``).

    The Java map is a ``HashMap``: it iterates by bucket (``hash ^ hash >>> 16``
    masked by the table size, 16 doubling past 3/4 full), and within a bucket in
    insertion order, which is what a stable sort of this dict (kept in the same
    insertion order as the Java map) gives. Records re-written by the broker
    (half, op, retry, dead-letter, check copies) then match RocketMQ's bytes.
    """
    items = [(k, v) for k, v in props.items() if v is not None]
    capacity = 16
    while len(items) > capacity * 3 // 4:
        capacity *= 2
    items.sort(key=lambda kv: _java_bucket(kv[0], capacity))
    return PROPERTY_SEPARATOR.join(k + NAME_VALUE_SEPARATOR + v for k, v in items)


def op_body(half_queue_offset: int) -> bytes:
    """Body of a remove marker: the half message's queue offset in decimal ASCII."""
    return str(half_queue_offset).encode("ascii")


def parse_op_body(body: bytes) -> int:
    """The half queue offset in a marker body, -1 when it is not a number (as RocketMQ's getLong)."""
    try:
        return int(bytes(body).decode("utf-8").strip())
    except (ValueError, UnicodeDecodeError):
        return -1


def encode_message_ext(ext: MessageExt) -> bytes:
    """One record as RocketMQ's ``MessageDecoder.encode(msg, false)`` writes it (CHECK_TRANSACTION_STATE body).

    TOTALSIZE is the real length; the body is written as stored (compressed or not).
    """
    topic_b = ext.topic.encode("utf-8")
    props_b = (ext.properties_string or properties_to_string(ext.properties)).encode("utf-8")
    born_a = host_to_bytes(ext.born_host)
    store_a = host_to_bytes(ext.store_host)
    sys_flag = ext.sys_flag
    sys_flag = sys_flag | MessageSysFlag.BORNHOST_V6 if len(born_a) == 16 else sys_flag & ~MessageSysFlag.BORNHOST_V6
    sys_flag = (sys_flag | MessageSysFlag.STOREHOSTADDRESS_V6 if len(store_a) == 16
                else sys_flag & ~MessageSysFlag.STOREHOSTADDRESS_V6)
    body = ext.body or b""
    out = bytearray(record_codec.record_length(len(body), len(topic_b), len(props_b), len(born_a) == 16,
                                               len(store_a) == 16))
    record_codec.write_record(out, 0, body, topic_b, props_b, ext.queue_id, ext.flag, ext.queue_offset,
                              ext.commit_log_offset, sys_flag, ext.born_timestamp, born_a, ext.born_host[1],
                              ext.store_timestamp, store_a, ext.store_host[1], ext.reconsume_times,
                              ext.prepared_transaction_offset, -1)
    return bytes(out)

"""Names and small helpers shared by the transaction parts (op markers, check body encoding)."""

from __future__ import annotations

import struct

from common import mixall
from common.message import (
    MESSAGE_MAGIC_CODE,
    MessageExt,
    MessageSysFlag,
    body_crc,
    host_to_bytes,
    properties_to_string,
)

__all__ = [
    "REMOVE_TAG",
    "HALF_TOPIC",
    "OP_TOPIC",
    "CHECK_MAX_TIME_TOPIC",
    "CONSUMER_GROUP",
    "op_body",
    "parse_op_body",
    "encode_message_ext",
]

REMOVE_TAG = "d"
HALF_TOPIC = mixall.RMQ_SYS_TRANS_HALF_TOPIC
OP_TOPIC = mixall.RMQ_SYS_TRANS_OP_HALF_TOPIC
CHECK_MAX_TIME_TOPIC = mixall.TRANS_CHECK_MAX_TIME_TOPIC
CONSUMER_GROUP = mixall.CID_SYS_RMQ_TRANS  # its consumer offsets hold the check progress

_HEAD = struct.Struct(">iiiiiqqiq")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


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
    total = (_HEAD.size + len(born_a) + 4 + 8 + len(store_a) + 4 + 4 + 8 + 4 + len(body)
             + 1 + len(topic_b) + 2 + len(props_b))
    out = bytearray()
    out += _HEAD.pack(total, MESSAGE_MAGIC_CODE, body_crc(body), ext.queue_id, ext.flag, ext.queue_offset,
                      ext.commit_log_offset, sys_flag, ext.born_timestamp)
    out += born_a + _I32.pack(ext.born_host[1])
    out += _I64.pack(ext.store_timestamp)
    out += store_a + _I32.pack(ext.store_host[1])
    out += _I32.pack(ext.reconsume_times) + _I64.pack(ext.prepared_transaction_offset)
    out += _I32.pack(len(body)) + body
    out += bytes([len(topic_b)]) + topic_b
    out += struct.pack(">h", len(props_b)) + props_b
    return bytes(out)

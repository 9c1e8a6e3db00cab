"""RocketMQ 4.x's message-trace context format (TraceDataEncoder), sans-IO.

A trace message body is a run of records, each ended by FIELD_SPLITOR (\\x02), fields
separated by CONTENT_SPLITOR (\\x01):

* Pub: type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost, bodyLength,
  costTime, msgType ordinal, offsetMsgId, success
* SubBefore: type, timestamp, regionId, group, requestId, msgId, retryTimes, keys
* SubAfter: type, requestId, msgId, costTime, success, keys, contextCode, timestamp
* EndTransaction: type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost,
  msgType ordinal, transactionId, transactionState, fromTransactionCheck

The message's KEYS are the record's msgId and keys, so QUERY_MESSAGE by key finds it.
Java's traces and ours decode alike.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["TraceType", "MessageType", "TraceBean", "TraceContext", "encode_context", "decode_trace_data",
           "CONTENT_SPLITOR", "FIELD_SPLITOR", "TRACE_INSTANCE_PREFIX", "GROUP_NAME_PREFIX"]

CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"
GROUP_NAME_PREFIX = "_INNER_TRACE_PRODUCER"
TRACE_INSTANCE_PREFIX = "PID_CLIENT_INNER_TRACE_PRODUCER"


class TraceType(enum.Enum):
    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class MessageType(enum.IntEnum):
    """Java's MessageType, written by ordinal."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


@dataclass
class TraceBean:
    topic: str = ""
    msg_id: str = ""
    offset_msg_id: str = ""
    tags: str = ""
    keys: str = ""
    store_host: str = ""
    body_length: int = 0
    msg_type: MessageType = MessageType.Normal_Msg
    retry_times: int = 0
    transaction_id: str | None = None
    transaction_state: str = ""
    from_transaction_check: bool = False
    client_host: str = ""


@dataclass
class TraceContext:
    trace_type: TraceType
    timestamp: int = 0
    region_id: str = ""
    group_name: str = ""
    cost_time: int = 0
    success: bool = True
    request_id: str = ""
    context_code: int = 0
    beans: list[TraceBean] = field(default_factory=list)


def _b(v: bool) -> str:
    return "true" if v else "false"


def _s(v: object) -> str:
    # Java's StringBuilder prints null as "null"; the separators may not occur inside a field
    return "null" if v is None else str(v).replace(CONTENT_SPLITOR, " ").replace(FIELD_SPLITOR, " ")


def encode_context(ctx: TraceContext) -> tuple[str, list[str]]:
    """(the records of ``ctx``, the keys to index them by)."""
    C = CONTENT_SPLITOR
    out = []
    t = ctx.trace_type
    if t is TraceType.Pub:
        b = ctx.beans[0]
        out.append(C.join(_s(x) for x in (t.value, ctx.timestamp, ctx.region_id, ctx.group_name, b.topic, b.msg_id,
                                          b.tags, b.keys, b.store_host, b.body_length, ctx.cost_time,
                                          int(b.msg_type), b.offset_msg_id)) + C + _b(ctx.success) + FIELD_SPLITOR)
    elif t is TraceType.SubBefore:
        for b in ctx.beans:
            out.append(C.join(_s(x) for x in (t.value, ctx.timestamp, ctx.region_id, ctx.group_name, ctx.request_id,
                                              b.msg_id, b.retry_times, b.keys)) + FIELD_SPLITOR)
    elif t is TraceType.SubAfter:
        for b in ctx.beans:
            out.append(C.join(_s(x) for x in (t.value, ctx.request_id, b.msg_id, ctx.cost_time, _b(ctx.success),
                                              b.keys, ctx.context_code, ctx.timestamp)) + FIELD_SPLITOR)
    elif t is TraceType.EndTransaction:
        b = ctx.beans[0]
        out.append(C.join(_s(x) for x in (t.value, ctx.timestamp, ctx.region_id, ctx.group_name, b.topic, b.msg_id,
                                          b.tags, b.keys, b.store_host, int(b.msg_type), b.transaction_id,
                                          b.transaction_state)) + C + _b(b.from_transaction_check) + FIELD_SPLITOR)
    keys = []
    for b in ctx.beans:
        keys.append(b.msg_id)
        if b.keys:
            keys.append(b.keys)
    return "".join(out), keys


def _int(v: str, default: int = 0) -> int:
    try:
        return int(v)
    except ValueError:
        return default


def decode_trace_data(data: str) -> list[TraceContext]:
    """The records of a trace message body; unknown or short records are skipped."""
    out: list[TraceContext] = []
    for rec in data.split(FIELD_SPLITOR):
        f = rec.split(CONTENT_SPLITOR)
        kind = f[0]
        try:
            if kind == "Pub" and len(f) >= 13:
                b = TraceBean(topic=f[4], msg_id=f[5], tags=f[6], keys=f[7], store_host=f[8],
                              body_length=_int(f[9]), msg_type=MessageType(_int(f[11])))
                ctx = TraceContext(TraceType.Pub, _int(f[1]), f[2], f[3], cost_time=_int(f[10]), beans=[b])
                if len(f) == 13:
                    ctx.success = f[12] == "true"
                else:
                    b.offset_msg_id, ctx.success = f[12], f[13] == "true"
                    if len(f) >= 15:
                        b.client_host = f[14]
            elif kind == "SubBefore" and len(f) >= 8:
                b = TraceBean(msg_id=f[5], retry_times=_int(f[6]), keys=f[7])
                ctx = TraceContext(TraceType.SubBefore, _int(f[1]), f[2], f[3], request_id=f[4], beans=[b])
            elif kind == "SubAfter" and len(f) >= 6:
                b = TraceBean(msg_id=f[2], keys=f[5])
                ctx = TraceContext(TraceType.SubAfter, request_id=f[1], cost_time=_int(f[3]), success=f[4] == "true",
                                   beans=[b])
                if len(f) >= 7:
                    ctx.context_code = _int(f[6])
                if len(f) >= 8:
                    ctx.timestamp = _int(f[7])
            elif kind == "EndTransaction" and len(f) >= 13:
                b = TraceBean(topic=f[4], msg_id=f[5], tags=f[6], keys=f[7], store_host=f[8],
                              msg_type=MessageType(_int(f[9])), transaction_id=f[10], transaction_state=f[11],
                              from_transaction_check=f[12] == "true")
                ctx = TraceContext(TraceType.EndTransaction, _int(f[1]), f[2], f[3], beans=[b])
            else:
                continue
        except ValueError:
            continue
        out.append(ctx)
    return out

"""Query the trace of one message (RocketMQ's QueryMsgTraceById / TraceView): what the admin
tool prints and a dashboard can show."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from client.trace.trace_data_encoder import TraceType, decode_trace_data
from common.mixall import RMQ_SYS_TRACE_TOPIC

__all__ = ["TraceView", "query_trace_by_msg_id", "trace_views_of", "format_trace"]

LONG_MAX = 2**63 - 1


@dataclass
class TraceView:
    msg_type: str  # Pub, SubBefore, SubAfter, EndTransaction
    msg_id: str
    group_name: str
    client_host: str
    timestamp: int
    cost_time: int
    status: str  # success / failed
    topic: str = ""
    tags: str = ""
    keys: str = ""
    store_host: str = ""
    offset_msg_id: str = ""
    request_id: str = ""
    transaction_state: str = ""


def _host(addr: Any) -> str:
    return f"{addr[0]}:{addr[1]}" if isinstance(addr, tuple) and len(addr) >= 2 else str(addr or "")


def trace_views_of(msg_id: str, trace_messages: list[Any]) -> list[TraceView]:
    """The records about ``msg_id`` in these trace messages (MessageExt). A SubAfter record does not
    carry its group; it takes the group of the SubBefore with the same request id."""
    views: list[TraceView] = []
    before_group: dict[str, str] = {}
    for m in trace_messages:
        try:
            text = (m.body or b"").decode("utf-8")
        except UnicodeDecodeError:
            continue
        client = _host(m.born_host)
        for ctx in decode_trace_data(text):
            bean = ctx.beans[0]
            if ctx.trace_type is TraceType.SubBefore:
                before_group[ctx.request_id] = ctx.group_name
            if bean.msg_id != msg_id:
                continue
            views.append(TraceView(
                msg_type=ctx.trace_type.value, msg_id=bean.msg_id, group_name=ctx.group_name, client_host=client,
                timestamp=ctx.timestamp, cost_time=ctx.cost_time, status="success" if ctx.success else "failed",
                topic=bean.topic, tags=bean.tags, keys=bean.keys, store_host=bean.store_host,
                offset_msg_id=bean.offset_msg_id, request_id=ctx.request_id,
                transaction_state=bean.transaction_state))
    for v in views:
        if v.msg_type == TraceType.SubAfter.value and not v.group_name:
            v.group_name = before_group.get(v.request_id, "")
    return views


async def query_trace_by_msg_id(admin: Any, msg_id: str, trace_topic: str = RMQ_SYS_TRACE_TOPIC,
                                max_num: int = 64, begin: int = 0, end: int = LONG_MAX) -> list[TraceView]:
    """Trace records of ``msg_id``: QUERY_MESSAGE by key on the trace topic (``admin`` is an MQAdmin)."""
    msgs = await admin.query_message(trace_topic, msg_id, max_num, begin, end)
    return trace_views_of(msg_id, msgs)


def _fmt_time(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) if ms > 0 else "-"


def format_trace(views: list[TraceView]) -> str:
    """The Java tool's layout: each Pub with its header, then per consumer group its Sub lines."""
    row = "{:<10s} {:<20s} {:<20s} {:<20s} {:<10s} {:<10s}\n"
    out = []
    consumers: dict[str, list[TraceView]] = {}
    for v in views:
        if v.msg_type == TraceType.Pub.value:
            out.append(row.format("#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"))
            out.append(row.format("Pub", v.group_name, v.client_host, _fmt_time(v.timestamp), f"{v.cost_time}ms",
                                  v.status))
            out.append("\n")
        elif v.msg_type == TraceType.SubAfter.value:
            consumers.setdefault(v.group_name, []).append(v)
    for group, subs in consumers.items():
        out.append(row.format("#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status"))
        for v in subs:
            out.append(row.format("Sub", group, v.client_host, _fmt_time(v.timestamp), f"{v.cost_time}ms", v.status))
        out.append("\n")
    return "".join(out)

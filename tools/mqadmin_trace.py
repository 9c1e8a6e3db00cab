"""``mqadmin queryMsgTraceById``: the trace of one message, printed like the Java tool."""

from __future__ import annotations

from client.admin import MQAdmin
from client.trace.trace_view import LONG_MAX, format_trace, query_trace_by_msg_id
from common.mixall import RMQ_SYS_TRACE_TOPIC
from tools.mqadmin_command import command

__all__ = ["query_msg_trace_by_id"]


def _setup(p) -> None:
    p.add_argument("-i", "--msgId", dest="msgId", required=True, help="Message Id")
    p.add_argument("-t", "--traceTopic", dest="traceTopic", default=RMQ_SYS_TRACE_TOPIC,
                   help="The name value of message trace topic")
    p.add_argument("-b", "--beginTimestamp", dest="beginTimestamp", type=int, default=0)
    p.add_argument("-e", "--endTimestamp", dest="endTimestamp", type=int, default=LONG_MAX)
    p.add_argument("-num", "--maxNum", dest="maxNum", type=int, default=64)


@command("queryMsgTraceById", "Query a message trace", _setup)
async def query_msg_trace_by_id(admin: MQAdmin, args) -> None:
    views = await query_trace_by_msg_id(admin, args.msgId.strip(), args.traceTopic.strip(), args.maxNum,
                                        args.beginTimestamp, args.endTimestamp)
    print(format_trace(views), end="")

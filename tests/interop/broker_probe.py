"""Look at the broker and NameServer side of an interop run with our own RemotingClient.

Blocking wrappers (one short event loop per call) so that tests can use them in
``wait_until`` conditions while the C++ client runs in another process.
"""

from __future__ import annotations

import asyncio

from remoting import fastjson
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.header.broker import (
    GetConsumerListByGroupRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
)
from remoting.header.namesrv import GetRouteInfoRequestHeader


async def _invoke(
    addr: str, code: int, header, timeout: float, language: int | None, extra_ext
) -> RemotingCommand:
    req = RemotingCommand.request(code, header)
    if language is not None:
        req.language = language
    for k, v in (extra_ext or {}).items():
        req.add_ext_field(k, v)
    async with RemotingClient(name="interop-probe") as client:
        return await client.invoke(addr, req, timeout)


def invoke(
    addr: str,
    code: int,
    header,
    timeout: float = 3.0,
    language: int | None = None,
    extra_ext: dict | None = None,
) -> RemotingCommand:
    """One request/response round trip to ``addr``.

    ``language``: the request's LanguageCode (default JAVA); ``extra_ext``: extFields beyond the header's.
    """
    return asyncio.run(_invoke(addr, code, header, timeout, language, extra_ext))


def _offset(resp: RemotingCommand) -> int:
    assert resp.code == ResponseCode.SUCCESS, (resp.code, resp.remark)
    return int((resp.ext_fields or {})["offset"])


def max_offset(broker: str, topic: str, queue_id: int) -> int:
    """GET_MAX_OFFSET of one queue."""
    return _offset(
        invoke(broker, RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic=topic, queueId=queue_id))
    )


def min_offset(broker: str, topic: str, queue_id: int) -> int:
    """GET_MIN_OFFSET of one queue."""
    return _offset(
        invoke(broker, RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(topic=topic, queueId=queue_id))
    )


def total_max_offset(broker: str, topic: str, queues: int) -> int:
    """Sum of GET_MAX_OFFSET over queues 0..queues-1."""
    return sum(max_offset(broker, topic, q) for q in range(queues))


def consumer_offset(broker: str, group: str, topic: str, queue_id: int) -> int | None:
    """QUERY_CONSUMER_OFFSET; None when the broker has none (QUERY_NOT_FOUND)."""
    resp = invoke(
        broker,
        RequestCode.QUERY_CONSUMER_OFFSET,
        QueryConsumerOffsetRequestHeader(consumerGroup=group, topic=topic, queueId=queue_id),
    )
    if resp.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    return _offset(resp)


def committed_total(broker: str, group: str, topic: str, queues: int) -> int:
    """Sum of the committed offsets of ``group`` over queues 0..queues-1 (missing counts 0)."""
    return sum(consumer_offset(broker, group, topic, q) or 0 for q in range(queues))


def consumer_ids(broker: str, group: str) -> list[str]:
    """GET_CONSUMER_LIST_BY_GROUP; [] when the group has no consumer online."""
    resp = invoke(
        broker,
        RequestCode.GET_CONSUMER_LIST_BY_GROUP,
        GetConsumerListByGroupRequestHeader(consumerGroup=group),
    )
    if resp.code != ResponseCode.SUCCESS or not resp.body:
        return []
    return list(fastjson.loads(resp.body).get("consumerIdList") or [])


def route(namesrv: str, topic: str) -> dict | None:
    """GET_ROUTEINFO_BY_TOPIC from the NameServer; None when the topic has no route."""
    resp = invoke(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic))
    if resp.code != ResponseCode.SUCCESS:
        return None
    return fastjson.loads(resp.body)


def read_queue_nums(namesrv: str, topic: str) -> int:
    """Read queue count of ``topic`` on its (single) broker, 0 without a route."""
    r = route(namesrv, topic)
    if not r:
        return 0
    return sum(int(q["readQueueNums"]) for q in r.get("queueDatas") or [])

"""MQClientAPI: the client's RPCs over one RemotingClient (Java MQClientAPIImpl).

Every method builds one request, sends it and turns the answer into a value or
an :class:`MQBrokerError`. NameServer requests fail over across the
configured NameServers.
"""

from __future__ import annotations

import asyncio
import logging

from client.acl import ClientRPCHook
from client.exceptions import MQBrokerError, MQClientError
from remoting import LanguageCode, RemotingClient, RemotingCommand, RemotingError, RequestCode, ResponseCode
from remoting.body.cluster import ClusterInfo, TopicList
from remoting.body.consumer import (
    GetConsumerListByGroupResponseBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
)
from remoting.body.heartbeat import HeartbeatData
from remoting.body.route import TopicRouteData
from remoting.header import CommandHeader
from remoting.header.broker import (
    ConsumerSendMsgBackRequestHeader,
    EndTransactionRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from remoting.header.namesrv import GetRouteInfoRequestHeader

__all__ = ["MQClientAPI", "request"]

log = logging.getLogger("client")


def request(code: int, header: CommandHeader | dict | None = None, body: bytes | None = None, *, oneway: bool = False):
    """A request as this client sends it (language PYTHON, version 4.9.7)."""
    cmd = RemotingCommand.request(code, header, body, oneway=oneway)
    cmd.language = LanguageCode.PYTHON
    return cmd


def check(resp: RemotingCommand, addr: str = "", ok: tuple[int, ...] = (ResponseCode.SUCCESS,)) -> RemotingCommand:
    """``resp`` if its code is one of ``ok``, else MQBrokerError."""
    if resp.code not in ok:
        raise MQBrokerError(resp.code, resp.remark, addr)
    return resp


class MQClientAPI:
    """RPCs to NameServers and brokers; see the module docstring."""

    def __init__(self, remoting: RemotingClient, namesrv_addrs: list[str], timeout: float = 3.0,
                 rpc_hook: ClientRPCHook | None = None):
        self.remoting = remoting
        self.namesrv_addrs = list(namesrv_addrs)
        self.timeout = timeout
        self._ns_index = 0
        #: runs on every request before it is sent (ACL signing, client.acl)
        self.rpc_hook = rpc_hook

    # -- plumbing -------------------------------------------------------------------------

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout: float | None = None) -> RemotingCommand:
        if self.rpc_hook is not None:
            self.rpc_hook.do_before_request(addr, cmd)
        return await self.remoting.invoke(addr, cmd, self.timeout if timeout is None else timeout)

    async def oneway(self, addr: str, cmd: RemotingCommand) -> None:
        cmd.mark_oneway()
        if self.rpc_hook is not None:
            self.rpc_hook.do_before_request(addr, cmd)
        await self.remoting.invoke_oneway(addr, cmd)

    async def invoke_namesrv(self, cmd_factory, timeout: float | None = None) -> RemotingCommand:
        """Send to the current NameServer, moving on to the next one on a connection/timeout failure."""
        last: Exception | None = None
        n = len(self.namesrv_addrs)
        for i in range(n):
            addr = self.namesrv_addrs[(self._ns_index + i) % n]
            try:
                resp = await self.invoke(addr, cmd_factory(), timeout)
            except RemotingError as e:
                last = e
                log.warning("NameServer %s failed: %s", addr, e)
                await self.remoting.close_connection(addr)
                continue
            self._ns_index = (self._ns_index + i) % n
            return resp
        raise MQClientError(f"no NameServer reachable in {self.namesrv_addrs}: {last}") from last

    # -- NameServer --------------------------------------------------------------------------

    async def get_topic_route(self, topic: str, timeout: float | None = None) -> TopicRouteData | None:
        """The route of ``topic``, None when the NameServer says TOPIC_NOT_EXIST."""
        resp = await self.invoke_namesrv(
            lambda: request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)), timeout
        )
        if resp.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        check(resp)
        return TopicRouteData.from_json(resp.body)

    async def get_cluster_info(self) -> ClusterInfo:
        resp = check(await self.invoke_namesrv(lambda: request(RequestCode.GET_BROKER_CLUSTER_INFO)))
        return ClusterInfo.from_json(resp.body)

    async def get_topic_list(self) -> TopicList:
        resp = check(await self.invoke_namesrv(lambda: request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)))
        return TopicList.from_json(resp.body)

    # -- heartbeat ----------------------------------------------------------------------------

    async def send_heartbeat(self, addr: str, data: HeartbeatData, timeout: float | None = None) -> None:
        check(await self.invoke(addr, request(RequestCode.HEART_BEAT, None, data.to_json()), timeout), addr)

    async def unregister_client(self, addr: str, client_id: str, producer_group: str | None,
                                consumer_group: str | None) -> None:
        h = UnregisterClientRequestHeader(clientID=client_id, producerGroup=producer_group, consumerGroup=consumer_group)
        check(await self.invoke(addr, request(RequestCode.UNREGISTER_CLIENT, h)), addr)

    # -- consumer -----------------------------------------------------------------------------

    async def pull_message(self, addr: str, h: PullMessageRequestHeader, timeout: float) -> RemotingCommand:
        return await self.invoke(addr, request(RequestCode.PULL_MESSAGE, h), timeout)

    async def get_consumer_id_list(self, addr: str, group: str) -> list[str]:
        resp = await self.invoke(addr, request(RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                               GetConsumerListByGroupRequestHeader(consumerGroup=group)))
        check(resp, addr)
        return GetConsumerListByGroupResponseBody.from_json(resp.body).consumerIdList if resp.body else []

    async def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int | None:
        """The broker's committed offset, None for QUERY_NOT_FOUND."""
        h = QueryConsumerOffsetRequestHeader(consumerGroup=group, topic=mq.topic, queueId=mq.queueId, bname=mq.brokerName)
        resp = await self.invoke(addr, request(RequestCode.QUERY_CONSUMER_OFFSET, h))
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        check(resp, addr)
        return int(resp.ext_fields["offset"])

    async def update_consumer_offset_oneway(self, addr: str, group: str, mq: MessageQueue, offset: int) -> None:
        h = UpdateConsumerOffsetRequestHeader(consumerGroup=group, topic=mq.topic, queueId=mq.queueId,
                                              commitOffset=offset, bname=mq.brokerName)
        await self.oneway(addr, request(RequestCode.UPDATE_CONSUMER_OFFSET, h))

    async def update_consumer_offset(self, addr: str, group: str, mq: MessageQueue, offset: int) -> None:
        h = UpdateConsumerOffsetRequestHeader(consumerGroup=group, topic=mq.topic, queueId=mq.queueId,
                                              commitOffset=offset, bname=mq.brokerName)
        check(await self.invoke(addr, request(RequestCode.UPDATE_CONSUMER_OFFSET, h)), addr)

    async def get_max_offset(self, addr: str, mq: MessageQueue) -> int:
        h = GetMaxOffsetRequestHeader(topic=mq.topic, queueId=mq.queueId, bname=mq.brokerName)
        return int(check(await self.invoke(addr, request(RequestCode.GET_MAX_OFFSET, h)), addr).ext_fields["offset"])

    async def get_min_offset(self, addr: str, mq: MessageQueue) -> int:
        h = GetMinOffsetRequestHeader(topic=mq.topic, queueId=mq.queueId, bname=mq.brokerName)
        return int(check(await self.invoke(addr, request(RequestCode.GET_MIN_OFFSET, h)), addr).ext_fields["offset"])

    async def search_offset(self, addr: str, mq: MessageQueue, timestamp: int) -> int:
        h = SearchOffsetRequestHeader(topic=mq.topic, queueId=mq.queueId, timestamp=timestamp, bname=mq.brokerName)
        resp = check(await self.invoke(addr, request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, h)), addr)
        return int(resp.ext_fields["offset"])

    async def consumer_send_message_back(self, addr: str, h: ConsumerSendMsgBackRequestHeader,
                                         timeout: float | None = None) -> None:
        check(await self.invoke(addr, request(RequestCode.CONSUMER_SEND_MSG_BACK, h), timeout), addr)

    async def lock_batch_mq(self, addr: str, body: LockBatchRequestBody, timeout: float = 1.0) -> set[MessageQueue]:
        resp = check(await self.invoke(addr, request(RequestCode.LOCK_BATCH_MQ, None, body.to_json()), timeout), addr)
        return set(LockBatchResponseBody.from_json(resp.body).lockOKMQSet) if resp.body else set()

    async def unlock_batch_mq(self, addr: str, body: LockBatchRequestBody, oneway: bool = False) -> None:
        cmd = request(RequestCode.UNLOCK_BATCH_MQ, None, body.to_json())
        if oneway:
            await self.oneway(addr, cmd)
        else:
            check(await self.invoke(addr, cmd, 1.0), addr)

    # -- producer -----------------------------------------------------------------------------

    async def end_transaction_oneway(self, addr: str, h: EndTransactionRequestHeader, remark: str | None) -> None:
        cmd = request(RequestCode.END_TRANSACTION, h)
        cmd.remark = remark
        await self.oneway(addr, cmd)


async def gather_quietly(*aws) -> list:
    """Run awaitables concurrently; exceptions are returned, not raised."""
    return await asyncio.gather(*aws, return_exceptions=True)

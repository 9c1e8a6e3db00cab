"""Broker + NameServer processes: registration, auto-created topic routes, unregistration on shutdown."""

from __future__ import annotations

from remoting.body.route import TopicRouteData
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import call, send
from tests.support import async_wait_until, free_port


def start_namesrv(procs, tmp_path):
    port = free_port()
    conf = tmp_path / "namesrv.conf"
    conf.write_text(
        f"listenPort={port}\nkvConfigPath={tmp_path / 'ns' / 'kvConfig.json'}\n"
        f"configStorePath={tmp_path / 'ns' / 'namesrv.properties'}\n"
    )
    p = procs.start("namesrv", ["mqnamesrv", "-c", str(conf)])
    p.wait_port(port)
    return f"127.0.0.1:{port}"


async def route(c: RemotingClient, ns: str, topic: str):
    r = await call(c, ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    return TopicRouteData.from_json(r.body) if r.code == ResponseCode.SUCCESS else None


async def test_route_contains_broker_and_auto_created_topic(procs, tmp_path, broker_factory):
    ns = start_namesrv(procs, tmp_path)
    b = broker_factory("nsb", namesrvAddr=ns)
    async with RemotingClient() as c:
        # registered at start: TBW102 is routable to this broker (what the Java producer looks up)
        rd = await async_wait_until(lambda: route(c, ns, "TBW102"), 10, what="TBW102 route")
        assert rd.brokerDatas[0].brokerName == "nsb"
        assert rd.brokerDatas[0].brokerAddrs[0] == b.addr
        qd = rd.queueDatas[0]
        assert qd.perm == 7 and qd.readQueueNums == 8
        assert await route(c, ns, "NsAutoT") is None
        # a send through TBW102 creates the topic and registers at once (not after 30 s)
        r = await send(c, b.addr, "NsAutoT", b"x", queue_nums=4)
        assert r.code == ResponseCode.SUCCESS
        rd = await async_wait_until(lambda: route(c, ns, "NsAutoT"), 5, what="auto-created topic route")
        assert rd.queueDatas[0].writeQueueNums == 4 and rd.queueDatas[0].perm == 6
        # UPDATE_AND_CREATE_TOPIC too
        h = {"topic": "NsAdmT", "defaultTopic": "TBW102", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6,
             "topicFilterType": "SINGLE_TAG", "order": "false"}
        assert (await call(c, b.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, h)).code == ResponseCode.SUCCESS
        await async_wait_until(lambda: route(c, ns, "NsAdmT"), 5, what="created topic route")
    # graceful stop unregisters the broker: its topics leave the routes
    assert b.stop() == 0
    async with RemotingClient() as c:
        assert await route(c, ns, "NsAutoT") is None


async def test_broker_without_write_perm_advertises_it(procs, tmp_path, broker_factory):
    ns = start_namesrv(procs, tmp_path)
    b = broker_factory("ro", namesrvAddr=ns, brokerPermission=4)
    async with RemotingClient() as c:
        rd = await async_wait_until(lambda: route(c, ns, "TBW102"), 10, what="route")
        assert rd.queueDatas[0].perm == 4
        r = await call(c, b.addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerPermission=6\n")
        assert r.code == ResponseCode.SUCCESS

        async def writable():
            rd = await route(c, ns, "TBW102")
            return rd is not None and rd.queueDatas[0].perm == 7

        await async_wait_until(writable, 5, what="perm re-registered")


async def test_slave_copies_master_metadata_and_refuses_writes(procs, tmp_path, broker_factory):
    from remoting.body.subscription_group import SubscriptionGroupConfig, SubscriptionGroupWrapper
    from remoting.body.topic_config import TopicConfigSerializeWrapper

    ns = start_namesrv(procs, tmp_path)
    master = broker_factory("ms", namesrvAddr=ns)
    async with RemotingClient() as c:
        await async_wait_until(lambda: route(c, ns, "TBW102"), 10, what="master registered")
        h = {"topic": "SyncedT", "defaultTopic": "TBW102", "readQueueNums": 3, "writeQueueNums": 3, "perm": 6,
             "topicFilterType": "SINGLE_TAG", "order": "false"}
        assert (await call(c, master.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, h)).code == ResponseCode.SUCCESS
        body = SubscriptionGroupConfig(groupName="gSynced", retryMaxTimes=4).to_json()
        assert (await call(c, master.addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)).code == 0
        await call(c, master.addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": "gSynced", "topic": "SyncedT", "queueId": 2, "commitOffset": 9})
        slave = broker_factory("ms-slave", namesrvAddr=ns, brokerName="ms", brokerRole="SLAVE", brokerId=1)

        async def synced():
            r = await call(c, slave.addr, RequestCode.GET_ALL_TOPIC_CONFIG)
            if "SyncedT" not in TopicConfigSerializeWrapper.from_json(r.body).topicConfigTable:
                return False
            r = await call(c, slave.addr, RequestCode.QUERY_CONSUMER_OFFSET,
                           {"consumerGroup": "gSynced", "topic": "SyncedT", "queueId": 2})
            if r.code != ResponseCode.SUCCESS or r.ext_fields.get("offset") != "9":
                return False
            # subscription groups come last in a sync round: wait for them too, not only for the offsets
            r = await call(c, slave.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
            return "gSynced" in SubscriptionGroupWrapper.from_json(r.body).subscriptionGroupTable

        await async_wait_until(synced, 20, interval=0.2, what="slave synced from master")
        r = await call(c, slave.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        assert SubscriptionGroupWrapper.from_json(r.body).subscriptionGroupTable["gSynced"].retryMaxTimes == 4
        # a slave stores nothing
        r = await send(c, slave.addr, "SyncedT", b"x")
        assert r.code == ResponseCode.SERVICE_NOT_AVAILABLE
        # and refuses admin changes
        r = await call(c, slave.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, dict(h, topic="OnSlaveT"))
        assert r.code == ResponseCode.SYSTEM_ERROR
        # both addresses are in the route of the topic
        rd = await route(c, ns, "SyncedT")
        assert rd.brokerDatas[0].brokerAddrs == {0: master.addr, 1: slave.addr}
        # the slave learned the master's HA address from the NameServer and replicates its CommitLog
        assert (await send(c, master.addr, "SyncedT", b"replicated", queue_id=1)).code == ResponseCode.SUCCESS
        from tests.broker.helpers import wait_max_offset

        await wait_max_offset(c, slave.addr, "SyncedT", 1, 1, timeout=15)


async def test_registered_filter_servers_are_advertised(procs, tmp_path, broker_factory):
    """BrokerController.doRegisterBrokerAll sends FilterServerManager.buildNewFilterServerList() in
    RegisterBrokerBody.filterServerList; the NameServer hands it out as the route's filterServerTable."""
    ns = start_namesrv(procs, tmp_path)
    b = broker_factory("fsb", namesrvAddr=ns)
    async with RemotingClient() as c:
        rd = await async_wait_until(lambda: route(c, ns, "TBW102"), 10, what="registered")
        assert not rd.filterServerTable.get(b.addr)
        # the filter server's registration lives as long as this connection (c stays open)
        r = await call(c, b.addr, RequestCode.REGISTER_FILTER_SERVER, {"filterServerAddr": "127.0.0.1:45001"})
        assert r.code == ResponseCode.SUCCESS, r.remark
        # a topic change re-registers at once (registerIncrementBrokerData): the list goes with it
        h = {"topic": "FsT", "defaultTopic": "TBW102", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6,
             "topicFilterType": "SINGLE_TAG", "order": "false"}
        assert (await call(c, b.addr, RequestCode.UPDATE_AND_CREATE_TOPIC, h)).code == ResponseCode.SUCCESS

        async def advertised():
            rd = await route(c, ns, "FsT")
            return rd is not None and rd.filterServerTable.get(b.addr) == ["127.0.0.1:45001"]

        await async_wait_until(advertised, 5, what="filter server in the route")

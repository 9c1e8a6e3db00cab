"""INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) -> GET_CONSUMER_STATUS_FROM_CLIENT (221), §9/§15.

Our broker composition does not register 223 yet (see test_registration), so the
handler is served here by a loopback RemotingServer with the real GroupAdminProcessor
and ConsumerManager; consumers are real RemotingClients answering 221.
"""

from __future__ import annotations

from broker.client_channel_info import ClientChannelInfo
from broker.config import BrokerConfig
from broker.consumer_manager import ConsumerManager
from broker.managers import Managers
from broker.processor.group_admin_processor import GroupAdminProcessor
from remoting import fastjson
from remoting.body.heartbeat import HeartbeatData
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from remoting.server import RemotingServer

MQ = '{"brokerName":"b1","queueId":0,"topic":"T"}'


async def test_consumer_status_gathered_from_each_client():
    consumers = ConsumerManager()
    # only the consumer registry is used by the relay
    managers = Managers(topics=None, groups=None, offsets=None, consumers=consumers, producers=None, filters=None,
                        stats=None)
    admin_proc = GroupAdminProcessor(BrokerConfig(), None, managers)

    def on_heartbeat(req, conn):
        hb = HeartbeatData.from_json(req.body)
        for cd in hb.consumerDataSet:
            consumers.register_consumer(cd.groupName, ClientChannelInfo(conn, hb.clientID, "JAVA", req.version),
                                        cd.consumeType, cd.messageModel, cd.consumeFromWhere,
                                        cd.subscriptionDataSet, False)
        return req.response_to(ResponseCode.SUCCESS)

    server = RemotingServer("127.0.0.1", 0, name="status-broker")
    server.register_processor(RequestCode.HEART_BEAT, on_heartbeat)
    server.register_processor(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, admin_proc.get_consumer_status)
    await server.start()
    addr = f"127.0.0.1:{server.port}"
    clients = []
    try:
        for i, offset in ((1, 5), (2, 9)):
            c = RemotingClient(name=f"c{i}")

            def on_status(req, conn, offset=offset):
                assert req.ext_fields["topic"] == "T" and req.ext_fields["group"] == "G"
                return req.response_to(ResponseCode.SUCCESS, body=(
                    '{"consumerTable":{},"messageQueueTable":{' + MQ + f':{offset}}}}}').encode())

            c.register_processor(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, on_status)
            hb = fastjson.dumps({"clientID": f"cid{i}", "consumerDataSet": [{"groupName": "G"}],
                                 "producerDataSet": []})
            r = await c.invoke(addr, RemotingCommand.request(RequestCode.HEART_BEAT, None, hb), 5)
            assert r.code == ResponseCode.SUCCESS
            clients.append(c)
        async with RemotingClient(name="admin") as admin:
            ask = {"topic": "T", "group": "G"}
            r = await admin.invoke(addr, RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                                                                 ask), 5)
            assert r.code == ResponseCode.SUCCESS, r.remark
            assert fastjson.loads(r.body) == fastjson.loads(
                '{"consumerTable":{"cid1":{' + MQ + ':5},"cid2":{' + MQ + ':9}},"messageQueueTable":{}}')
            r = await admin.invoke(addr, RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                                                                 {**ask, "clientAddr": "cid2"}), 5)
            assert fastjson.loads(r.body)["consumerTable"] == fastjson.loads('{"cid2":{' + MQ + ':9}}')
            r = await admin.invoke(addr, RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                                                                 {"topic": "T", "group": "nobody"}), 5)
            assert r.code == ResponseCode.SYSTEM_ERROR
    finally:
        for c in clients:
            await c.close()
        await server.stop(grace=1.0)

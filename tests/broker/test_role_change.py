"""BrokerController.change_role: the runtime master <-> slave switch a DLedger role change will call (in-process broker
on real loopback sockets)."""

from __future__ import annotations

from broker.broker_controller import create_broker
from broker.config import BrokerConfigs
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from store.config import BrokerRole
from tests.broker.helpers import call, send
from tests.support import free_port


async def test_change_role_switches_writes_and_admin(tmp_path):
    cfg = BrokerConfigs()
    cfg.broker.brokerName = "roleb"
    cfg.broker.brokerIP1 = "127.0.0.1"
    cfg.netty_server.listenPort = free_port()
    cfg.store.storePathRootDir = str(tmp_path / "store")
    cfg.store.mappedFileSizeCommitLog = 1024 * 1024
    b = create_broker(cfg)
    seen = []
    b.add_role_change_listener(seen.append)
    await b.start()
    addr = f"127.0.0.1:{cfg.netty_server.listenPort}"
    topic_hdr = {"topic": "RoleT2", "defaultTopic": "TBW102", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6,
                 "topicFilterType": "SINGLE_TAG", "order": "false"}
    try:
        async with RemotingClient() as c:
            assert (await send(c, addr, "RoleT", b"m")).code == ResponseCode.SUCCESS
            await b.change_role(master=False, broker_id=2)
            assert seen == [False] and b.role.broker_id == 2 and b.identity.broker_id == 2 and b.role.is_slave
            assert (await send(c, addr, "RoleT", b"s")).code == ResponseCode.SERVICE_NOT_AVAILABLE
            # operators see the live role; the configs keep what the file (here: the defaults) said
            text = (await call(c, addr, RequestCode.GET_BROKER_CONFIG, {})).body.decode()
            assert "brokerRole=SLAVE\n" in text and "brokerId=2\n" in text
            assert cfg.store.brokerRole is BrokerRole.ASYNC_MASTER and cfg.broker.brokerId == 0
            r = await call(c, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, topic_hdr)
            assert r.code == ResponseCode.SYSTEM_ERROR
            await b.change_role(master=True)
            assert seen == [False, True] and b.role.broker_id == 0 and b.identity.broker_id == 0
            text = (await call(c, addr, RequestCode.GET_BROKER_CONFIG, {})).body.decode()
            assert "brokerRole=SYNC_MASTER\n" in text and "brokerId=0\n" in text
            assert (await send(c, addr, "RoleT", b"m2")).code == ResponseCode.SUCCESS
            assert (await call(c, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, topic_hdr)).code == ResponseCode.SUCCESS
    finally:
        await b.shutdown()
    assert not (tmp_path / "store" / "abort").exists()

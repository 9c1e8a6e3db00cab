"""Master-only services follow BrokerController.change_role (the DLedger hook), in-process on loopback."""

from __future__ import annotations

from broker.broker_controller import create_broker
from broker.config import BrokerConfigs
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import call, messages, pull, send
from tests.support import async_wait_until, free_port


async def test_schedule_and_check_services_follow_the_role(tmp_path):
    cfg = BrokerConfigs()
    cfg.broker.brokerName = "semrole"
    cfg.broker.brokerIP1 = "127.0.0.1"
    cfg.netty_server.listenPort = free_port()
    cfg.store.storePathRootDir = str(tmp_path / "store")
    cfg.store.mappedFileSizeCommitLog = 1024 * 1024
    cfg.store.messageDelayLevel = "1s 2s"
    b = create_broker(cfg)
    sem = b.semantics
    await b.start()
    addr = f"127.0.0.1:{cfg.netty_server.listenPort}"
    try:
        assert sem.master_services_running and sem.schedule.started and sem.tx_check.started
        async with RemotingClient() as c:
            assert (await send(c, addr, "RoleD", b"d1", {"DELAY": "1"})).code == ResponseCode.SUCCESS
            await b.change_role(master=False, broker_id=2)
            assert not sem.master_services_running and not sem.schedule.started and not sem.tx_check.started
            assert (tmp_path / "store" / "config" / "delayOffset.json").exists()  # persisted when stopped
            hdr = {"producerGroup": "pg", "tranStateTableOffset": 0, "commitLogOffset": 0, "msgId": "x",
                   "commitOrRollback": 8}
            assert (await call(c, addr, RequestCode.END_TRANSACTION, hdr)).code == ResponseCode.SLAVE_NOT_AVAILABLE
            await b.change_role(master=True)
            assert sem.master_services_running and sem.schedule.started and sem.tx_check.started

            async def delivered():
                p = await pull(c, addr, "gRole", "RoleD", 0, 0)
                return messages(p) if p.code == ResponseCode.SUCCESS else None

            (m,) = await async_wait_until(delivered, 10, what="delivery after becoming master again")
            assert m.body == b"d1"
    finally:
        await b.shutdown()
    assert not sem.schedule.started

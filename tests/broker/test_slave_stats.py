"""Issue 17, defect 9: a slave counts the messages it replicates (msgPutTotalTodayNow), as 4.9.7's
reput does on a SLAVE (StoreStatsService per topic), instead of reporting 0."""

from __future__ import annotations

from remoting.body.kv import KVTable
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import call, send
from tests.support import async_wait_until


async def _put_total(c: RemotingClient, addr: str) -> int:
    r = await call(c, addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    return int(KVTable.from_json(r.body).table["msgPutTotalTodayNow"])


async def test_slave_counts_replicated_messages(broker_factory):
    master = broker_factory("stm")
    slave = broker_factory("stm-slave", brokerName="stm", brokerRole="SLAVE", brokerId=1,
                           haMasterAddress=f"127.0.0.1:{master.port + 1}")
    async with RemotingClient() as c:
        for i in range(30):
            r = await send(c, master.addr, "SlaveStatT", b"m%d" % i, queue_id=i % 2)
            assert r.code == ResponseCode.SUCCESS
        assert await _put_total(c, master.addr) == 30

        async def counted():
            return await _put_total(c, slave.addr) == 30

        await async_wait_until(counted, 15, what="slave msgPutTotalTodayNow == 30")
        # per topic too (VIEW_BROKER_STATS_DATA TOPIC_PUT_NUMS), as 4.9.7's store stats keep them
        r = await call(c, slave.addr, RequestCode.VIEW_BROKER_STATS_DATA,
                       {"statsName": "TOPIC_PUT_NUMS", "statsKey": "SlaveStatT"})
        assert r.code == ResponseCode.SUCCESS, r.remark

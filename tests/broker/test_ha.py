"""Master -> slave CommitLog replication over the HA port (listenPort + 1), and SYNC_MASTER waits."""

from __future__ import annotations

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import call, messages, send, wait_max_offset
from tests.support import async_wait_until


async def test_slave_replicates_the_commit_log(broker_factory):
    master = broker_factory("hm")
    slave = broker_factory("hm-slave", brokerName="hm", brokerRole="SLAVE", brokerId=1,
                           haMasterAddress=f"127.0.0.1:{master.port + 1}")
    async with RemotingClient() as c:
        ids = []
        for i in range(200):
            r = await send(c, master.addr, "HaT", b"rep-%d" % i, {"KEYS": f"k{i}"}, queue_id=i % 2)
            assert r.code == ResponseCode.SUCCESS
            ids.append(r.ext_fields["msgId"])
        # the slave's own reput builds its consume queues from the replicated CommitLog
        await wait_max_offset(c, slave.addr, "HaT", 0, 100, timeout=15)
        await wait_max_offset(c, slave.addr, "HaT", 1, 100, timeout=15)
        from common.message import decode_offset_msg_id

        for msg_id in (ids[0], ids[123], ids[-1]):
            _, phys = decode_offset_msg_id(msg_id)
            a = await call(c, master.addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": phys})
            b = await call(c, slave.addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": phys})
            assert b.code == ResponseCode.SUCCESS and b.body == a.body
        # data sent while connected keeps flowing
        await send(c, master.addr, "HaT", b"later", queue_id=0)
        await wait_max_offset(c, slave.addr, "HaT", 0, 101, timeout=15)
        r = await call(c, slave.addr, RequestCode.GET_MAX_OFFSET, {"topic": "HaT", "queueId": 0})
        assert r.ext_fields["offset"] == "101"
        assert messages(await call(c, slave.addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": phys}))


async def test_sync_master_waits_for_the_slave(broker_factory):
    master = broker_factory("sm", brokerRole="SYNC_MASTER", slaveTimeout=1000)
    async with RemotingClient() as c:
        # no slave yet: stored, but answered SLAVE_NOT_AVAILABLE
        r = await send(c, master.addr, "SmT", b"alone", {"WAIT": "true"})
        assert r.code == ResponseCode.SLAVE_NOT_AVAILABLE
        slave = broker_factory("sm-slave", brokerName="sm", brokerRole="SLAVE", brokerId=1,
                               haMasterAddress=f"127.0.0.1:{master.port + 1}")

        async def replicated():
            r = await send(c, master.addr, "SmT", b"acked", {"WAIT": "true"})
            return r.code == ResponseCode.SUCCESS

        await async_wait_until(replicated, 15, interval=0.2, what="SYNC_MASTER send acked by the slave")
        r = await send(c, master.addr, "SmT", b"again", {"WAIT": "true"})
        assert r.code == ResponseCode.SUCCESS
        # WAIT=false does not wait for anyone
        slave.stop()
        r = await send(c, master.addr, "SmT", b"nowait", {"WAIT": "false"})
        assert r.code == ResponseCode.SUCCESS

"""Delay levels: delivered when due (never early), tag code restored, restart neither loses nor repeats."""

from __future__ import annotations

import time

from common.util import java_string_hash
from remoting import fastjson
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import call, messages, pull, send
from tests.support import async_wait_until

LEVELS = "1s 2s 3s"


async def _pull_all(c, addr, group, topic, qid=0, **kw):
    out, off = [], 0
    while True:
        r = await pull(c, addr, group, topic, qid, off, **kw)
        if r.code != ResponseCode.SUCCESS:
            return out
        ms = messages(r)
        out.extend(ms)
        off = int(r.ext_fields["nextBeginOffset"])


async def test_delivered_on_time_never_early(broker_factory):
    b = broker_factory("d1", messageDelayLevel=LEVELS, flushDelayOffsetInterval=500)
    async with RemotingClient() as c:
        sent = {}
        for level, n in ((1, 5), (2, 3), (3, 2), (9, 2)):  # 9 is clamped to the max level 3
            for i in range(n):
                key = f"L{level}-{i}"
                r = await send(c, b.addr, "DelayT", key.encode(), {"TAGS": f"tag{level}", "DELAY": str(level),
                                                                   "UNIQ_KEY": key}, queue_id=1)
                assert r.code == ResponseCode.SUCCESS, r.remark
                sent[key] = (min(level, 3), time.time())
        # parked in SCHEDULE_TOPIC_XXXX queue level-1, nothing visible in the real topic yet
        async def parked_all():
            got = await _pull_all(c, b.addr, "gSched", "SCHEDULE_TOPIC_XXXX", 2)
            return got if len(got) >= 4 else None

        parked = await async_wait_until(parked_all, 5, what="level-3 messages parked")
        assert {m.properties["UNIQ_KEY"] for m in parked} == {"L3-0", "L3-1", "L9-0", "L9-1"}
        assert all(m.properties["REAL_TOPIC"] == "DelayT" and m.properties["REAL_QID"] == "1" for m in parked)
        assert {m.properties["DELAY"] for m in parked} == {"3"}

        async def all_delivered():
            got = await _pull_all(c, b.addr, "gD", "DelayT", 1)
            return got if len(got) >= len(sent) else None

        got = await async_wait_until(all_delivered, 12, 0.05, "all delayed messages delivered")
        assert sorted(m.properties["UNIQ_KEY"] for m in got) == sorted(sent)
        sched = {m.properties["UNIQ_KEY"]: m for m in await _pull_all(c, b.addr, "gSched2", "SCHEDULE_TOPIC_XXXX", 0)}
        sched.update({m.properties["UNIQ_KEY"]: m for m in await _pull_all(c, b.addr, "gSched2", "SCHEDULE_TOPIC_XXXX", 1)})
        sched.update({m.properties["UNIQ_KEY"]: m for m in parked})
        late = []
        for m in got:
            key = m.properties["UNIQ_KEY"]
            level = sent[key][0]
            due = sched[key].store_timestamp + level * 1000
            assert m.store_timestamp >= due, f"{key} delivered {due - m.store_timestamp} ms early"
            late.append(m.store_timestamp - due)
            assert m.topic == "DelayT" and m.queue_id == 1 and m.body == key.encode()
        assert max(late) < 1000, late
        # the tag code is the tag's hash again: a tag-filtered pull finds exactly that level
        r = await pull(c, b.addr, "gTag", "DelayT", 1, 0, subscription="tag2")
        assert {m.properties["TAGS"] for m in messages(r)} == {"tag2"}
        # delayOffset.json is written (fastjson format, level keys)
        r = await call(c, b.addr, RequestCode.GET_ALL_DELAY_OFFSET)
        assert r.code == ResponseCode.SUCCESS
        await async_wait_until(lambda: (b.store / "config" / "delayOffset.json").exists(), 5)
        # GET_BROKER_RUNTIME_INFO reports each level's delay offset and queue max, as Java's buildRunningStats
        r = await call(c, b.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        table = fastjson.loads(r.body)["table"]
        assert table["scheduleMessageOffset_1"] == "5,5"
        assert table["scheduleMessageOffset_3"] == "4,4"
    assert java_string_hash("tag2") != 0


async def test_restart_with_pending_delayed_messages(broker_factory):
    b = broker_factory("d2", messageDelayLevel="1s 2s 8s", flushDelayOffsetInterval=60000)
    async with RemotingClient() as c:
        keys_fast = [f"F{i}" for i in range(20)]
        keys_slow = [f"S{i}" for i in range(20)]
        for k in keys_fast:
            await send(c, b.addr, "DelayR", k.encode(), {"DELAY": "1", "UNIQ_KEY": k})
        for k in keys_slow:
            await send(c, b.addr, "DelayR", k.encode(), {"DELAY": "3", "UNIQ_KEY": k})

        async def fast_done():
            return len(await _pull_all(c, b.addr, "gR", "DelayR")) >= len(keys_fast)

        await async_wait_until(fast_done, 10, 0.05, "level-1 messages delivered")
    # graceful stop while level 3 is pending: its offset (0) and level 1's offset (20) are persisted
    assert b.stop() == 0
    b.start()
    async with RemotingClient() as c:
        async def all_done():
            got = await _pull_all(c, b.addr, "gR", "DelayR")
            return got if len(got) >= len(keys_fast) + len(keys_slow) else None

        got = await async_wait_until(all_done, 20, 0.05, "all delivered after restart")
        keys = [m.properties["UNIQ_KEY"] for m in got]
        assert sorted(keys) == sorted(keys_fast + keys_slow), "lost or repeated deliveries"
        r = await call(c, b.addr, RequestCode.GET_MAX_OFFSET, {"topic": "DelayR", "queueId": 0})
        assert int(r.ext_fields["offset"]) == 40

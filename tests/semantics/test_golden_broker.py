"""Our broker takes over a store the real RocketMQ 4.9.7 broker left with delayed messages pending.

The golden store was stopped with 3 level-3 and 2 level-4 messages still in
SCHEDULE_TOPIC_XXXX (delayOffset.json ``{1:11,2:8,3:5}``) and every transaction
resolved (CID_RMQ_SYS_TRANS at 44/39). Started on a copy, our broker delivers
exactly those 5 (long due) and nothing else, sends no transaction check, and
leaves the check offsets where Java left them.
"""

from __future__ import annotations

import json
import shutil

import pytest

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand
from tests.broker.helpers import BrokerProc, call, messages, pull
from tests.support import GOLDEN_STORE, async_wait_until

GOLDEN = GOLDEN_STORE

pytestmark = pytest.mark.skipif(not GOLDEN.exists(), reason="golden RocketMQ 4.9.7 store not available")


async def _max(c, addr, topic, qid):
    r = await call(c, addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": qid})
    return int(r.ext_fields["offset"])


async def _cid(c, addr, topic):
    r = await call(c, addr, RequestCode.QUERY_CONSUMER_OFFSET,
                   {"consumerGroup": "CID_RMQ_SYS_TRANS", "topic": topic, "queueId": 0})
    return int(r.ext_fields["offset"]) if r.code == ResponseCode.SUCCESS else None


async def test_pending_delays_of_a_java_store_are_delivered_once(procs, tmp_path):
    with open(GOLDEN / "manifest.jsonl", encoding="utf-8") as f:
        recs = [json.loads(line) for line in f if line.strip()]
    pending = [r for r in recs if r["topic"] == "SCHEDULE_TOPIC_XXXX"
               and (r["queueId"] == 3 or (r["queueId"] == 2 and r["queueOffset"] >= 5))]
    assert len(pending) == 5
    stats = json.loads((GOLDEN / "broker-stats.json").read_text())
    before = {q["queueId"]: q["maxOffset"] for q in stats["topics"]["GoldenEvents"]}

    b = BrokerProc(tmp_path, "golden-a", start_proc=procs.start, brokerClusterName="GoldenCluster",
                   mappedFileSizeCommitLog=262144, mappedFileSizeConsumeQueue=6000, maxIndexNum=400,
                   maxHashSlotNum=100, transactionCheckInterval=300, fileReservedTime=720)
    shutil.copytree(GOLDEN / "store", b.store)
    b.start()
    checks = []
    producer = RemotingClient(name="golden-tx-producer")
    producer.register_processor(RequestCode.CHECK_TRANSACTION_STATE, lambda req, conn: checks.append(req))
    try:
        hb = json.dumps({"clientID": "p1", "producerDataSet": [{"groupName": "golden-tx-producer"}],
                         "consumerDataSet": []}).encode()
        r = await producer.invoke(b.addr, RemotingCommand.request(RequestCode.HEART_BEAT, None, hb))
        assert r.code == ResponseCode.SUCCESS
        async with RemotingClient() as c:
            async def delivered():
                now = {q: await _max(c, b.addr, "GoldenEvents", q) for q in range(4)}
                return now if sum(now.values()) >= sum(before.values()) + len(pending) else None

            now = await async_wait_until(delivered, 10, 0.05, "pending golden delays delivered")
            got = []
            for q in range(4):
                if now[q] > before[q]:
                    p = await pull(c, b.addr, "gGolden", "GoldenEvents", q, before[q])
                    got.extend(messages(p))
            assert sorted(m.properties["UNIQ_KEY"] for m in got) == sorted(r["uniqKey"] for r in pending)
            for m in got:
                src = next(r for r in pending if r["uniqKey"] == m.properties["UNIQ_KEY"])
                assert m.queue_id == int(src["properties"]["REAL_QID"])
                assert m.properties_string == src["propertiesRaw"]  # same stored string as the parked one
            # the transaction check resumes at Java's offsets: everything is resolved, nothing to ask
            r = await call(c, b.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
            assert r.code == ResponseCode.SUCCESS
            assert await _cid(c, b.addr, "RMQ_SYS_TRANS_HALF_TOPIC") == 44
            assert await _cid(c, b.addr, "RMQ_SYS_TRANS_OP_HALF_TOPIC") == 39
    finally:
        await producer.close()
    assert b.stop() == 0
    assert checks == []
    assert sum(now.values()) == sum(before.values()) + len(pending)
    saved = (b.store / "config" / "delayOffset.json").read_text()
    assert saved == "{\n\t\"offsetTable\":{1:11,2:8,3:8,4:2\n\t}\n}"

"""The dashboard's JSON API over real processes: a NameServer, two brokers and bin/mqdashboard, with known traffic."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import time
import urllib.parse

import pytest

from client import ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from tests.dashboard.support import Dashboard
from tests.support import BIN, ROOT, async_wait_until, wait_until


@pytest.fixture(scope="module")
def dash(tmp_path_factory):
    d = Dashboard(tmp_path_factory.mktemp("dashboard_api"))
    yield d
    d.stop()


def _q(**kw) -> str:
    return urllib.parse.urlencode(kw)


def test_cluster_security_headers_and_guards(dash):
    status, headers, data = dash.call("GET", "/api/cluster")
    assert status == 200
    assert sorted(b["brokerName"] for b in data["brokers"]) == ["brokera", "brokerb"]
    assert all(b["role"] == "MASTER" and b["version"] == "V4_9_7" and "inTps" in b for b in data["brokers"])
    assert {b["addr"] for b in data["brokers"]} == {b.addr for b in dash.cluster.brokers}
    assert headers["X-RPC-Count"] == "3"  # cluster info + one runtime info per broker
    assert "default-src 'none'" in headers["Content-Security-Policy"] and headers["X-Content-Type-Options"] == "nosniff"
    # a page on another name (DNS rebinding) is refused
    status, _h, data = dash.call("GET", "/api/cluster", headers={"Host": "evil.example:80"})
    assert status == 403 and "Host" in data["error"]
    # writes need the token, and a JSON body
    status, _h, data = dash.call("POST", "/api/topics", {"topic": "NoToken"}, token=None)
    assert status == 401 and "admin token" in data["error"]
    status, _h, data = dash.call("POST", "/api/topics", {"topic": "NoToken"}, token="wrong")
    assert status == 401
    status, _h, data = dash.call("POST", "/api/topics", b"topic=X", headers={"Content-Type": "text/plain"})
    assert status == 415 and "JSON" in data["error"]
    status, _h, data = dash.call("GET", "/api/nothing-here")
    assert status == 404 and data["error"]
    status, _h, page = dash.call("GET", "/", raw=True)
    assert status == 200 and b"/static/app.js" in page and b"http" not in page.replace(b"http-equiv", b"")
    status, _h, _b = dash.call("GET", "/static/..%2fapp.py", raw=True)
    assert status == 404


def test_topics_create_list_status_send_delete(dash):
    status, _h, data = dash.call("POST", "/api/topics", {"topic": "bad topic!"})
    assert status == 400 and "illegal characters" in data["error"]
    status, _h, data = dash.call("POST", "/api/topics", {"topic": "ApiT", "perm": 5})
    assert status == 400 and "bad perm 5" in data["error"]
    status, _h, data = dash.call("POST", "/api/topics", {"topic": "ApiT", "readQueueNums": "many"})
    assert status == 400 and "readQueueNums must be an integer" in data["error"]
    status, _h, data = dash.call("POST", "/api/topics", {"topic": "ApiT", "cluster": "NoSuchCluster"})
    assert status == 400 and "NoSuchCluster" in data["error"]
    status, _h, data = dash.call("POST", "/api/topics", {"topic": "ApiT", "brokerAddr": "10.1.2.3:10911"})
    assert status == 400 and "no broker of this cluster" in data["error"]

    created = dash.ok("POST", "/api/topics", {"topic": "ApiT", "readQueueNums": 2, "writeQueueNums": 2})
    assert len(created["brokers"]) == 2 and created["config"]["writeQueueNums"] == 2

    def listed():
        status, headers, data = dash.call("GET", "/api/topics?kind=normal")
        row = next((t for t in data["topics"] if t["topic"] == "ApiT"), None)
        # both brokers answered (under load one GET_ALL_TOPIC_CONFIG may time out: the page lists
        # the other broker's topics and an error; the next call is whole again)
        return row and len(row["brokers"]) == 2 and "errors" not in data and (row, headers)

    row, headers = wait_until(listed, 15)
    assert row["readQueueNums"] == 4 and sorted(row["brokers"]) == ["brokera", "brokerb"] and row["kind"] == "normal"
    assert headers["X-RPC-Count"] == "3"  # cluster info + one GET_ALL_TOPIC_CONFIG per broker
    kinds = {t["topic"]: t["kind"] for t in dash.ok("GET", "/api/topics?kind=all")["topics"]}
    assert kinds["TBW102"] == "system" and kinds["brokera"] == "system" and kinds["ApiT"] == "normal"
    assert all(t["kind"] == "system" for t in dash.ok("GET", "/api/topics?kind=system")["topics"])
    status, _h, data = dash.call("GET", "/api/topics?kind=weird")
    assert status == 400

    wait_until(lambda: len(dash.call("GET", "/api/topics/ApiT/status")[2]) == 4, 15)
    sent = dash.ok("POST", "/api/topics/ApiT/send", {"body": "from the dashboard", "keys": "dk1", "tags": "T"})
    assert sent["sendStatus"] == "SEND_OK"
    status_rows = dash.ok("GET", "/api/topics/ApiT/status")
    assert set(status_rows[0]) == {"brokerName", "queueId", "minOffset", "maxOffset", "lastUpdateTimestamp"}
    hit = [r for r in status_rows if (r["brokerName"], r["queueId"]) == (sent["brokerName"], sent["queueId"])]
    assert hit[0]["maxOffset"] == 1 and hit[0]["lastUpdateTimestamp"] > 0
    assert sum(r["maxOffset"] for r in status_rows) == 1
    detail = dash.ok("GET", "/api/topics/ApiT")
    assert len(detail["route"]["brokerDatas"]) == 2 and detail["groups"] == []
    status, _h, data = dash.call("POST", "/api/topics/ApiT/send", {"body": ""})
    assert status == 400

    status, _h, data = dash.call("DELETE", "/api/topics/ApiT", token=None)
    assert status == 401
    assert dash.ok("DELETE", "/api/topics/ApiT")["clusters"] == ["TestCluster"]
    status, _h, data = dash.call("GET", "/api/topics/ApiT/status")
    assert status == 404 and "ApiT" in data["error"]


async def _send_keys(topic: str, ns: str, n: int, key: str) -> list:
    async with Producer("ApiProducer", ns) as prod:
        async def first():
            try:
                return await prod.send(Message(topic, b"probe", keys="probe"))
            except Exception:
                return None

        await async_wait_until(first, 15)
        return [await prod.send(Message(topic, f"m{i}".encode(), keys=[key, f"k{i}"], tags="TagA")) for i in range(n)]


async def test_message_search_detail_and_cursor(dash):
    ns = dash.cluster.namesrv_addr
    await asyncio.to_thread(dash.ok, "POST", "/api/topics", {"topic": "ApiMsg", "readQueueNums": 2,
                                                             "writeQueueNums": 2})
    begin = int(time.time() * 1000) - 1000
    sent = await _send_keys("ApiMsg", ns, 10, "batchkey")
    end = int(time.time() * 1000) + 1000

    async def by_key():
        r = await asyncio.to_thread(dash.ok, "GET", "/api/messages?" + _q(topic="ApiMsg", key="batchkey"))
        return len(r["messages"]) == 10 and r

    r = await async_wait_until(by_key, 15)
    assert {m["msgId"] for m in r["messages"]} == {s.msg_id for s in sent} and r["next"] is None
    # by key, four at a time: newest first, each message once, then no cursor
    keyed, cursor = [], None
    for _ in range(10):
        q = {"topic": "ApiMsg", "key": "batchkey", "limit": 4, **({"cursor": cursor} if cursor else {})}
        page = await asyncio.to_thread(dash.ok, "GET", "/api/messages?" + _q(**q))
        assert len(page["messages"]) <= 4
        keyed += page["messages"]
        cursor = page["next"]
        if not cursor:
            break
    assert sorted(m["msgId"] for m in keyed) == sorted(s.msg_id for s in sent)
    assert [m["storeTimestamp"] for m in keyed] == sorted((m["storeTimestamp"] for m in keyed), reverse=True)

    # by time range, three at a time: every message exactly once across the pages, then no cursor
    seen, cursor, pages = [], None, 0
    while True:
        q = {"topic": "ApiMsg", "begin": begin, "end": end, "limit": 3}
        if cursor:
            q["cursor"] = cursor
        page = await asyncio.to_thread(dash.ok, "GET", "/api/messages?" + _q(**q))
        assert len(page["messages"]) <= 3
        seen += [m["msgId"] for m in page["messages"]]
        cursor = page["next"]
        pages += 1
        if not cursor:
            break
        assert pages < 20
    assert sorted(seen) == sorted([s.msg_id for s in sent] + [m for m in seen if m not in {s.msg_id for s in sent}])
    assert len(seen) == len(set(seen)) and {s.msg_id for s in sent} <= set(seen) and pages >= 4
    # the Java tool's time format works too; a range before the messages finds none
    early = await asyncio.to_thread(dash.ok, "GET", "/api/messages?" + _q(topic="ApiMsg", begin="2001-01-01#00:00:00:000",
                                                                        end="2001-01-02T00:00:00"))
    assert early["messages"] == []

    one = sent[3]
    by_id = await asyncio.to_thread(dash.ok, "GET", "/api/messages?" + _q(msgId=one.offset_msg_id))
    assert [m["msgId"] for m in by_id["messages"]] == [one.msg_id]
    by_uniq = await asyncio.to_thread(dash.ok, "GET", "/api/messages?" + _q(msgId=one.msg_id, topic="ApiMsg"))
    assert by_uniq["messages"][0]["offsetMsgId"] == one.offset_msg_id
    detail = await asyncio.to_thread(dash.ok, "GET", f"/api/messages/{one.offset_msg_id}")
    assert detail["bodyText"] == "m3" and base64.b64decode(detail["bodyBase64"]) == b"m3"
    assert detail["properties"]["KEYS"] == "batchkey k3" and detail["tags"] == "TagA"
    trace = await asyncio.to_thread(dash.ok, "GET", f"/api/messages/{one.msg_id}/trace")
    try:
        import client.trace.trace_view  # noqa: F401 - the trace module (message tracing) may be in this build
        assert trace["available"] is True and trace["traces"] == []  # the producer did not trace
    except ImportError:
        assert trace == {"available": False, "traces": []}
    status, headers, body = await asyncio.to_thread(dash.call, "GET", f"/api/messages/{one.offset_msg_id}/body",
                                                    raw=True)
    assert status == 200 and body == b"m3" and "attachment" in headers["Content-Disposition"]

    for path, needle in [
        ("/api/messages?" + _q(msgId=one.msg_id), "needs the topic"),
        # an offset id naming another address is not followed (no connection made on a GET's say-so)
        ("/api/messages?" + _q(msgId="0A0102030000271100000000000000FF"), "no broker of this cluster"),
        ("/api/messages?" + _q(topic="ApiMsg", begin="yesterday", end=end), "bad begin"),
        ("/api/messages?" + _q(topic="ApiMsg", begin=end, end=begin), "end is before begin"),
        ("/api/messages?" + _q(topic="ApiMsg", begin=begin, end=end, cursor="!!"), "bad cursor"),
        ("/api/messages?" + _q(topic="ApiMsg", key="x", limit=100000), "limit must be between"),
        ("/api/messages?" + _q(topic="bad topic", key="x"), "illegal characters"),
        ("/api/messages?" + _q(topic="ApiMsg"), "give msgId, key"),
    ]:
        status, _h, data = await asyncio.to_thread(dash.call, "GET", path)
        assert status == 400 and needle in data["error"], (path, data)


async def test_groups_progress_reset_skip_and_resend(dash):
    ns = dash.cluster.namesrv_addr
    topic, group = "ApiGrp", "ApiGroup"
    await asyncio.to_thread(dash.ok, "POST", "/api/topics", {"topic": topic, "readQueueNums": 2, "writeQueueNums": 2})
    t0 = int(time.time() * 1000) - 1000
    sent = await _send_keys(topic, ns, 10, "grpkey")
    got: list = []

    async def listener(msgs, ctx):
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def consumer():
        c = PushConsumer(group, ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        c.subscribe(topic, "*")
        c.register_message_listener(listener)
        return c

    async def progress():
        return await asyncio.to_thread(dash.ok, "GET", f"/api/groups/{group}/progress?topic={topic}")

    async with consumer() as c:
        await async_wait_until(lambda: len({m.msg_id for m in got if m.topic == topic}) >= 11, 30)
        p = await async_wait_until(lambda: _caught_up(progress), 20)
        assert len(p["topics"]) == 4 and set(p["topics"][0]) == {"topic", "brokerName", "queueId", "brokerOffset",
                                                                  "consumerOffset", "diff", "lastTimestamp"}
        assert sum(t["brokerOffset"] for t in p["topics"]) == 11  # the probe and ten messages

        groups = await asyncio.to_thread(dash.ok, "GET", "/api/groups?" + _q(q="ApiGroup"))
        row = next(g for g in groups["groups"] if g["group"] == group)
        assert row["system"] is False
        # read live, a page costs the cluster info, two reads per broker and one per row shown
        status, headers, page = await asyncio.to_thread(dash.call, "GET", "/api/groups?fresh=1&limit=3")
        assert status == 200 and len(page["groups"]) == 3 and page["total"] > 3 and headers["X-RPC-Count"] == "8"
        system = await asyncio.to_thread(dash.ok, "GET", "/api/groups?system=0")
        assert "TOOLS_CONSUMER" not in {g["group"] for g in system["groups"]} and group in {
            g["group"] for g in system["groups"]}
        assert row["clients"] == 1 and row["consumeType"] == "CONSUME_PASSIVELY" and row["diff"] == 0
        conn = await asyncio.to_thread(dash.ok, "GET", f"/api/groups/{group}/connection")
        assert conn["online"] and conn["connections"][0]["clientId"] == c.client_id
        assert [s["topic"] for s in conn["subscriptions"]] == [f"%RETRY%{group}", topic] or \
            topic in [s["topic"] for s in conn["subscriptions"]]

        # resend one stored message to the group: it arrives once more (through %RETRY%group). The retry
        # topic is created by the consumer's first heartbeat, after its first route fetch: refresh now
        # rather than wait for the 30 s route poll.
        await _own_retry_queues(c, group)
        target = sent[4]
        res = await asyncio.to_thread(dash.ok, "POST", "/api/messages/resend",
                                      {"group": group, "msgIds": [target.offset_msg_id]})
        assert res["ok"] == 1 and res["results"][0]["ok"]
        await async_wait_until(lambda: sum(1 for m in got if m.body == b"m4") >= 2, 30, what="resent m4")
        async with Producer("ApiMarker", ns) as prod:
            await prod.send(Message(topic, b"marker"))
        await async_wait_until(lambda: any(m.body == b"marker" for m in got), 30)
        await async_wait_until(lambda: _caught_up(progress), 20)
        assert sum(1 for m in got if m.body == b"m4") == 2
        # or straight to one consumer (CONSUME_MESSAGE_DIRECTLY): its listener runs on the message once more
        res = await asyncio.to_thread(dash.ok, "POST", "/api/messages/resend",
                                      {"group": group, "clientId": c.client_id, "msgIds": [target.offset_msg_id]})
        assert res["results"][0] == {"msgId": target.offset_msg_id, "ok": True, "result": "CR_SUCCESS"}
        assert sum(1 for m in got if m.body == b"m4") == 3
        bad = await asyncio.to_thread(dash.ok, "POST", "/api/messages/resend",
                                      {"group": group, "msgIds": ["00" * 16, "nonsense"], "topic": topic})
        assert bad["ok"] == 0 and all(r["error"] for r in bad["results"])

    # with the consumer gone: reset to before the messages, the lag shows them; skip clears it
    r = await asyncio.to_thread(dash.ok, "POST", f"/api/groups/{group}/reset-offset",
                                {"topic": topic, "timestamp": str(t0)})
    assert len(r["offsets"]) == 4 and all(o["offset"] == 0 for o in r["offsets"])
    p = await progress()
    assert p["diffTotal"] == 12  # probe, ten messages, marker
    groups = await asyncio.to_thread(dash.ok, "GET", "/api/groups?" + _q(q="ApiGroup"))
    assert next(g for g in groups["groups"] if g["group"] == group)["diff"] >= 12
    await asyncio.to_thread(dash.ok, "POST", f"/api/groups/{group}/skip-accumulated", {"topic": topic})
    assert (await progress())["diffTotal"] == 0
    # read live: messages behind a consumed position show as lag in messages and in time
    await _send_keys(topic, ns, 2, "lagkey")  # and the probe

    async def lagging():
        page = await asyncio.to_thread(dash.ok, "GET", "/api/groups?" + _q(q=group, fresh=1))
        row = next(g for g in page["groups"] if g["group"] == group)
        return row["diff"] == 3 and row

    row = await async_wait_until(lagging, 15, what="three messages of lag")
    assert row["lagMillis"] > 0 and row["brokers"] == 2 and row["clients"] == 0

    for method, path, body, code, needle in [
        ("GET", "/api/groups/NoSuchGroup/progress", None, 404, "NoSuchGroup"),
        ("GET", "/api/groups/bad%20group/progress", None, 400, "illegal"),
        ("POST", f"/api/groups/{group}/reset-offset", {"topic": topic, "timestamp": "tomorrow"}, 400, "bad timestamp"),
        ("POST", f"/api/groups/{group}/reset-offset", {"topic": topic}, 400, "timestamp is required"),
        ("POST", "/api/messages/resend", {"group": group, "msgIds": []}, 400, "no message ids"),
        ("POST", "/api/messages/resend", {"group": "bad group", "msgIds": ["x"]}, 400, "illegal"),
        ("GET", "/api/groups?limit=0", None, 400, "limit must be between"),
    ]:
        status, _h, data = await asyncio.to_thread(dash.call, method, path, body)
        assert status == code and needle in data["error"], (path, status, data)


async def _own_retry_queues(c, group: str) -> None:
    async def owned():
        await c.instance.update_topic_routes()
        await c.instance.do_rebalance()
        return any(mq.topic == f"%RETRY%{group}" for mq in c.rebalance.process_queue_table)

    await async_wait_until(owned, 20, interval=0.2, what="retry queues assigned")


async def _caught_up(progress):
    p = await progress()
    return p["diffTotal"] == 0 and p


async def test_dlq_list_and_resend_selected(dash):
    ns = dash.cluster.namesrv_addr
    topic, group = "ApiDlqT", "ApiDlqGroup"
    await asyncio.to_thread(dash.ok, "POST", "/api/topics", {"topic": topic, "readQueueNums": 1, "writeQueueNums": 1})
    sent = await _send_keys(topic, ns, 3, "dlqkey")
    failing = True
    got: list = []

    async def listener(msgs, ctx):
        got.extend(msgs)
        return ConsumeConcurrentlyStatus.RECONSUME_LATER if failing else ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = PushConsumer(group, ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, max_reconsume_times=0)
    c.subscribe(topic, "*")
    c.register_message_listener(listener)
    async with c:
        async def in_dlq():
            status, _h, r = await asyncio.to_thread(dash.call, "GET", f"/api/dlq/{group}")
            return status == 200 and len(r["messages"]) >= 4 and r

        dlq = await async_wait_until(in_dlq, 30, what="messages in the DLQ")
        assert {m["originTopic"] for m in dlq["messages"]} == {topic}
        assert {m["topic"] for m in dlq["messages"]} == {f"%DLQ%{group}"}
        by_body = {}
        for m in dlq["messages"]:
            detail = await asyncio.to_thread(dash.ok, "GET", f"/api/messages/{m['offsetMsgId']}")
            by_body[detail["bodyText"]] = m["offsetMsgId"]
        assert {"m0", "m1", "m2"} <= set(by_body)
        failing = False
        await _own_retry_queues(c, group)
        pick = [by_body["m1"], by_body["m2"]]
        before = len(got)
        res = await asyncio.to_thread(dash.ok, "POST", "/api/messages/resend", {"group": group, "msgIds": pick})
        assert res["ok"] == 2 and [r["msgId"] for r in res["results"]] == pick
        await async_wait_until(lambda: {m.body for m in got[before:]} >= {b"m1", b"m2"}, 30, what="resent DLQ")
        again = [m for m in got[before:] if m.body in (b"m1", b"m2")]
        assert all(m.topic == topic for m in again)  # the consumer sees the original topic
        assert sent  # keep the producer results referenced
    status, _h, data = await asyncio.to_thread(dash.call, "GET", "/api/dlq/bad%20group")
    assert status == 400


def test_start_refuses_an_open_bind_without_a_token(tmp_path):
    p = subprocess.run([str(BIN / "mqdashboard"), "-n", "127.0.0.1:1", "--host", "0.0.0.0"], capture_output=True,
                       text=True, timeout=30, cwd=str(ROOT))
    assert p.returncode == 2 and "refusing to bind 0.0.0.0 without --admin-token" in p.stderr
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    p = subprocess.run([str(BIN / "mqdashboard")], capture_output=True, text=True, timeout=30, cwd=str(ROOT), env=env)
    assert p.returncode == 2 and "no NameServer address" in p.stderr


async def test_start_dashboard_in_a_running_loop():
    """What `make run` does in its own process: serve the pages beside the cluster, stop with it."""
    import aiohttp

    from dashboard.config import DashboardConfig
    from dashboard.runner import start_dashboard
    from tests.support import free_port

    port = free_port()
    runner = await start_dashboard(DashboardConfig("127.0.0.1:1", port=port, sample_interval=3600))
    try:
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/") as r:
            assert r.status == 200 and "/static/app.js" in await r.text()
        with pytest.raises(OSError):
            await start_dashboard(DashboardConfig("127.0.0.1:1", port=port))  # the port is taken
    finally:
        await runner.cleanup()
    with pytest.raises(ValueError, match="refusing to bind"):
        await start_dashboard(DashboardConfig("127.0.0.1:1", host="0.0.0.0", port=port))

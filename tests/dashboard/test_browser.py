"""The dashboard's pages driven in a real headless Chromium (Debian's chromium, through playwright-python).

Against real processes: overview shows the brokers; a topic created through the form is listed;
a message searched by key opens with its body shown as text (HTML in it is not run); a group's
offset reset through the form changes its lag. Every test checks that no request left 127.0.0.1
and the console has no errors; screenshots of the pages go to the test's temp dir.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import shutil
import threading
import urllib.parse
from pathlib import Path

import pytest

from client import ConsumeConcurrentlyStatus, ConsumeFromWhere, Message, Producer, PushConsumer
from tests.dashboard.support import TOKEN, Dashboard
from tests.support import async_wait_until, wait_until

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright-python is not installed")
if not (Path(CHROMIUM).exists() and os.access(CHROMIUM, os.X_OK)):
    pytest.skip(f"Chromium not found at {CHROMIUM} (Debian package chromium; set CHROMIUM to another binary)",
                allow_module_level=True)

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def dash(tmp_path_factory):
    d = Dashboard(tmp_path_factory.mktemp("dashboard_web"), sample_interval=0.5)
    yield d
    d.stop()


@pytest.fixture(scope="module")
def browser_ctx(tmp_path_factory):
    profile = tmp_path_factory.mktemp("chromium-profile")
    with playwright_api.sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, args=ARGS, headless=True,
                                                   viewport={"width": 1400, "height": 900})
        yield ctx
        ctx.close()
    shutil.rmtree(profile, ignore_errors=True)


def run_async(coro):
    """Run a coroutine on its own loop in another thread (the sync browser API owns this thread)."""
    out: dict = {}

    def target():
        try:
            out["value"] = asyncio.run(coro)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            out["error"] = e

    t = threading.Thread(target=target)
    t.start()
    t.join(120)
    if "error" in out:
        raise out["error"]
    return out.get("value")


class LoopThread:
    """An event loop in another thread for clients that must live across several browser steps."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float = 120):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class Watched:
    """A page whose requests and console errors are recorded."""

    def __init__(self, ctx, dash: Dashboard, shots: Path):
        self.page = ctx.new_page()
        self.page.set_default_timeout(20000)
        self.dash = dash
        self.shots = shots
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.errors.append(f"dialog: {d.message}"), d.dismiss()))

    def open(self, fragment: str) -> None:
        self.page.goto(f"{self.dash.url}/{fragment}")
        self.page.fill("#token", TOKEN)
        self.page.dispatch_event("#token", "change")

    def shot(self, name: str) -> None:
        self.shots.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)

    def forgive(self, text: str) -> None:
        """Drop the console lines an intended failure produced (Chromium logs every 4xx response)."""
        self.errors = [e for e in self.errors if text not in e]

    def check_clean(self) -> None:
        outside = [u for u in self.requests
                   if not (u.startswith(self.dash.url + "/") or u.startswith(("data:", "blob:")))]
        assert outside == [], f"requests left 127.0.0.1: {outside}"
        assert self.errors == [], f"console errors: {self.errors}"
        self.page.close()


@pytest.fixture
def page(browser_ctx, dash, tmp_path):
    w = Watched(browser_ctx, dash, tmp_path / "screenshots")
    yield w
    w.check_clean()


def test_overview_shows_the_brokers(page, dash):
    page.open("#/cluster")
    for b in dash.cluster.brokers:
        page.page.get_by_role("cell", name=b.addr, exact=True).wait_for()
    rows = page.page.locator("main table tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).locator("td").nth(3).text_content() == "MASTER"
    page.page.locator("svg.spark polyline").first.wait_for(state="attached")  # sparklines from the sampler
    page.shot("cluster")
    assert (page.shots / "cluster.png").stat().st_size > 0


def test_create_topic_through_the_form(page, dash):
    page.open("#/topics")
    page.page.fill("#new-topic", "WebTopic")
    page.page.fill("input[name=read]", "2")
    page.page.fill("input[name=write]", "2")
    page.page.click("#create-topic button[type=submit]")
    page.page.locator("#status .ok").filter(has_text="topic WebTopic created on 2 broker(s)").wait_for()

    def listed():
        page.page.select_option("#topic-kind", "normal")
        return page.page.get_by_role("cell", name="WebTopic", exact=True).count() == 1

    wait_until(listed, 20)
    page.shot("topics")
    page.page.get_by_role("cell", name="WebTopic", exact=True).click()
    page.page.locator("h2").filter(has_text="Topic WebTopic").wait_for()
    page.page.locator("main table").first.locator("tbody tr").nth(3).wait_for()  # 2 brokers x 2 queues
    page.shot("topic-detail")
    # a bad name is refused with the broker's rule, shown as text
    page.page.goto(f"{dash.url}/#/topics")
    page.page.fill("#new-topic", "bad<b>topic")
    page.page.click("#create-topic button[type=submit]")
    err = page.page.locator("#status .err")
    err.wait_for()
    assert "illegal characters" in err.text_content() and page.page.locator("#status b").count() == 0
    page.forgive("status of 400 (Bad Request)")


def test_search_by_key_and_open_the_message(page, dash):
    html = "<img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script>"

    async def send():
        async with Producer("WebProducer", dash.cluster.namesrv_addr) as prod:
            async def first():
                try:
                    return await prod.send(Message("WebSearch", b"warm-up"))
                except Exception:
                    return None

            await async_wait_until(first, 20)
            return await prod.send(Message("WebSearch", html.encode(), keys="webkey", tags="<b>tag</b>"))

    dash.ok("POST", "/api/topics", {"topic": "WebSearch", "readQueueNums": 1, "writeQueueNums": 1})
    sent = run_async(send())
    page.open("#/messages")
    page.page.select_option("#search-mode", "key")
    page.page.fill("#search-topic", "WebSearch")
    page.page.fill("#search-key", "webkey")

    def found():
        page.page.click("#search-form button[type=submit]")
        return page.page.get_by_role("cell", name=sent.msg_id, exact=True).count() == 1

    wait_until(found, 20, interval=0.3)
    page.page.get_by_role("cell", name=sent.msg_id, exact=True).click()
    body = page.page.locator("#msg-body")
    body.wait_for()
    assert body.text_content() == html
    assert page.page.get_by_role("cell", name="<b>tag</b>", exact=True).count() >= 1
    assert page.page.evaluate("window.__pwned") is None and page.page.locator("#message-detail img").count() == 0
    page.page.select_option("#body-view", "hex")
    assert body.text_content().startswith("00000000  3c 69 6d 67")
    page.shot("message")


def test_reset_offset_through_the_form_changes_the_lag(page, dash):
    ns = dash.cluster.namesrv_addr
    topic, group = "WebLag", "WebLagGroup"
    dash.ok("POST", "/api/topics", {"topic": topic, "readQueueNums": 2, "writeQueueNums": 2})
    before = datetime.datetime.now() - datetime.timedelta(minutes=2)

    async def traffic():
        got = []

        async def listener(msgs, ctx):
            got.extend(msgs)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        async with Producer("WebLagProducer", ns) as prod:
            async def first():
                try:
                    return await prod.send(Message(topic, b"m"))
                except Exception:
                    return None

            await async_wait_until(first, 20)
            for _ in range(7):
                await prod.send(Message(topic, b"m"))
        c = PushConsumer(group, ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        c.subscribe(topic, "*")
        c.register_message_listener(listener)
        async with c:
            await async_wait_until(lambda: len(got) >= 8, 30)
            await async_wait_until(lambda: dash.ok("GET", f"/api/groups/{group}/progress?topic={topic}")
                                   ["diffTotal"] == 0, 20)

    run_async(traffic())
    page.open("#/groups/" + urllib.parse.quote(group))
    total = page.page.locator("#diff-total")
    total.wait_for()
    assert total.text_content() == "0"
    page.page.select_option("#reset-topic", topic)
    page.page.fill("#reset-time", before.strftime("%Y-%m-%dT%H:%M:%S"))
    page.page.click("#reset-form button[type=submit]")
    page.page.locator("#reset-form + div .ok").wait_for()
    playwright_api.expect(total).to_have_text("8", timeout=20000)  # redrawn after the reset
    page.shot("group")
    page.page.click("#skip")
    page.page.locator("#diff-total").filter(has_text="0").wait_for()
    page.open("#/groups")
    page.page.get_by_role("cell", name=group, exact=True).wait_for()
    page.shot("groups")


def test_dlq_select_and_resend_and_time_search_pages(page, dash):
    ns = dash.cluster.namesrv_addr
    topic, group = "WebDlq", "WebDlqGroup"
    dash.ok("POST", "/api/topics", {"topic": topic, "readQueueNums": 1, "writeQueueNums": 1})
    state = {"failing": True, "got": []}

    async def into_dlq_then_succeed():
        async def listener(msgs, ctx):
            state["got"].extend(msgs)
            return ConsumeConcurrentlyStatus.RECONSUME_LATER if state["failing"] else \
                ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        async with Producer("WebDlqProducer", ns) as prod:
            async def first():
                try:
                    return await prod.send(Message(topic, b"d-probe"))
                except Exception:
                    return None

            await async_wait_until(first, 20)
            for i in range(3):
                await prod.send(Message(topic, f"d{i}".encode()))
        c = PushConsumer(group, ns, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                         max_reconsume_times=0)
        c.subscribe(topic, "*")
        c.register_message_listener(listener)
        await c.start()

        def in_dlq():
            status, _h, data = dash.call("GET", f"/api/dlq/{group}")
            return status == 200 and len(data["messages"]) >= 4

        await async_wait_until(in_dlq, 30, interval=0.2)
        state["failing"] = False

        async def owned():
            await c.instance.update_topic_routes()
            await c.instance.do_rebalance()
            return any(mq.topic == f"%RETRY%{group}" for mq in c.rebalance.process_queue_table)

        await async_wait_until(owned, 20, interval=0.2)
        return c

    lt = LoopThread()
    consumer = lt.run(into_dlq_then_succeed())
    try:
        page.open("#/dlq")
        page.page.fill("#dlq-group", group)
        page.page.press("#dlq-group", "Enter")
        picks = page.page.locator(".dlq-pick")
        picks.nth(3).wait_for()
        assert picks.count() == 4
        assert page.page.get_by_role("cell", name=topic, exact=True).count() == 4  # the original topic shown
        picks.nth(1).check()
        picks.nth(2).check()
        page.page.click("#dlq-resend")
        results = page.page.locator("#dlq-results .ok")
        results.nth(1).wait_for()
        assert results.count() == 2 and "resent as" in results.nth(0).text_content()
        page.shot("dlq")
        wait_until(lambda: sum(1 for m in state["got"] if m.reconsume_times == 0 and m.topic == topic) >= 6, 30)
    finally:
        lt.run(consumer.shutdown())
        lt.close()

    # the time search pages through the topic with "Next page"
    page.open("#/messages")
    page.page.select_option("#search-mode", "time")
    page.page.fill("#search-topic", topic)
    page.page.fill("#search-begin", (datetime.datetime.now() - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"))
    page.page.fill("#search-end", (datetime.datetime.now() + datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M"))
    page.page.evaluate("document.querySelector('#search-form').requestSubmit()")
    rows = page.page.locator("#results tbody tr")
    rows.first.wait_for()
    assert rows.count() == 4  # the probe and three messages, one page (32 a page)
    assert page.page.locator("#next-page").count() == 0

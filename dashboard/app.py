"""The dashboard's aiohttp application: the JSON API (docs/dashboard.md) and the static pages.

Every handler is a thin shell over :mod:`client.admin_ops`, so mqadmin --json and
the API answer the same data. Middleware: security headers (CSP: only this origin),
a Host check (a DNS-rebinding page cannot reach us under another name), the admin
token on every write, JSON bodies only on writes (a cross-site form cannot send
one without a CORS preflight we never grant), and the RPC count of each request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import logging
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from client.admin_ext import MQAdminExt
from client.admin_ops import (
    AdminInputError,
    check_group_name,
    check_topic_name,
    cluster_overview,
    create_topic,
    delete_topic,
    group_connection,
    group_progress,
    list_groups,
    list_topics,
    message_detail,
    parse_timestamp,
    resend_messages,
    reset_offset,
    search_messages,
    topic_detail,
    topic_status,
)
from client.exceptions import MQBrokerError, MQClientError
from client.message import Message
from client.producer import Producer
from common.mixall import get_dlq_topic
from dashboard.config import DashboardConfig, is_loopback
from dashboard.rpc_count import RPC_COUNTER, CountingClientAPI
from dashboard.sampler import Sampler
from remoting import RemotingError, ResponseCode

__all__ = ["build_app"]

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
ASSETS = {"app.js": "text/javascript", "app.css": "text/css", "favicon.svg": "image/svg+xml"}
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
NOT_FOUND_CODES = {ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                   ResponseCode.QUERY_NOT_FOUND, ResponseCode.CONSUMER_NOT_ONLINE}
ADMIN = web.AppKey("admin", MQAdminExt)
CONFIG = web.AppKey("config", DashboardConfig)
SAMPLER = web.AppKey("sampler", Sampler)
PRODUCER = web.AppKey("producer", list)  # [Producer | None, asyncio.Lock]


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS), status=status,
                        content_type="application/json")


def _error(status: int, message: str, code: int | None = None) -> web.Response:
    body: dict[str, Any] = {"error": message}
    if code is not None:
        body["code"] = code
    return _json(body, status)


@web.middleware
async def guard(request: web.Request, handler) -> web.StreamResponse:
    cfg = request.app[CONFIG]
    host = (request.host or "").rsplit(":", 1)[0].strip("[]")
    if is_loopback(cfg.host) and not is_loopback(host):
        return _error(403, f"unexpected Host {request.host!r}: open the dashboard as 127.0.0.1")
    if request.method not in ("GET", "HEAD"):
        if cfg.admin_token:
            given = request.headers.get("X-Admin-Token", "")
            if not hmac.compare_digest(given.encode(), cfg.admin_token.encode()):
                return _error(401, "write operations need the admin token (X-Admin-Token header)")
        if request.method == "POST" and request.content_type != "application/json":
            return _error(415, "send a JSON body (Content-Type: application/json)")
    counter = [0]
    RPC_COUNTER.set(counter)
    if request.path.startswith("/api/"):
        request.app[SAMPLER].touch()
    try:
        resp = await handler(request)
        if request.method not in ("GET", "HEAD") and resp.status < 400:
            request.app[SAMPLER].invalidate()  # the next group list reads the brokers afresh
    except web.HTTPException as e:
        resp = _error(e.status, e.reason)
    except AdminInputError as e:
        resp = _error(400, str(e))
    except LookupError as e:
        resp = _error(404, str(e.args[0]) if e.args else "not found")
    except MQBrokerError as e:
        resp = _error(404 if e.code in NOT_FOUND_CODES else 502, " ".join(str(e).split()), e.code)
    except MQClientError as e:
        resp = _error(502, " ".join(str(e).split()))
    except (TimeoutError, RemotingError, OSError) as e:
        resp = _error(504, f"cluster unreachable: {' '.join(str(e).split()) or type(e).__name__}")
    resp.headers["X-RPC-Count"] = str(counter[0])
    resp.headers["Content-Security-Policy"] = CSP
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "no-referrer"
    resp.headers["Cache-Control"] = "no-store"
    return resp


async def _body(request: web.Request) -> dict:
    try:
        data = await request.json(loads=orjson.loads)
    except ValueError:
        raise AdminInputError("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise AdminInputError("the body must be a JSON object")
    return data


def _q_int(request: web.Request, name: str, default: int | None = None) -> int | None:
    v = request.query.get(name)
    return default if v in (None, "") else parse_timestamp(v, name)


# -- handlers ------------------------------------------------------------------------------------------------


async def index(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC / "index.html", headers={"Content-Type": "text/html; charset=utf-8"})


async def asset(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    if name not in ASSETS:  # a fixed list: no path from the URL reaches the file system
        raise web.HTTPNotFound(reason="no such asset")
    return web.FileResponse(STATIC / name, headers={"Content-Type": ASSETS[name]})


async def api_cluster(request: web.Request) -> web.Response:
    return _json(await cluster_overview(request.app[ADMIN]))


async def api_topics(request: web.Request) -> web.Response:
    return _json(await list_topics(request.app[ADMIN], request.query.get("kind"), request.query.get("q")))


async def api_topic(request: web.Request) -> web.Response:
    return _json(await topic_detail(request.app[ADMIN], request.match_info["topic"]))


async def api_topic_status(request: web.Request) -> web.Response:
    return _json(await topic_status(request.app[ADMIN], request.match_info["topic"]))


async def api_topic_create(request: web.Request) -> web.Response:
    b = await _body(request)
    res = await create_topic(request.app[ADMIN], str(b.get("topic", "")), b.get("cluster") or None,
                             b.get("brokerAddr") or None, b.get("readQueueNums", 8), b.get("writeQueueNums", 8),
                             b.get("perm", 6), bool(b.get("order", False)))
    return _json(res, 201)


async def api_topic_delete(request: web.Request) -> web.Response:
    return _json(await delete_topic(request.app[ADMIN], request.match_info["topic"],
                                    request.query.get("cluster") or None))


async def _producer(app: web.Application) -> Producer:
    slot = app[PRODUCER]
    async with slot[1]:
        if slot[0] is None:
            p = Producer("DASHBOARD_PRODUCER", app[CONFIG].namesrv_addr)
            await p.start()
            slot[0] = p
    return slot[0]


async def api_topic_send(request: web.Request) -> web.Response:
    topic = check_topic_name(request.match_info["topic"])
    b = await _body(request)
    body = b.get("body")
    if not isinstance(body, str) or not body:
        raise AdminInputError("body (a non-empty string) is required")
    producer = await _producer(request.app)
    r = await producer.send(Message(topic, body.encode("utf-8"), tags=b.get("tags") or None,
                                    keys=b.get("keys") or None))
    return _json({"sendStatus": r.send_status.value, "msgId": r.msg_id, "offsetMsgId": r.offset_msg_id,
                  "brokerName": r.message_queue.brokerName, "queueId": r.message_queue.queueId,
                  "queueOffset": r.queue_offset})


async def api_groups(request: web.Request) -> web.Response:
    q = request.query
    return _json(await list_groups(request.app[ADMIN], q.get("q"), q.get("offset", 0), q.get("limit", 50),
                                   tables=None if q.get("fresh") else request.app[SAMPLER].fresh_tables(),
                                   system=q.get("system", "1") not in ("0", "false")))


async def api_group_progress(request: web.Request) -> web.Response:
    return _json(await group_progress(request.app[ADMIN], request.match_info["group"],
                                      request.query.get("topic") or None))


async def api_group_connection(request: web.Request) -> web.Response:
    return _json(await group_connection(request.app[ADMIN], request.match_info["group"]))


async def api_group_reset(request: web.Request) -> web.Response:
    group = check_group_name(request.match_info["group"])
    b = await _body(request)
    ts = parse_timestamp(b.get("timestamp"), "timestamp")
    return _json(await reset_offset(request.app[ADMIN], group, str(b.get("topic", "")), ts,
                                    bool(b.get("force", True))))


async def api_group_skip(request: web.Request) -> web.Response:
    """skipAccumulatedMessage: every queue of the topic to its max offset."""
    group = check_group_name(request.match_info["group"])
    b = await _body(request)
    return _json(await reset_offset(request.app[ADMIN], group, str(b.get("topic", "")), -1, True))


async def api_messages(request: web.Request) -> web.Response:
    q = request.query
    res = await search_messages(request.app[ADMIN], q.get("topic", ""), key=q.get("key") or None,
                                msg_id=q.get("msgId") or None, begin=_q_int(request, "begin"),
                                end=_q_int(request, "end"), cursor=q.get("cursor") or None, limit=q.get("limit", 32))
    return _json(res)


async def api_message(request: web.Request) -> web.Response:
    return _json(await message_detail(request.app[ADMIN], request.match_info["msgId"],
                                      request.query.get("topic") or None))


async def api_message_body(request: web.Request) -> web.Response:
    import base64

    d = await message_detail(request.app[ADMIN], request.match_info["msgId"], request.query.get("topic") or None)
    name = "".join(c for c in d["msgId"] if c.isalnum()) or "message"
    return web.Response(body=base64.b64decode(d["bodyBase64"]), content_type="application/octet-stream",
                        headers={"Content-Disposition": f'attachment; filename="{name}.bin"'})


async def api_message_trace(request: web.Request) -> web.Response:
    """The message's trace records (RMQ_SYS_TRACE_TOPIC), where this build has the client's trace module."""
    try:
        from client.trace.trace_view import query_trace_by_msg_id
    except ImportError:  # the trace module comes with message tracing; without it there is nothing to show
        return _json({"available": False, "traces": []})
    msg_id = request.match_info["msgId"]
    if not msg_id.isalnum() or len(msg_id) > 64:
        raise AdminInputError(f"bad message id {msg_id!r}")
    try:
        views = await query_trace_by_msg_id(request.app[ADMIN], msg_id)
    except MQBrokerError as e:
        if e.code != ResponseCode.TOPIC_NOT_EXIST:
            raise
        views = []  # no client has traced yet: the trace topic does not exist
    return _json({"available": True, "traces": [dataclasses.asdict(v) for v in views]})


async def api_resend(request: web.Request) -> web.Response:
    b = await _body(request)
    ids = b.get("msgIds") if isinstance(b.get("msgIds"), list) else ([b["msgId"]] if b.get("msgId") else [])
    if not all(isinstance(i, str) for i in ids):
        raise AdminInputError("msgIds must be a list of strings")
    group = check_group_name(str(b.get("group", "")))
    producer = None if b.get("clientId") else await _producer(request.app)
    return _json(await resend_messages(request.app[ADMIN], producer, group, ids, b.get("clientId") or None,
                                       b.get("topic") or None))


async def api_dlq(request: web.Request) -> web.Response:
    group = check_group_name(request.match_info["group"])
    q = request.query
    end = _q_int(request, "end")
    end = end if end is not None else 2**62
    begin = _q_int(request, "begin", 0)
    return _json(await search_messages(request.app[ADMIN], get_dlq_topic(group), begin=begin, end=end,
                                       cursor=q.get("cursor") or None, limit=q.get("limit", 32)))


async def api_metrics(request: web.Request) -> web.Response:
    return _json(request.app[SAMPLER].snapshot())


# -- app -----------------------------------------------------------------------------------------------------


def build_app(cfg: DashboardConfig, sample: bool = True) -> web.Application:
    app = web.Application(middlewares=[guard], client_max_size=1024 * 1024)
    admin = MQAdminExt(cfg.namesrv_addr, cfg.rpc_timeout, api_class=CountingClientAPI)
    app[CONFIG] = cfg
    app[ADMIN] = admin
    app[SAMPLER] = Sampler(admin, cfg.sample_interval, cfg.sample_points)
    app[PRODUCER] = [None, asyncio.Lock()]

    async def lifecycle(app: web.Application):
        if sample:
            app[SAMPLER].start()
        yield
        await app[SAMPLER].stop()
        if app[PRODUCER][0] is not None:
            await app[PRODUCER][0].shutdown()
        await admin.close()

    app.cleanup_ctx.append(lifecycle)
    r = app.router
    r.add_get("/", index)
    r.add_get("/static/{name}", asset)
    r.add_get("/api/cluster", api_cluster)
    r.add_get("/api/topics", api_topics)
    r.add_post("/api/topics", api_topic_create)
    r.add_get("/api/topics/{topic}", api_topic)
    r.add_delete("/api/topics/{topic}", api_topic_delete)
    r.add_get("/api/topics/{topic}/status", api_topic_status)
    r.add_post("/api/topics/{topic}/send", api_topic_send)
    r.add_get("/api/groups", api_groups)
    r.add_get("/api/groups/{group}/progress", api_group_progress)
    r.add_get("/api/groups/{group}/connection", api_group_connection)
    r.add_post("/api/groups/{group}/reset-offset", api_group_reset)
    r.add_post("/api/groups/{group}/skip-accumulated", api_group_skip)
    r.add_get("/api/messages", api_messages)
    r.add_post("/api/messages/resend", api_resend)
    r.add_get("/api/messages/{msgId}", api_message)
    r.add_get("/api/messages/{msgId}/body", api_message_body)
    r.add_get("/api/messages/{msgId}/trace", api_message_trace)
    r.add_get("/api/dlq/{group}", api_dlq)
    r.add_get("/api/metrics", api_metrics)
    return app

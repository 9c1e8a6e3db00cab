"""Drive the official RocketMQ C++ client (2.x, via its Python binding) from the command line.

Run as a child process by the interop tests so that a crash inside the native
client cannot take the test runner down. Each sub-command prints one JSON
document on stdout (its last line).

    cpp_client_driver.py produce NAMESRV TOPIC COUNT [--tag T] [--batch N] [--prefix P]
    cpp_client_driver.py send NAMESRV SPEC_JSON
    cpp_client_driver.py consume NAMESRV TOPIC GROUP COUNT TIMEOUT [--expr E] [--fail-first] [--orderly]
                         [--broadcast] [--out FILE] [--stop-file FILE] [--max-reconsume N] [--props a,b]
    cpp_client_driver.py pull NAMESRV TOPIC GROUP [--expr E] [--max-num N]
    cpp_client_driver.py transaction NAMESRV TOPIC PLAN [--wait-checks S] [--stop-file FILE]

``send`` takes a JSON spec (see :func:`send`), so one driver covers sync,
async, oneway, orderly and batch sends with any keys, tags, properties, delay
levels and generated bodies. ``consume --out`` streams one JSON line per
delivered message so that a test can watch several consumer processes at once
and tell them when to stop (``--stop-file``).

Workarounds for the native client (not for our server):
  * PushConsumer.shutdown() crashes (its message-trace producer is torn down
    twice), so consumers are kept alive and the process leaves with os._exit.
  * Message.set_body passes a C string (cut at the first NUL), so bodies are set
    with SetByteMessageBody and generated bodies never contain NUL.
  * The binding has no transaction producer: it is driven through the C API
    (CreateTransactionProducer / SendMessageTransaction) with ctypes.
  * The C API has no max-reconsume setter: DefaultMQPushConsumer's exported
    (non-virtual) setMaxReconsumeTimes is called on the C handle, which the
    C API documents as that object.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import random
import sys
import threading
import time

_KEEP_ALIVE: list = []


def _s(v):
    """The binding returns bytes or str depending on the field."""
    return v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else v


def _b(v) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else v


def _credentials(client) -> None:
    """ACL session credentials from DRIVER_ACCESS_KEY / DRIVER_SECRET_KEY, when set (the C++ client signs then)."""
    ak, sk = os.environ.get("DRIVER_ACCESS_KEY"), os.environ.get("DRIVER_SECRET_KEY")
    if ak and sk:
        client.set_session_credentials(ak, sk, "ALIYUN")


def _now_ms() -> int:
    return int(time.time() * 1000)


def gen_body(size: int, kind: str = "text", seed: int = 0) -> bytes:
    """A deterministic body of ``size`` bytes without NUL: ``text`` compresses well, ``random`` does not."""
    if kind == "random":
        return random.Random(seed).randbytes(size).replace(b"\0", b"\x01")
    unit = f"rocketmq-interop-{seed}-".encode()
    return (unit * (size // len(unit) + 1))[:size]


def body_of(spec: dict) -> bytes:
    """A message spec's body: ``body`` (text) or ``gen`` ({size, kind, seed})."""
    if "gen" in spec:
        g = spec["gen"]
        return gen_body(int(g["size"]), g.get("kind", "text"), int(g.get("seed", 0)))
    return _b(spec.get("body", ""))


def _make_message(spec: dict):
    from rocketmq.client import Message
    from rocketmq.ffi import dll

    m = Message(spec["topic"])
    if spec.get("tags"):
        m.set_tags(spec["tags"])
    if spec.get("keys"):
        m.set_keys(spec["keys"])
    for k, v in (spec.get("props") or {}).items():
        m.set_property(k, v)
    if spec.get("delay"):
        m.set_delay_time_level(int(spec["delay"]))
    body = body_of(spec)
    dll.SetByteMessageBody(m._handle, body, len(body))
    return m


def _result(r, **extra) -> dict:
    return {"status": int(r.status), "msg_id": r.msg_id, "offset": r.offset, **extra}


def send(args) -> dict:
    """Send messages described by a JSON spec.

    ``{"group", "mode": sync|async|oneway|orderly|batch, "batch": N, "timeout_ms",
    "compress_level", "max_size", "trace" (message trace on), "linger_file", "messages": [{"topic", "tags", "keys", "props",
    "delay", "body" | "gen", "arg" (orderly selector argument)}]}``.
    Every result carries ``born_ms`` (wall clock just before the send) and, for a
    failure, ``error``.
    """
    from rocketmq.client import Producer

    spec = json.loads(args.spec)
    producer = Producer(spec.get("group", "interop-producer"))
    producer.set_namesrv_addr(args.namesrv)
    producer.set_timeout(int(spec.get("timeout_ms", 5000)))
    _credentials(producer)
    if "compress_level" in spec:
        producer.set_compress_level(int(spec["compress_level"]))
    if "max_size" in spec:
        producer.set_max_message_size(int(spec["max_size"]))
    if spec.get("trace"):
        from rocketmq.ffi import dll

        dll.SetProducerMessageTrace.argtypes = [ctypes.c_void_p, ctypes.c_int]
        dll.SetProducerMessageTrace(producer._handle, 0)  # CTraceModel OPEN
    producer.start()
    mode = spec.get("mode", "sync")
    msgs = spec["messages"]
    results: list[dict] = []
    async_done = threading.Event()
    async_lock = threading.Lock()
    async_results: list[dict] = []

    def one(i: int, ms: dict) -> None:
        m = _make_message(ms)
        born = _now_ms()
        try:
            if mode == "sync":
                results.append(_result(producer.send_sync(m), i=i, born_ms=born))
            elif mode == "orderly":
                results.append(_result(producer.send_orderly(m, int(ms.get("arg", 0))), i=i, born_ms=born))
            elif mode == "oneway":
                producer.send_oneway(m)
                results.append({"i": i, "born_ms": born})
            elif mode == "async":

                def ok(r, i=i):
                    with async_lock:
                        async_results.append(_result(r, i=i, born_ms=born))
                        if len(async_results) >= len(msgs):
                            async_done.set()

                def err(e, i=i):
                    with async_lock:
                        async_results.append({"i": i, "error": str(e)})
                        if len(async_results) >= len(msgs):
                            async_done.set()

                producer.send_async(m, ok, err)
                _KEEP_ALIVE.append(m)
        except Exception as e:  # a refused send is a result, not a driver failure
            results.append({"i": i, "born_ms": born, "error": f"{type(e).__name__}: {e}"})

    try:
        if mode == "batch":
            n = int(spec.get("batch", 8))
            for start in range(0, len(msgs), n):
                chunk = [_make_message(ms) for ms in msgs[start : start + n]]
                born = _now_ms()
                try:
                    r = producer.send_batch(chunk)
                    results.append(_result(r, i=start, n=len(chunk), born_ms=born))
                except Exception as e:
                    results.append({"i": start, "n": len(chunk), "error": f"{type(e).__name__}: {e}"})
        else:
            for i, ms in enumerate(msgs):
                one(i, ms)
            if mode == "async":
                async_done.wait(float(spec.get("async_wait", 30)))
                with async_lock:
                    results = sorted(async_results, key=lambda r: r["i"])
        if spec.get("linger_file"):
            deadline = time.monotonic() + float(spec.get("linger_max", 30))
            while not os.path.exists(spec["linger_file"]) and time.monotonic() < deadline:
                async_done.wait(0.05)
    finally:
        producer.shutdown()
        _KEEP_ALIVE.append(producer)
    return {"results": results}


def produce(args) -> dict:
    """The original simple form: COUNT messages, one tag, keys/bodies from a prefix."""
    msgs = [
        {
            "topic": args.topic,
            "tags": args.tag,
            "keys": f"{args.prefix}-key-{i}",
            "props": {"seq": str(i)},
            "body": f"{args.prefix}-body-{i}",
        }
        for i in range(args.count)
    ]
    spec = {"group": args.group, "timeout_ms": args.timeout_ms, "messages": msgs}
    if args.batch > 1:
        for m in msgs:
            m.pop("props")
        spec.update(mode="batch", batch=args.batch)
    args.spec = json.dumps(spec)
    return send(args)


def _set_max_reconsume_times(consumer, n: int) -> None:
    from rocketmq.ffi import dll

    fn = dll._ZN8rocketmq21DefaultMQPushConsumer20setMaxReconsumeTimesEi
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int]
    fn.restype = None
    fn(consumer._handle, n)


def _record(msg, props: list[str]) -> dict:
    body = msg.body or b""
    text = _s(body)
    return {
        "body": text if len(body) <= 256 else text[:64],
        "body_len": len(body),
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "topic": _s(msg.topic),
        "tags": _s(msg.tags),
        "keys": _s(msg.keys),
        "id": _s(msg.id),
        "queue_id": msg.queue_id,
        "queue_offset": msg.queue_offset,
        "reconsume_times": msg.reconsume_times,
        "born_ms": msg.born_timestamp,
        "store_ms": msg.store_timestamp,
        "recv_ms": _now_ms(),
        "seq": _s(msg.get_property("seq")),
        "props": {p: _s(msg.get_property(p)) for p in props},
    }


def consume(args) -> dict:
    from rocketmq.client import MessageModel, PushConsumer

    got: list[dict] = []
    lock = threading.Lock()
    failures: dict[str, int] = {}
    done = threading.Event()
    props = [p for p in (args.props or "").split(",") if p]
    out = open(args.out, "a", encoding="utf-8") if args.out else None

    def emit(rec: dict) -> None:
        if out is not None:
            out.write(json.dumps(rec) + "\n")
            out.flush()

    def on_message(msg):
        rec = _record(msg, props)
        with lock:
            n = failures.get(rec["body"], 0)
            if n < args.fail_times:
                failures[rec["body"]] = n + 1
                rec["failed"] = True
                got.append(rec)
                emit(rec)
                raise RuntimeError("fail this delivery on purpose")
            got.append(rec)
            emit(rec)
            if args.count and len({g["body"] for g in got if not g.get("failed")}) >= args.count:
                done.set()

    model = MessageModel.BROADCASTING if args.broadcast else MessageModel.CLUSTERING
    consumer = PushConsumer(args.group, orderly=args.orderly, message_model=model)
    consumer.set_namesrv_addr(args.namesrv)
    _credentials(consumer)
    if args.instance:
        consumer.set_instance_name(args.instance)
    if args.max_reconsume:
        _set_max_reconsume_times(consumer, args.max_reconsume)
    consumer.subscribe(args.topic, on_message, args.expr)
    consumer.start()
    _KEEP_ALIVE.append(consumer)  # its __del__ would call the crashing shutdown
    emit({"event": "started", "pid": os.getpid()})
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if args.stop_file:
            if os.path.exists(args.stop_file):
                break
            done.wait(0.05)
        elif done.wait(min(0.5, max(0.0, deadline - time.monotonic()))):
            break
    with lock:
        return {
            "messages": [g for g in got if not g.get("failed")],
            "failed": [g for g in got if g.get("failed")],
            "complete": done.is_set(),
        }


def pull(args) -> dict:
    """PullConsumer: fetch the topic's queues, pull each from 0 to the end, then probe past the end."""
    from rocketmq.client import PullConsumer
    from rocketmq.ffi import _CMessageQueue, dll

    consumer = PullConsumer(args.group)
    consumer.set_namesrv_addr(args.namesrv)
    _credentials(consumer)
    consumer.start()
    _KEEP_ALIVE.append(consumer)
    mqs_ptr = ctypes.POINTER(_CMessageQueue)()
    n = ctypes.c_int()
    rc = dll.FetchSubscriptionMessageQueues(
        consumer._handle, _b(args.topic), ctypes.pointer(mqs_ptr), ctypes.pointer(n)
    )
    if rc != 0:
        return {"error": f"FetchSubscriptionMessageQueues rc={rc}: {_s(dll.GetLatestErrorMessage())}"}
    queues = []
    for qi in range(n.value):
        mq = mqs_ptr[qi]
        q = {"broker": _s(mq.brokerName), "queue_id": mq.queueId, "pulls": [], "messages": []}
        offset = 0
        for _ in range(200):  # bounded: each pull moves forward or stops
            r = dll.Pull(consumer._handle, ctypes.pointer(mq), _b(args.expr), offset, args.max_num)
            q["pulls"].append(
                {
                    "offset": offset,
                    "status": r.pullStatus,
                    "next": r.nextBeginOffset,
                    "min": r.minOffset,
                    "max": r.maxOffset,
                    "size": r.size,
                }
            )
            from rocketmq.client import RecvMessage

            for i in range(r.size if r.pullStatus == 0 else 0):
                q["messages"].append(_record(RecvMessage(r.msgFoundList[i]), []))
            dll.ReleasePullResult(r)
            if r.pullStatus in (1, 3, 4) or r.nextBeginOffset <= offset:
                break
            offset = r.nextBeginOffset
        # Past the end: the broker must say "offset moved/illegal" or "no new message".
        r = dll.Pull(consumer._handle, ctypes.pointer(mq), _b(args.expr), offset + 1000, args.max_num)
        q["beyond"] = {
            "offset": offset + 1000,
            "status": r.pullStatus,
            "next": r.nextBeginOffset,
            "min": r.minOffset,
            "max": r.maxOffset,
        }
        dll.ReleasePullResult(r)
        queues.append(q)
    dll.ReleaseSubscriptionMessageQueue(mqs_ptr)
    return {"queues": queues}


# CTransactionStatus of the C API.
_TX = {"commit": 0, "rollback": 1, "unknown": 2}


def transaction(args) -> dict:
    """TransactionMQProducer through the C API.

    PLAN is a comma list, one message each: ``commit``, ``rollback``,
    ``unknown:commit`` or ``unknown:rollback`` (the local transaction's answer,
    then the answer to the broker's check). Waits until every ``unknown`` message
    has been checked and answered with its final state (or ``--wait-checks``).
    """
    from rocketmq.client import Message, RecvMessage
    from rocketmq.ffi import _CSendResult, dll

    plan = [p.split(":") for p in args.plan.split(",")]
    executor_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    checker_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    lock = threading.Lock()
    checks: list[dict] = []
    executed: list[str] = []
    want_checked = {f"tx-{i}" for i, p in enumerate(plan) if p[0] == "unknown"}
    checked_final: set[str] = set()
    all_checked = threading.Event()
    if not want_checked:
        all_checked.set()

    def key_of(handle) -> str:
        return _s(dll.GetMessageKeys(handle)) or ""

    def on_execute(_producer, cmsg, _data):
        k = key_of(cmsg)
        with lock:
            executed.append(k)
        return _TX[plan[int(k.split("-")[1])][0]]

    def on_check(_producer, cmsg_ext, _data):
        msg = RecvMessage(cmsg_ext)
        k = key_of(cmsg_ext)
        step = plan[int(k.split("-")[1])]
        answer = step[1] if len(step) > 1 else step[0]
        with lock:
            checks.append(
                {
                    "keys": k,
                    "answer": answer,
                    "at_ms": _now_ms(),
                    "topic": _s(msg.topic),
                    "tx_id": _s(msg.get_property("__transactionId__")),
                    "uniq": _s(msg.get_property("UNIQ_KEY")),
                }
            )
            if k in want_checked and answer != "unknown":
                checked_final.add(k)
                if checked_final >= want_checked:
                    all_checked.set()
        return _TX[answer]

    dll.CreateTransactionProducer.argtypes = [ctypes.c_char_p, checker_t, ctypes.c_void_p]
    dll.CreateTransactionProducer.restype = ctypes.c_void_p
    dll.SendMessageTransaction.argtypes = [
        ctypes.c_void_p,
        ctypes.c_void_p,
        executor_t,
        ctypes.c_void_p,
        ctypes.POINTER(_CSendResult),
    ]
    dll.SendMessageTransaction.restype = ctypes.c_int
    exec_cb = executor_t(on_execute)
    check_cb = checker_t(on_check)
    _KEEP_ALIVE.extend([exec_cb, check_cb])
    handle = dll.CreateTransactionProducer(_b(args.group), check_cb, None)
    dll.SetProducerNameServerAddress(ctypes.c_void_p(handle), _b(args.namesrv))
    dll.SetProducerSendMsgTimeout(ctypes.c_void_p(handle), 5000)
    rc = dll.StartProducer(ctypes.c_void_p(handle))
    if rc != 0:
        return {"error": f"StartProducer rc={rc}: {_s(dll.GetLatestErrorMessage())}"}
    sends = []
    for i, _ in enumerate(plan):
        m = Message(args.topic)
        m.set_tags("TX")
        m.set_keys(f"tx-{i}")
        body = f"tx-body-{i}".encode()
        dll.SetByteMessageBody(m._handle, body, len(body))
        res = _CSendResult()
        rc = dll.SendMessageTransaction(handle, m._handle, exec_cb, None, ctypes.pointer(res))
        sends.append(
            {
                "keys": f"tx-{i}",
                "rc": rc,
                "status": res.sendStatus,
                "msg_id": _s(res.msgId),
                "error": None if rc == 0 else _s(dll.GetLatestErrorMessage()),
            }
        )
        _KEEP_ALIVE.append(m)
    # Without a stop file: until every "unknown" is checked. With one: until the caller (who
    # watches the broker) says so, since the answer to a check (END_TRANSACTION) leaves only
    # after the checker returns and some plans are never decided.
    deadline = time.monotonic() + args.wait_checks
    if args.stop_file:
        while not os.path.exists(args.stop_file) and time.monotonic() < deadline:
            all_checked.wait(0.05)
    else:
        all_checked.wait(args.wait_checks)
    # Shutting the transaction producer down is not needed: the process exits.
    with lock:
        return {
            "sends": sends,
            "executed": list(executed),
            "checks": list(checks),
            "all_checked": all_checked.is_set(),
        }


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("produce")
    p.add_argument("namesrv")
    p.add_argument("topic")
    p.add_argument("count", type=int)
    p.add_argument("--group", default="interop-producer")
    p.add_argument("--tag", default="TagA")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prefix", default="m")
    p.add_argument("--timeout-ms", type=int, default=5000)
    s = sub.add_parser("send")
    s.add_argument("namesrv")
    s.add_argument("spec")
    c = sub.add_parser("consume")
    c.add_argument("namesrv")
    c.add_argument("topic")
    c.add_argument("group")
    c.add_argument("count", type=int)
    c.add_argument("timeout", type=float)
    c.add_argument("--expr", default="*")
    c.add_argument("--fail-first", dest="fail_times", action="store_const", const=1, default=0)
    c.add_argument("--fail-times", type=int, dest="fail_times")
    c.add_argument("--orderly", action="store_true")
    c.add_argument("--broadcast", action="store_true")
    c.add_argument("--out")
    c.add_argument("--stop-file")
    c.add_argument("--instance")
    c.add_argument("--max-reconsume", type=int, default=0)
    c.add_argument("--props", default="")
    pl = sub.add_parser("pull")
    pl.add_argument("namesrv")
    pl.add_argument("topic")
    pl.add_argument("group")
    pl.add_argument("--expr", default="*")
    pl.add_argument("--max-num", type=int, default=32)
    t = sub.add_parser("transaction")
    t.add_argument("namesrv")
    t.add_argument("topic")
    t.add_argument("plan")
    t.add_argument("--group", default="interop-tx-producer")
    t.add_argument("--wait-checks", type=float, default=30.0)
    t.add_argument("--stop-file")
    args = ap.parse_args()
    started = time.monotonic()
    handler = {"produce": produce, "send": send, "consume": consume, "pull": pull, "transaction": transaction}
    out = handler[args.cmd](args)
    out["seconds"] = round(time.monotonic() - started, 3)
    print(json.dumps(out), flush=True)
    # Skip every native destructor: several crash at exit (see the module docstring).
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())

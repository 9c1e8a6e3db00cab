"""Drive the official RocketMQ C++ client (2.x, via its Python binding) from the command line.

Run as a child process by the interop tests so that a crash inside the native
client cannot take the test runner down. Prints one JSON document on stdout.

    cpp_client_driver.py produce NAMESRV TOPIC COUNT [--tag T] [--batch N] [--prefix P]
    cpp_client_driver.py consume NAMESRV TOPIC GROUP COUNT TIMEOUT [--expr E] [--fail-first]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

_KEEP_ALIVE: list = []


def _s(v):
    """The binding returns bytes or str depending on the field."""
    return v.decode("utf-8", "replace") if isinstance(v, (bytes, bytearray)) else v


def produce(args) -> dict:
    from rocketmq.client import Message, Producer

    producer = Producer(args.group)
    producer.set_namesrv_addr(args.namesrv)
    producer.set_timeout(args.timeout_ms)
    producer.start()
    results = []
    try:
        if args.batch > 1:
            for start in range(0, args.count, args.batch):
                msgs = []
                for i in range(start, min(start + args.batch, args.count)):
                    m = Message(args.topic)
                    m.set_tags(args.tag)
                    m.set_keys(f"{args.prefix}-key-{i}")
                    m.set_body(f"{args.prefix}-body-{i}".encode())
                    msgs.append(m)
                r = producer.send_batch(msgs)
                results.append({"status": int(r.status), "msg_id": r.msg_id, "offset": r.offset, "n": len(msgs)})
        else:
            for i in range(args.count):
                m = Message(args.topic)
                m.set_tags(args.tag)
                m.set_keys(f"{args.prefix}-key-{i}")
                m.set_property("seq", str(i))
                m.set_body(f"{args.prefix}-body-{i}".encode())
                r = producer.send_sync(m)
                results.append({"status": int(r.status), "msg_id": r.msg_id, "offset": r.offset})
    finally:
        producer.shutdown()
    return {"results": results}


def consume(args) -> dict:
    from rocketmq.client import PushConsumer

    got: list[dict] = []
    lock = threading.Lock()
    failed_once: set[str] = set()
    done = threading.Event()

    def on_message(msg):
        body = _s(msg.body)
        if args.fail_first and body not in failed_once:
            failed_once.add(body)
            raise RuntimeError("fail the first delivery")
        with lock:
            got.append(
                {
                    "body": _s(msg.body),
                    "tags": _s(msg.tags),
                    "keys": _s(msg.keys),
                    "id": _s(msg.id),
                    "queue_id": msg.queue_id,
                    "queue_offset": msg.queue_offset,
                    "reconsume_times": msg.reconsume_times,
                    "seq": _s(msg.get_property("seq")),
                }
            )
            if len({g["body"] for g in got}) >= args.count:
                done.set()

    consumer = PushConsumer(args.group)
    consumer.set_namesrv_addr(args.namesrv)
    consumer.subscribe(args.topic, on_message, args.expr)
    consumer.start()
    _KEEP_ALIVE.append(consumer)  # its __del__ would call the crashing shutdown
    done.wait(args.timeout)
    # The 2.x C++ client crashes inside PushConsumer.shutdown (its message-trace
    # producer is torn down twice), so the caller exits without calling it.
    with lock:
        return {"messages": list(got), "complete": done.is_set()}


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
    c = sub.add_parser("consume")
    c.add_argument("namesrv")
    c.add_argument("topic")
    c.add_argument("group")
    c.add_argument("count", type=int)
    c.add_argument("timeout", type=float)
    c.add_argument("--expr", default="*")
    c.add_argument("--fail-first", action="store_true")
    args = ap.parse_args()
    started = time.monotonic()
    out = produce(args) if args.cmd == "produce" else consume(args)
    out["seconds"] = round(time.monotonic() - started, 3)
    print(json.dumps(out), flush=True)
    if args.cmd == "consume":
        os._exit(0)  # skip the native client's crashing shutdown (see consume())
    return 0


if __name__ == "__main__":
    sys.exit(main())

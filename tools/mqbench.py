"""mqbench: producer / consumer load generator (run as ``bin/mqbench producer|consumer [options]``).

Option letters follow RocketMQ's benchmark tools: ``-n`` namesrv, ``-t``
topic, ``-w`` concurrent senders, ``-s`` message size, ``-b`` batch size,
``-k`` set keys, ``-l`` tag count, ``-q`` message count; plus ``-d`` duration
in seconds and ``-P`` worker processes (the load is spread over several
processes so one interpreter's core is not the limit). Every second one line
is printed in the Java tool's shape, then a summary. Runs are always bounded:
by ``-q`` messages and ``-d`` seconds (default 10).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing as mp
import os
import queue
import sys
import time
from collections.abc import Iterator

from remoting import run

REPORT_INTERVAL = 1.0


# -- workers (child processes) -----------------------------------------------------------------------------


def _producer_worker(args, index: int, senders: int, quota: int, out: mp.Queue, stop_at: float) -> None:
    logging.getLogger("client").setLevel(logging.ERROR)
    run(_produce(args, index, senders, quota, out, stop_at))


async def _produce(args, index: int, senders: int, quota: int, out: mp.Queue, stop_at: float) -> None:
    from client import Message, Producer

    p = Producer(f"benchmark_producer_{os.getpid()}", args.namesrv, send_msg_timeout=args.timeout)
    await p.start()
    body = (b"Hello RocketMQ! " * (args.size // 16 + 1))[: args.size]
    stats = {"ok": 0, "fail": 0, "rt_sum": 0.0, "rt_max": 0.0}
    remaining = [quota if quota > 0 else -1]
    seq = [0]

    def make() -> Message:
        seq[0] += 1
        tags = f"tag{seq[0] % args.tags}" if args.tags > 0 else None
        keys = f"{index}-{seq[0]}" if args.keys else None
        return Message(args.topic, body, tags=tags, keys=keys)

    async def sender() -> None:
        while time.time() < stop_at:
            if remaining[0] == 0:
                return
            n = args.batch if args.batch > 1 else 1
            if remaining[0] > 0:
                n = min(n, remaining[0])
                remaining[0] -= n
            t0 = time.perf_counter()
            try:
                if n > 1 or args.batch > 1:
                    await p.send_batch([make() for _ in range(n)])
                else:
                    await p.send(make())
                rt = (time.perf_counter() - t0) * 1000
                stats["ok"] += n
                stats["rt_sum"] += rt * n
                stats["rt_max"] = max(stats["rt_max"], rt)
            except Exception:
                stats["fail"] += n

    async def reporter() -> None:
        while True:
            await asyncio.sleep(REPORT_INTERVAL)
            out.put(("p", dict(stats)))
            stats.update(ok=0, fail=0, rt_sum=0.0, rt_max=0.0)

    rep = asyncio.get_running_loop().create_task(reporter())
    await asyncio.gather(*[sender() for _ in range(senders)])
    rep.cancel()
    out.put(("p", dict(stats)))
    await p.shutdown()
    out.put(("done", index))


def _consumer_worker(args, index: int, out: mp.Queue, stop_at: float) -> None:
    logging.getLogger("client").setLevel(logging.ERROR)
    run(_consume(args, index, out, stop_at))


async def _consume(args, index: int, out: mp.Queue, stop_at: float) -> None:
    from client import ConsumeConcurrentlyStatus, ConsumeFromWhere, PushConsumer

    stats = {"ok": 0, "b2c_sum": 0.0, "s2c_sum": 0.0, "b2c_max": 0.0, "s2c_max": 0.0}

    async def listener(msgs, ctx):
        now = time.time() * 1000
        for m in msgs:
            b2c, s2c = now - m.born_timestamp, now - m.store_timestamp
            stats["ok"] += 1
            stats["b2c_sum"] += b2c
            stats["s2c_sum"] += s2c
            stats["b2c_max"] = max(stats["b2c_max"], b2c)
            stats["s2c_max"] = max(stats["s2c_max"], s2c)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = PushConsumer(args.group, args.namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
                     if args.first else ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                     consume_message_batch_max_size=args.consume_batch, pull_batch_size=32)
    c.subscribe(args.topic, args.expression)
    c.register_message_listener(listener)
    await c.start()
    try:
        while time.time() < stop_at:
            await asyncio.sleep(REPORT_INTERVAL)
            out.put(("c", dict(stats)))
            stats.update(ok=0, b2c_sum=0.0, s2c_sum=0.0, b2c_max=0.0, s2c_max=0.0)
    finally:
        await c.shutdown()
        out.put(("c", dict(stats)))
        out.put(("done", index))


# -- parent ----------------------------------------------------------------------------------------------------


def _drain(out: mp.Queue, timeout: float) -> list:
    items = []
    try:
        items.append(out.get(timeout=max(timeout, 0.01)))
        while True:
            items.append(out.get_nowait())
    except queue.Empty:
        pass
    return items


def _reports(out: mp.Queue, workers: int, deadline: float) -> Iterator[dict | None]:
    """Each stats dict the workers send, and None at every report interval, until every worker is done
    or ``deadline`` passes."""
    done = 0
    next_print = time.time() + REPORT_INTERVAL
    while done < workers and time.time() < deadline:
        for kind, v in _drain(out, next_print - time.time()):
            if kind == "done":
                done += 1
            else:
                yield v
        if time.time() >= next_print:
            yield None
            next_print += REPORT_INTERVAL


def _zero(sums: tuple[str, ...], maxes: tuple[str, ...]) -> dict:
    return dict.fromkeys(sums + maxes, 0)


def _add(v: dict, sums: tuple[str, ...], maxes: tuple[str, ...], *into: dict) -> None:
    for acc in into:
        for k in sums:
            acc[k] += v[k]
        for k in maxes:
            acc[k] = max(acc[k], v[k])


def run_producer(args) -> int:
    procs_n = max(1, min(args.processes, args.threads))
    stop_at = time.time() + args.duration
    out: mp.Queue = mp.Queue()
    per = [args.threads // procs_n + (1 if i < args.threads % procs_n else 0) for i in range(procs_n)]
    quotas = [0] * procs_n
    if args.count > 0:
        quotas = [args.count // procs_n + (1 if i < args.count % procs_n else 0) for i in range(procs_n)]
    workers = [mp.Process(target=_producer_worker, args=(args, i, per[i], quotas[i], out, stop_at), daemon=True)
               for i in range(procs_n)]
    for w in workers:
        w.start()
    print(f"mqbench producer: topic={args.topic} size={args.size} senders={args.threads} processes={procs_n} "
          f"batch={args.batch} count={args.count or 'unbounded'} duration={args.duration}s", flush=True)
    sums, maxes = ("ok", "fail", "rt_sum"), ("rt_max",)
    total = _zero(sums, maxes)
    tick = _zero(sums, maxes)
    t_start = time.time()
    first_ok = None
    for v in _reports(out, procs_n, stop_at + 15):
        if v is not None:
            _add(v, sums, maxes, tick, total)
            if first_ok is None and v["ok"]:
                first_ok = time.time() - REPORT_INTERVAL
            continue
        avg = tick["rt_sum"] / tick["ok"] if tick["ok"] else 0.0
        print(f"Current Time: {time.strftime('%H:%M:%S')} Send TPS: {tick['ok']} Max RT(ms): {tick['rt_max']:.0f} "
              f"Average RT(ms): {avg:7.3f} Send Failed: {tick['fail']} Response Failed: 0", flush=True)
        tick = _zero(sums, maxes)
    for w in workers:
        w.join(5)
        if w.is_alive():
            w.terminate()
    elapsed = max(time.time() - (first_ok or t_start), 1e-9)
    avg = total["rt_sum"] / total["ok"] if total["ok"] else 0.0
    print(f"Summary: Sent: {total['ok']} Send Failed: {total['fail']} Send TPS: {total['ok'] / elapsed:.0f} "
          f"Max RT(ms): {total['rt_max']:.0f} Average RT(ms): {avg:7.3f}", flush=True)
    return 0 if total["ok"] > 0 and total["fail"] == 0 else 1


def run_consumer(args) -> int:
    procs_n = max(1, args.processes)
    stop_at = time.time() + args.duration
    out: mp.Queue = mp.Queue()
    workers = [mp.Process(target=_consumer_worker, args=(args, i, out, stop_at), daemon=True) for i in range(procs_n)]
    for w in workers:
        w.start()
    print(f"mqbench consumer: topic={args.topic} group={args.group} processes={procs_n} duration={args.duration}s",
          flush=True)
    sums, maxes = ("ok", "b2c_sum", "s2c_sum"), ("b2c_max", "s2c_max")
    total = _zero(sums, maxes)
    tick = _zero(sums, maxes)
    first = last = None
    for v in _reports(out, procs_n, stop_at + 20):
        if v is not None:
            if v["ok"]:
                first = first or time.time() - REPORT_INTERVAL
                last = time.time()
            _add(v, sums, maxes, tick, total)
        else:
            n = tick["ok"]
            print(f"Current Time: {time.strftime('%H:%M:%S')} TPS: {n} FAIL: 0 "
                  f"AVG(B2C) RT(ms): {tick['b2c_sum'] / n if n else 0:7.3f} "
                  f"AVG(S2C) RT(ms): {tick['s2c_sum'] / n if n else 0:7.3f} "
                  f"MAX(B2C) RT(ms): {tick['b2c_max']:.0f} MAX(S2C) RT(ms): {tick['s2c_max']:.0f}", flush=True)
            tick = _zero(sums, maxes)
        if args.count > 0 and total["ok"] >= args.count:
            break
    for w in workers:
        w.terminate() if args.count > 0 and total["ok"] >= args.count else w.join(10)
    span = max((last or time.time()) - (first or time.time()), REPORT_INTERVAL)
    n = total["ok"]
    print(f"Summary: Consumed: {n} TPS: {n / span:.0f} AVG(B2C) RT(ms): {total['b2c_sum'] / n if n else 0:7.3f} "
          f"MAX(B2C) RT(ms): {total['b2c_max']:.0f}", flush=True)
    return 0 if n > 0 else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mqbench", description="RocketMQ benchmark (Python)")
    p.add_argument("role", choices=["producer", "consumer"])
    p.add_argument("-n", dest="namesrv", default=os.environ.get("NAMESRV_ADDR"), help="NameServer list")
    p.add_argument("-t", dest="topic", default="BenchmarkTest")
    p.add_argument("-w", dest="threads", type=int, default=64, help="concurrent senders (producer)")
    p.add_argument("-s", dest="size", type=int, default=128, help="message size in bytes")
    p.add_argument("-b", dest="batch", type=int, default=1, help="batch size (1 = single sends)")
    p.add_argument("-k", dest="keys", action="store_true", help="set a key on every message")
    p.add_argument("-l", dest="tags", type=int, default=0, help="number of distinct tags (0 = none)")
    p.add_argument("-q", dest="count", type=int, default=0, help="messages to send/consume (0 = until -d)")
    p.add_argument("-d", dest="duration", type=float, default=10.0, help="run at most this many seconds")
    p.add_argument("-P", dest="processes", type=int, default=min(os.cpu_count() or 1, 4), help="worker processes")
    p.add_argument("-g", dest="group", default=f"benchmark_consumer_{os.getpid()}")
    p.add_argument("-e", dest="expression", default="*", help="tag expression (consumer)")
    p.add_argument("-f", dest="first", action="store_true", help="consume from the first offset")
    p.add_argument("--consume-batch", dest="consume_batch", type=int, default=1)
    p.add_argument("--timeout", type=float, default=3.0, help="send timeout seconds")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.namesrv:
        sys.stderr.write("mqbench: no NameServer address, use -n or set NAMESRV_ADDR\n")
        return 2
    if args.duration <= 0 or args.size <= 0 or args.threads <= 0 or args.batch <= 0:
        sys.stderr.write("mqbench: -d, -s, -w and -b must be positive\n")
        return 2
    return run_producer(args) if args.role == "producer" else run_consumer(args)


if __name__ == "__main__":
    sys.exit(main())

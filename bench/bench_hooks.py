"""Per-request cost of the broker's ACL check and metrics recording, measured alone (no sockets).

Prints microseconds of CPU per request / message (the best of ``--repeat`` timed runs of ``--n`` calls
each, after a warm-up); asserts nothing. What it times:

* ``frame decode``: FrameDecoder.feed of one 1 KiB SEND_MESSAGE_V2 frame, unsigned and signed
  (the signed header carries two more fields: AccessKey and Signature);
* ``acl check``: the broker's ACL hook on a decoded signed send (account lookup, resources needed,
  signature recomputed over the sorted extFields and the body, permission), and the signature alone;
  the requests differ from each other (born timestamp, unique key) as a producer's do;
* ``metrics``: what the broker adds per send when metricsExporterType=PROM (the rpc latency
  record and the per-topic put counters), through the same calls the broker makes.

    .venv/bin/python bench/bench_hooks.py [--n 20000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import orjson  # noqa: E402

from common.acl_signer import SKIP_BROKER, request_signature, sign_fields  # noqa: E402
from remoting.codec import FrameDecoder  # noqa: E402
from remoting.codes import RequestCode  # noqa: E402

ACL_YML = """accounts:
  - accessKey: benchuser
    secretKey: benchsecret
    defaultTopicPerm: PUB
    defaultGroupPerm: SUB
"""
BODY = os.urandom(1024)


def send_frame(i: int, signed: bool) -> bytes:
    ext = {"a": "bench_pg", "b": "BenchTopic", "c": "TBW102", "d": "8", "e": str(i % 8), "f": "0",
           "g": str(1_800_000_000_000 + i), "h": "0", "i": f"UNIQ_KEY\x01BENCH{i:08d}\x02WAIT\x01true"}
    if signed:
        sign_fields(ext, BODY, "benchuser", "benchsecret")
    h = orjson.dumps({"code": int(RequestCode.SEND_MESSAGE_V2), "extFields": ext, "flag": 0, "language": "JAVA",
                      "opaque": i, "serializeTypeCurrentRPC": "JSON", "version": 401})
    return (4 + len(h) + len(BODY)).to_bytes(4, "big") + len(h).to_bytes(4, "big") + h + BODY


class _Conn:
    def __init__(self) -> None:
        self.remote_addr = "127.0.0.1:40000"
        self.attrs: dict = {}


def timed(fn, n: int, repeat: int) -> float:
    """Microseconds of this thread's CPU per call of ``fn(i)`` for i in range(n): the best of ``repeat``
    runs (on a shared machine the least disturbed run is the closest to the cost itself)."""
    for i in range(min(n, 2000)):
        fn(i)
    runs = []
    for _ in range(repeat):
        t0 = _cpu()
        for i in range(n):
            fn(i)
        runs.append((_cpu() - t0) / n * 1e6)
    return min(runs)


_cpu = time.thread_time


def bench_decode(n: int, repeat: int) -> None:
    for signed in (False, True):
        frames = [send_frame(i, signed) for i in range(64)]
        dec = FrameDecoder()
        us = timed(lambda i, f=frames, d=dec: d.feed(f[i & 63]), n, repeat)
        print(f"frame decode, {'signed  ' if signed else 'unsigned'}: {us:6.2f} us/request "
              f"({len(frames[0])} bytes)")


def bench_acl(n: int, repeat: int) -> None:
    from broker.acl.plain_access_validator import AclRpcHook, PlainAccessValidator
    from broker.acl.plain_permission_manager import PlainPermissionManager

    home = tempfile.mkdtemp(prefix="bench-hooks-")
    os.makedirs(os.path.join(home, "conf"))
    with open(os.path.join(home, "conf", "plain_acl.yml"), "w") as f:
        f.write(ACL_YML)
    old = os.environ.pop("ROCKETMQ_HOME", None)
    try:
        manager = PlainPermissionManager(home)
        manager.load()
    finally:
        if old is not None:
            os.environ["ROCKETMQ_HOME"] = old
    hook = AclRpcHook(PlainAccessValidator(manager))
    dec = FrameDecoder()
    reqs = [dec.feed(send_frame(i, True))[0] for i in range(64)]
    conn = _Conn()
    assert all(hook.do_before_request(conn, r) is None for r in reqs), "bench requests must pass the check"
    us = timed(lambda i: hook.do_before_request(conn, reqs[i & 63]), n, repeat)
    print(f"acl check (whole hook):   {us:6.2f} us/request")
    us = timed(lambda i: request_signature(reqs[i & 63].ext_fields, reqs[i & 63].body, "benchsecret", SKIP_BROKER),
               n, repeat)
    print(f"  of which the signature: {us:6.2f} us/request")


def bench_metrics(n: int, repeat: int) -> None:
    from broker.broker_stats_manager import MESSAGE_SIZE_BUCKETS
    from common import mixall, stats_counters
    from common.message import MessageConst
    from remoting.rpc_latency import RPC_LATENCY_BUCKETS_MS

    class _M:
        topic = "BenchTopic"
        properties = {"UNIQ_KEY": "x"}

    m = _M()
    twins = [("pure", stats_counters.pure)] + [("compiled", stats_counters.compiled)] * (stats_counters.compiled is not None)
    for name, twin in twins:
        # the send path's one put call (BrokerStatsManager.inc_put; metrics on or off) ...
        puts = twin.TopicPutCounters(MESSAGE_SIZE_BUCKETS, mixall.SCHEDULE_TOPIC, mixall.RMQ_SYS_TRANS_HALF_TOPIC,
                                     MessageConst.SHARDING_KEY, lambda: 0)
        print(f"put statistics and counters ({name}): "
              f"{timed(lambda i, put=puts.put: put('BenchTopic', 1, 1024, m), n, repeat):6.2f} us/message")
        # ... and its rpc latency, timed once per read (Connection's stamp, then one histogram update)
        since = twin.Histogram(RPC_LATENCY_BUCKETS_MS).since
        print(f"rpc latency of a read ({name}): "
              f"{timed(lambda i, since=since, perf=time.perf_counter: since(perf(), 16), n, repeat):6.2f} us/read")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (best of {args.repeat} runs, thread CPU time)")
    bench_decode(args.n, args.repeat)
    bench_acl(args.n, args.repeat)
    bench_metrics(args.n, args.repeat)


if __name__ == "__main__":
    main()

"""Overload flood (issue 17, defect 4): 16 connections x 2,000 pipelined sends, and a canary.

A flood process (tests/soak/flood.py) keeps SOAK_FLOOD_WINDOW requests in flight on each of
SOAK_FLOOD_CONNS connections for SOAK_FLOOD_S seconds; meanwhile a canary in this process sends one
message at a time on its own connection and times each answer, and the broker's resident memory is
sampled. Then every queue is drained into the total-queue checker.

Goals: the canary's p99 <= 100 ms under the flood, the broker's memory bounded
(peak RSS <= SOAK_FLOOD_RSS_MIB), nothing acknowledged lost (flood or canary), every flood request
answered. These goals need BrokerFastFailure (the defect-4 work): on a broker that queues instead
of shedding, the canary waits behind the flood.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from remoting.client import RemotingClient
from tests.broker.helpers import BrokerProc, send, wait_max_offset
from tests.soak.checker import History, check
from tests.soak.flood import SIZE
from tests.soak.load import create_topic, drain, env_float, env_int, percentile, rss_kib
from tests.support import Proc

pytestmark = pytest.mark.soak

CONNS = env_int("SOAK_FLOOD_CONNS", 16)
WINDOW = env_int("SOAK_FLOOD_WINDOW", 2000)
SECONDS = env_float("SOAK_FLOOD_S", 15)
RSS_MIB = env_int("SOAK_FLOOD_RSS_MIB", 1024)
CANARY_P99_S = 0.100
TOPIC = "FloodT"
QUEUES = 4


@pytest.mark.timeout(600 + SECONDS * 2)
async def test_flood_with_canary(tmp_path):
    b = BrokerProc(tmp_path, mappedFileSizeCommitLog=64 << 20, mappedFileSizeConsumeQueue=300_000)
    await asyncio.to_thread(b.start)
    h = History()
    out = tmp_path / "flood.json"
    latencies: list[float] = []
    canary_codes: dict[int, int] = {}
    rss: list[int] = []
    async with RemotingClient() as c:
        await create_topic(c, b.addr, TOPIC, QUEUES)
        rss0 = rss_kib(b.proc.pid)
        flood = Proc("flood", ["-m", "tests.soak.flood", str(b.port), TOPIC, str(CONNS), str(WINDOW), str(SECONDS),
                               str(out)], tmp_path)
        seq = 0
        start = time.monotonic()
        # the canary's clock starts once the flood is in: its sends are being stored
        await wait_max_offset(c, b.addr, TOPIC, 0, min(WINDOW, 500), timeout=30)
        while flood.popen.poll() is None and time.monotonic() - start < SECONDS + 120:
            if time.monotonic() - start < SECONDS:  # the canary runs while the flood does
                key, body = h.attempt("canary", seq, SIZE)
                seq += 1
                t0 = time.monotonic()
                try:
                    code = (await send(c, b.addr, TOPIC, body, queue_id=seq % QUEUES, timeout=10)).code
                except Exception:
                    code = -1
                latencies.append(time.monotonic() - t0)
                canary_codes[code] = canary_codes.get(code, 0) + 1
                h.ack(key, code)
                await asyncio.sleep(0.01)  # a well-behaved client's pace
            else:
                await asyncio.sleep(0.25)
            if not rss or time.monotonic() - start > len(rss) * 0.25:
                rss.append(rss_kib(b.proc.pid))
        assert flood.popen.wait(30) == 0, flood.output()[-2000:]
        flood.stop()
        res = json.loads(out.read_text())
        for name, r in res.items():
            acked = set(r["acked"])
            for s in range(r["sent"]):
                key, _ = h.attempt(name, s, SIZE)
                h.ack(key, 0 if s in acked else 1)
        reads = await drain(c, b.addr, TOPIC, QUEUES, timeout=30)
        b.stop()
    rep = check(h, reads)
    codes: dict[str, int] = {}
    for r in res.values():
        for k, v in r["codes"].items():
            codes[k] = codes.get(k, 0) + v
    unanswered = sum(r["unanswered"] for r in res.values())
    p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
    peak = max(rss) if rss else 0
    print(f"\n[overload] conns={CONNS} window={WINDOW} seconds={SECONDS} flood codes={codes} unanswered={unanswered} "
          f"canary n={len(latencies)} codes={canary_codes} p50={p50 * 1000:.1f}ms p99={p99 * 1000:.1f}ms "
          f"rss start={rss0 // 1024}MiB peak={peak // 1024}MiB {rep.summary()}")
    assert not (rep.lost or rep.unexpected or rep.duplicated or rep.corrupt or rep.inconsistent), rep.detail()
    assert unanswered == 0, f"{unanswered} flood requests never answered"
    assert peak <= RSS_MIB * 1024, f"broker RSS peaked at {peak // 1024} MiB"
    assert p99 <= CANARY_P99_S, f"canary p99 {p99 * 1000:.0f} ms under the flood (defect 4: BrokerFastFailure)"

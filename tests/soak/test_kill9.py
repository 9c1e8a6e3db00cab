"""kill -9 of a broker under load, round after round, under SYNC_FLUSH and ASYNC_FLUSH.

Each round starts the broker on the same store, runs sequential producers for a random while,
and kills the broker (SIGKILL) with sends in flight. At the end the broker starts once more and
every queue is drained from offset 0 into the total-queue checker.

Goals: SYNC_FLUSH loses no acknowledged message. ASYNC_FLUSH loses at most what was acknowledged
within one flush interval before a kill (a SIGKILL keeps the page cache, so 0 is expected there
too). Under both, nothing torn is served (no undecodable batch, no body other than the one sent),
nothing duplicated, no (queue, offset) names two messages, per-producer order holds.

SOAK_KILL9_ROUNDS (50) sets the rounds.
"""

from __future__ import annotations

import asyncio
import bisect
import random
import time

import pytest

from remoting.client import RemotingClient
from tests.broker.helpers import BrokerProc
from tests.soak.checker import History, check
from tests.soak.load import Producers, create_topic, drain, env_int, percentile

pytestmark = pytest.mark.soak

ROUNDS = env_int("SOAK_KILL9_ROUNDS", 50)
TOPIC = "Kill9T"
QUEUES = 4
FLUSH_INTERVAL_MS = 500


@pytest.mark.timeout(300 + ROUNDS * 10)
@pytest.mark.parametrize("flush", ["SYNC_FLUSH", "ASYNC_FLUSH"])
async def test_kill9_rounds(tmp_path, flush):
    rng = random.Random(f"kill9-{flush}")
    b = BrokerProc(tmp_path, flushDiskType=flush, flushIntervalCommitLog=FLUSH_INTERVAL_MS,
                   mappedFileSizeCommitLog=1024 * 1024)  # small files: rounds cross file ends
    h = History()
    kills: list[float] = []
    starts: list[float] = []
    async with RemotingClient() as c:
        prod = Producers(h, c, lambda: b.addr, TOPIC, n=4, queues=QUEUES, timeout=2.0)
        for rnd in range(ROUNDS):
            t0 = time.monotonic()
            await asyncio.to_thread(b.start)
            starts.append(time.monotonic() - t0)
            if rnd == 0:
                await create_topic(c, b.addr, TOPIC, QUEUES)
            n0 = len(h.acked)
            prod.start()
            deadline = time.monotonic() + 5
            while len(h.acked) < n0 + 20 and time.monotonic() < deadline:  # the broker takes sends again
                await asyncio.sleep(0.01)
            await asyncio.sleep(rng.uniform(0.05, 0.8))  # random kill point (the fault's timing, not a sync)
            kills.append(time.monotonic())
            b.proc.kill()  # SIGKILL with sends in flight
            await prod.stop()
            b.proc.stop()
            await c.close_connection(b.addr)
        await asyncio.to_thread(b.start)
        reads = await drain(c, b.addr, TOPIC, QUEUES)
        b.stop()
    rep = check(h, reads)
    window = FLUSH_INTERVAL_MS / 1000
    def before_a_kill(t: float) -> bool:  # acknowledged at most one flush interval before some kill
        i = bisect.bisect_left(kills, t)
        return i < len(kills) and kills[i] - t <= window

    late = {k for k, t in h.ack_time.items() if before_a_kill(t)}
    print(f"\n[kill9 {flush}] rounds={ROUNDS} {rep.summary()} codes={prod.codes} "
          f"acked-within-flush-interval-of-a-kill={len(late)} start p50={percentile(starts, 50):.2f}s "
          f"p99={percentile(starts, 99):.2f}s")
    assert rep.acked > ROUNDS * 20
    assert not (rep.unexpected or rep.corrupt or rep.duplicated or rep.inconsistent or rep.order), rep.detail()
    if flush == "SYNC_FLUSH":
        assert not rep.lost, rep.detail()
    else:
        outside = [k for k in rep.lost if k not in late]
        assert not outside, f"ASYNC_FLUSH lost acked messages older than one flush interval: {outside[:5]}"

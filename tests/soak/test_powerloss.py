"""Simulated power loss: SIGKILL, then every byte past what the broker had synced is zeroed, torn at
a 4 KiB page or garbled (tests/soak/powerloss.py), then the broker restarts and recovers.

Goals under SYNC_FLUSH over SOAK_POWERLOSS_ROUNDS (200) rounds: no acknowledged message lost,
recovery never serves a torn record (every message read has the body sent for its key, every batch
decodes), and a (queue, offset) once served never names another message later.
After each restart the tail written since the last check is pulled (so what a recovery serves is
seen even if a later round's recovery would hide it); at the end everything is drained again.
"""

from __future__ import annotations

import asyncio
import os
import random
import time

import pytest

from common.failpoint import ENV
from remoting.client import RemotingClient
from tests.broker.helpers import BrokerProc
from tests.soak.checker import History, Read, check
from tests.soak.load import Producers, create_topic, drain, env_int, percentile
from tests.soak.powerloss import MODES, damage, read_durable_log
from tests.support import Proc

pytestmark = pytest.mark.soak

ROUNDS = env_int("SOAK_POWERLOSS_ROUNDS", 200)
# which damages, in turn (comma separated subset of zero,tear,garble)
ROUND_MODES = tuple(os.environ.get("SOAK_POWERLOSS_MODES", ",".join(MODES)).split(","))
TOPIC = "PowerLossT"
QUEUES = 4


@pytest.mark.timeout(300 + ROUNDS * 10)
async def test_power_loss_sync_flush(tmp_path):
    rng = random.Random(20231117)
    log = tmp_path / "durable.log"
    b = BrokerProc(tmp_path, flushDiskType="SYNC_FLUSH", mappedFileSizeCommitLog=256 * 1024,
                   mappedFileSizeConsumeQueue=20 * 300,
                   start_proc=lambda label, args: Proc(label, args, tmp_path, env={ENV: str(log)}))
    h = History()
    reads: list[Read] = []
    next_offset: dict[int, int] = {}
    baseline: dict[str, int] = {}
    damaged = {m: 0 for m in MODES}
    recover_s: list[float] = []
    async with RemotingClient() as c:
        prod = Producers(h, c, lambda: b.addr, TOPIC, n=4, queues=QUEUES, timeout=2.0)
        for rnd in range(ROUNDS):
            t0 = time.monotonic()
            await asyncio.to_thread(b.start)
            recover_s.append(time.monotonic() - t0)
            if rnd == 0:
                await create_topic(c, b.addr, TOPIC, QUEUES)
            else:  # what this recovery serves: the tail since the last check
                tail = await drain(c, b.addr, TOPIC, QUEUES, start=next_offset)
                reads.extend(tail)
                for r in tail:
                    next_offset[r.queue[1]] = max(next_offset.get(r.queue[1], 0), r.offset + 1)
            n0 = len(h.acked)
            prod.start()
            deadline = time.monotonic() + 5
            while len(h.acked) < n0 + 10 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            await asyncio.sleep(rng.uniform(0.0, 0.3))  # random cut point (the fault's timing)
            b.proc.kill()
            await prod.stop()
            b.proc.stop()
            await c.close_connection(b.addr)
            durable = read_durable_log(log)
            for k, v in baseline.items():
                durable[k] = max(durable.get(k, 0), v)
            log.unlink(missing_ok=True)
            mode = ROUND_MODES[rnd % len(ROUND_MODES)]
            baseline, changed = damage(b.store, durable, mode, rng)
            damaged[mode] += changed
        await asyncio.to_thread(b.start)
        reads.extend(await drain(c, b.addr, TOPIC, QUEUES))
        b.stop()
    rep = check(h, reads)
    print(f"\n[power loss SYNC_FLUSH] rounds={ROUNDS} {rep.summary()} codes={prod.codes} "
          f"bytes damaged={damaged} restart p50={percentile(recover_s, 50):.2f}s p99={percentile(recover_s, 99):.2f}s")
    assert rep.acked > ROUNDS * 10
    assert sum(damaged.values()) > 0, "the harness damaged nothing: the failpoint log is not read"
    assert rep.ok, rep.detail()

"""Long randomized fault runs (``pytest -m soak``): many seeds, many thousand ticks each."""

from __future__ import annotations

import pytest

from tests.dledger.chaos import chaos_run


@pytest.mark.soak
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("n", [3, 5])
@pytest.mark.parametrize("compaction", [False, True])
def test_soak_chaos(n, compaction):
    for seed in range(100, 150):
        chaos_run(n, seed, 20000, compaction=compaction, enableBatchPush=seed % 3 == 0, maxBatchPushSize=300)

"""Hypothesis settings of the fuzz tier: bounded for CI (about a minute for the whole tier on 2 cores).

``ROCKETMQ_FUZZ_EXAMPLES`` raises the example count per property for longer runs on demand.
"""

from __future__ import annotations

import os

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="the fuzz tier needs hypothesis (pip install .[test])")

hypothesis.settings.register_profile(
    "rocketmq-fuzz",
    max_examples=int(os.environ.get("ROCKETMQ_FUZZ_EXAMPLES", "250")),
    deadline=None,  # a shared 2-core machine: time limits would only make the tier flaky
    database=None,  # no example database written into the tree
    suppress_health_check=[hypothesis.HealthCheck.too_slow, hypothesis.HealthCheck.data_too_large],
)
hypothesis.settings.load_profile("rocketmq-fuzz")

"""common.rate_limited_log: one line per key and interval, with the count held back."""

from __future__ import annotations

import logging

from common.rate_limited_log import RateLimitedLog


def test_one_line_per_key_and_interval_with_the_count(caplog):
    t = [100.0]
    rl = RateLimitedLog(logging.getLogger("rl-test"), logging.WARNING, 10.0, clock=lambda: t[0])
    with caplog.at_level(logging.WARNING, logger="rl-test"):
        assert rl.log("a", "refused %s", "x")
        assert not any(rl.log("a", "refused %s", "x") for _ in range(500))
        assert rl.log("b", "refused %s", "y")  # another key is not held back
        t[0] += 10.0
        assert rl.log("a", "refused %s", "x")
    assert [r.getMessage() for r in caplog.records] == [
        "refused x", "refused y", "refused x (500 more like it not logged)"]

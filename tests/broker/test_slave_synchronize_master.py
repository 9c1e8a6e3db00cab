"""SlaveSynchronize's master address across a failover (#17 defect 10): a replaced master the
NameServer still names is refused, and a NameServer naming no master clears it."""

from __future__ import annotations

from broker.slave_synchronize import SlaveSynchronize


def _ss() -> SlaveSynchronize:
    return SlaveSynchronize(None, None, None, None, "/nonexistent/delayOffset.json")


def test_forgotten_master_is_refused_until_another_is_offered():
    ss = _ss()
    assert ss.offer_master("10.0.0.1:10911") and ss.master_addr == "10.0.0.1:10911"
    assert not ss.offer_master("10.0.0.1:10911")  # the same master: nothing new
    ss.forget_master({"10.0.0.1:10911"})  # failover: the old master is paused, the NameServer still names it
    assert ss.master_addr is None
    assert not ss.offer_master("10.0.0.1:10911") and ss.master_addr is None
    assert ss.offer_master("10.0.0.2:10911") and ss.master_addr == "10.0.0.2:10911"
    # the refusal ends with the new master: the old one may lead again later
    ss.forget_master(set())
    assert ss.offer_master("10.0.0.1:10911")


def test_no_master_named_clears_the_address():
    ss = _ss()
    ss.offer_master("10.0.0.1:10911")
    assert not ss.offer_master(None) and ss.master_addr is None

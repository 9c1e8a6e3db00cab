"""RoleState: the role a broker starts in and the switches a DLedger role change makes."""

from __future__ import annotations

import pytest

from broker.role_state import DLEDGER_UNKNOWN_ID, MASTER_ID, RoleState
from store.config import BrokerRole, MessageStoreConfig


def test_start_role_from_the_configs():
    assert RoleState.from_configs(5, MessageStoreConfig(brokerRole=BrokerRole.SYNC_MASTER)).broker_id == MASTER_ID
    slave = RoleState.from_configs(2, MessageStoreConfig(brokerRole=BrokerRole.SLAVE))
    assert slave.is_slave and not slave.is_master and slave.broker_id == 2
    dledger = RoleState.from_configs(0, MessageStoreConfig(enableDLegerCommitLog=True))
    assert dledger.broker_id == DLEDGER_UNKNOWN_ID and not dledger.is_slave


def test_switches_keep_is_slave_in_step_and_refuse_a_slave_id_of_zero():
    r = RoleState(BrokerRole.ASYNC_MASTER)
    r.become_slave(3)
    assert (r.broker_role, r.broker_id, r.is_slave) == (BrokerRole.SLAVE, 3, True)
    r.become_master()  # a former slave confirms writes before answering
    assert (r.broker_role, r.broker_id, r.is_slave) == (BrokerRole.SYNC_MASTER, 0, False)
    with pytest.raises(ValueError, match="brokerId > 0"):
        r.become_slave(0)
    assert r.is_master and r.broker_id == 0
    r.set_dledger("LEADER", 7)
    assert "LEADER" in repr(r) and "term=7" in repr(r)

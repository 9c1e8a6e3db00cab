"""The broker keys a DLedger commit log hands to its DLedgerConfig (store/dledger_bridge.py)."""

from __future__ import annotations

from common.config import apply_properties, parse_properties, update_from_wire
from store.config import MessageStoreConfig
from store.dledger_bridge import dledger_config_from_store


def test_batch_push_keys_reach_dledger():
    sc = MessageStoreConfig()
    c = dledger_config_from_store(sc)
    assert (c.enableBatchPush, c.maxBatchPushSize) == (False, 4096)  # DLedger's defaults
    apply_properties(sc, parse_properties("enableBatchPush=true\nmaxBatchPushSize=65536\n"))
    c = dledger_config_from_store(sc)
    assert (c.enableBatchPush, c.maxBatchPushSize) == (True, 65536)


def test_max_batch_push_size_is_not_changed_over_the_wire():
    sc = MessageStoreConfig()
    update_from_wire(sc, {"maxBatchPushSize": "1"})
    assert sc.maxBatchPushSize == 4096

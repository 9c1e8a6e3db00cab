"""The broker keys a DLedger commit log hands to its DLedgerConfig (store/dledger_bridge.py)."""

from __future__ import annotations

from common.config import apply_properties, parse_properties, update_from_wire
from store.config import MessageStoreConfig
from store.dledger_bridge import dledger_config_from_store


def test_batch_push_keys_reach_dledger():
    sc = MessageStoreConfig()
    c = dledger_config_from_store(sc)
    assert (c.enableBatchPush, c.maxBatchPushSize, c.enableBinaryPush) == (False, 4096, True)  # DLedger's sizes
    apply_properties(sc, parse_properties("enableBatchPush=true\nmaxBatchPushSize=65536\nenableBinaryPush=false\n"))
    c = dledger_config_from_store(sc)
    assert (c.enableBatchPush, c.maxBatchPushSize, c.enableBinaryPush) == (True, 65536, False)


def test_push_keys_are_not_changed_over_the_wire():
    sc = MessageStoreConfig()
    update_from_wire(sc, {"maxBatchPushSize": "1", "enableBinaryPush": "false"})
    assert (sc.maxBatchPushSize, sc.enableBinaryPush) == (4096, True)

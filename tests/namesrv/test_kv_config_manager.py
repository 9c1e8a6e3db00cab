"""KVConfigManager: persistence to a real file, restart, .bak fallback, corrupt file refusal."""

from __future__ import annotations

import json

import pytest

from namesrv.kv_config_manager import KVConfigManager


def test_put_persist_reload(tmp_path):
    path = str(tmp_path / "namesrv" / "kvConfig.json")
    kv = KVConfigManager(path)
    kv.load()  # missing file: empty
    kv.persist(kv.put("ORDER_TOPIC_CONFIG", "T1", "broker-a:4"))
    kv.persist(kv.put("ns", "k", "值"))
    assert json.loads((tmp_path / "namesrv" / "kvConfig.json").read_text()) == {
        "configTable": {"ORDER_TOPIC_CONFIG": {"T1": "broker-a:4"}, "ns": {"k": "值"}}
    }
    again = KVConfigManager(path)
    again.load()
    assert again.get("ns", "k") == "值"
    assert json.loads(again.get_kv_list_by_namespace("ORDER_TOPIC_CONFIG")) == {"table": {"T1": "broker-a:4"}}
    assert again.get_kv_list_by_namespace("missing") is None
    snap = again.delete("ns", "k")
    assert snap is not None and again.delete("ns", "k") is None
    again.persist(snap)
    third = KVConfigManager(path)
    third.load()
    assert third.get("ns", "k") is None and third.get("ORDER_TOPIC_CONFIG", "T1") == "broker-a:4"


def test_falls_back_to_bak_when_main_file_is_empty(tmp_path):
    path = str(tmp_path / "kv.json")
    kv = KVConfigManager(path)
    kv.persist(kv.put("a", "b", "c"))
    kv.persist(kv.put("a", "d", "e"))  # previous content kept as .bak
    (tmp_path / "kv.json").write_text("")  # e.g. a crash truncated it
    again = KVConfigManager(path)
    again.load()
    assert again.get("a", "b") == "c"


def test_corrupt_file_is_refused_not_overwritten(tmp_path):
    p = tmp_path / "kv.json"
    p.write_text("{not json")
    kv = KVConfigManager(str(p))
    with pytest.raises(ValueError, match="cannot load KV config"):
        kv.load()
    assert p.read_text() == "{not json"

"""KVConfigManager: namespaced string maps, persisted to ``kvConfigPath`` as JSON.

File shape (RocketMQ's KVConfigSerializeWrapper): ``{"configTable":{ns:{k:v}}}``.
Each change is written atomically (tmp + fsync + rename, previous kept as
``.bak``); the write is returned as a snapshot so the caller can do the file
I/O off the event loop, in order.
"""

from __future__ import annotations

import logging

import orjson

from common.util import read_file_with_bak, write_file_atomic
from remoting.body import BodyError
from remoting.body.kv import KVConfigSerializeWrapper, KVTable

__all__ = ["KVConfigManager", "NAMESPACE_ORDER_TOPIC_CONFIG"]

log = logging.getLogger("namesrv.kv")

NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class KVConfigManager:
    """In-memory ``namespace -> {key: value}`` with JSON persistence to one file."""

    def __init__(self, path: str):
        self.path = path
        self.config_table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        """Read the file (or its .bak); a missing file is an empty table, a corrupt one an error."""
        text = read_file_with_bak(self.path)
        if text is None:
            return
        try:
            wrapper = KVConfigSerializeWrapper.from_json(text)
        except BodyError as e:
            raise ValueError(f"cannot load KV config {self.path}: {e}") from None
        self.config_table = wrapper.configTable
        log.info("loaded KV config from %s: %d namespaces", self.path, len(self.config_table))

    def snapshot(self) -> bytes:
        """The file content for the current table (pretty, as RocketMQ writes it)."""
        return orjson.dumps(KVConfigSerializeWrapper(self.config_table).to_obj(), option=orjson.OPT_INDENT_2)

    def persist(self, data: bytes | None = None) -> None:
        """Write ``data`` (default: a fresh snapshot) to the file atomically. Blocking."""
        write_file_atomic(self.path, self.snapshot() if data is None else data)

    def put(self, namespace: str, key: str, value: str) -> bytes:
        """Set a value; returns the snapshot to persist."""
        self.config_table.setdefault(namespace, {})[key] = value
        log.info("putKVConfig %s %s %s", namespace, key, value)
        return self.snapshot()

    def delete(self, namespace: str, key: str) -> bytes | None:
        """Remove a value; returns the snapshot to persist, or None if nothing changed."""
        kv = self.config_table.get(namespace)
        if kv is None or key not in kv:
            return None
        del kv[key]
        # As RocketMQ: an emptied namespace stays (it still answers GET_KVLIST with {}).
        log.info("deleteKVConfig %s %s", namespace, key)
        return self.snapshot()

    def get(self, namespace: str, key: str) -> str | None:
        kv = self.config_table.get(namespace)
        return None if kv is None else kv.get(key)

    def get_kv_list_by_namespace(self, namespace: str) -> bytes | None:
        """KVTable JSON of a namespace, or None when the namespace is unknown."""
        kv = self.config_table.get(namespace)
        if kv is None:
            return None
        return KVTable(dict(kv)).to_json()

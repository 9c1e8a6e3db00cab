"""KVTable (string map bodies) and KVConfigSerializeWrapper (the namesrv kvConfig.json)."""

from __future__ import annotations

from dataclasses import dataclass, field

from remoting.body import JsonBody

__all__ = ["KVTable", "KVConfigSerializeWrapper"]


@dataclass(slots=True)
class KVTable(JsonBody):
    """``{"table":{k:v}}``."""

    table: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class KVConfigSerializeWrapper(JsonBody):
    """``{"configTable":{namespace:{k:v}}}``: the NameServer's persisted KV config."""

    configTable: dict[str, dict[str, str]] = field(default_factory=dict)

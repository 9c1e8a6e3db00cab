"""KVTable (string map bodies) and KVConfigSerializeWrapper (the namesrv kvConfig.json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from remoting.body import JsonBody, as_dict, as_str

__all__ = ["KVTable", "KVConfigSerializeWrapper"]


def _str_map(obj: Any, name: str) -> dict[str, str]:
    return {
        str.__str__(k) if isinstance(k, str) else str(k): as_str(v, "") for k, v in as_dict(obj, name).items()
    }


@dataclass(slots=True)
class KVTable(JsonBody):
    """``{"table":{k:v}}``."""

    table: dict[str, str] = field(default_factory=dict)

    def to_obj(self) -> dict:
        return {"table": dict(self.table)}

    @classmethod
    def from_obj(cls, obj: Any) -> KVTable:
        return cls(table=_str_map(as_dict(obj, "kvTable").get("table"), "table"))


@dataclass(slots=True)
class KVConfigSerializeWrapper(JsonBody):
    """``{"configTable":{namespace:{k:v}}}``: the NameServer's persisted KV config."""

    configTable: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_obj(self) -> dict:
        return {"configTable": {ns: dict(kv) for ns, kv in self.configTable.items()}}

    @classmethod
    def from_obj(cls, obj: Any) -> KVConfigSerializeWrapper:
        table = as_dict(as_dict(obj, "kvConfig").get("configTable"), "configTable")
        return cls(
            configTable={
                str.__str__(ns) if isinstance(ns, str) else str(ns): _str_map(kv, ns)
                for ns, kv in table.items()
            }
        )

"""Persistence of the broker's JSON config files (topics.json, consumerOffset.json, ...).

RocketMQ writes them with fastjson's pretty format: tab indentation, bean
fields in alphabetical order, integer map keys bare (``{0:5,1:7\\n\\t\\t}``),
no trailing newline. :func:`pretty_json` reproduces that byte for byte so a
Java broker can take over our store directory and vice versa. Files are
written through :func:`common.util.write_file_atomic` (``.tmp`` then rename,
previous content kept as ``.bak``); loading falls back to ``.bak`` when the
main file is missing, empty or unparsable.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import orjson

from broker.errors import ConfigFileError
from common.util import write_file_atomic
from remoting import fastjson
from remoting.body.topic_config import DataVersion

if TYPE_CHECKING:
    from remoting.body import JsonBody

__all__ = ["ConfigManager", "VersionedConfigManager", "pretty_json", "ConfigFileError"]

log = logging.getLogger(__name__)


def _scalar(v: Any) -> str:
    if isinstance(v, str):
        return orjson.dumps(v).decode("utf-8")
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return orjson.dumps(v).decode("ascii")
    raise TypeError(f"cannot write {type(v).__name__}")


def _write(v: Any, depth: int, out: list[str]) -> None:
    if isinstance(v, dict):
        items = [(k, x) for k, x in v.items() if x is not None]
        if not items:
            out.append("{}")
            return
        out.append("{")
        inner = "\n" + "\t" * (depth + 1)
        first = True
        for k, x in items:
            if not first:
                out.append(",")
            first = False
            if isinstance(k, str):
                # fastjson puts string keys on their own line; non-string keys stay inline.
                out.append(inner)
                out.append(orjson.dumps(k).decode("utf-8"))
            else:
                out.append(str(k))
            out.append(":")
            _write(x, depth + 1, out)
        out.append("\n" + "\t" * depth + "}")
    elif isinstance(v, (list, tuple)):
        if not v:
            out.append("[]")
            return
        out.append("[")
        first = True
        for x in v:
            if not first:
                out.append(",")
            first = False
            out.append("\n" + "\t" * (depth + 1))
            _write(x, depth + 1, out)
        out.append("\n" + "\t" * depth + "]")
    elif hasattr(v, "to_obj"):
        _write(v.to_obj(), depth, out)
    else:
        out.append(_scalar(v))


def pretty_json(obj: Any) -> str:
    """fastjson ``toJSONString(obj, true)``: tab-indented, int keys bare, no final newline."""
    out: list[str] = []
    _write(obj, 0, out)
    return "".join(out)


class ConfigManager:
    """Base of the file-backed managers: ``encode()`` to text, ``decode(tree)`` from a parsed file."""

    def __init__(self, path: str):
        self.path = path

    def encode(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def decode(self, tree: Any) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def load(self) -> bool:
        """Load the file (or its .bak); a missing file is fine (fresh broker). False if both are corrupt."""
        last_error = None
        found = False
        for p in (self.path, self.path + ".bak"):
            try:
                with open(p, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            except OSError as e:
                last_error = e
                continue
            if not data.strip():
                continue
            found = True
            try:
                tree = fastjson.loads(data)
                self.decode(tree)
                if p != self.path:
                    log.warning("loaded %s from its backup %s", self.path, p)
                return True
            except Exception as e:  # noqa: BLE001 - any decode failure falls back to the .bak
                last_error = e
                log.warning("cannot parse %s: %s", p, e)
        if found or last_error is not None:
            log.error("config file %s and its backup are unreadable: %s", self.path, last_error)
            return False
        return True

    def persist(self) -> None:
        """Write the file atomically (previous content kept as .bak)."""
        data = self.encode()
        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            write_file_atomic(self.path, data)
        except OSError as e:  # a full disk: the request goes on, the next persist writes everything
            log.error("persist %s failed, kept in memory only: %s", self.path, e)


_V = TypeVar("_V", bound="JsonBody")


class VersionedConfigManager(ConfigManager, Generic[_V]):
    """A table file with a data version (topics.json, subscriptionGroup.json): written as
    ``{"dataVersion":..., <table_key>:{name: entry}}``; read back in the file's order (so a
    re-persist reproduces it), entries with an illegal name dropped with a warning, then the
    built-in entries the file lacks."""

    #: the table's key in the file, and what an entry is called in the warnings
    table_key: ClassVar[str]
    entry_kind: ClassVar[str]

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.table: dict[str, _V] = {}
        self.data_version = DataVersion()

    def read_file(self, tree: Any) -> tuple[DataVersion, dict[str, _V]]:  # pragma: no cover - overridden
        raise NotImplementedError

    def invalid_name(self, name: str) -> str | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def put_entry(self, name: str, value: _V) -> None:
        """Create or replace one entry (an admin's update), logged; the caller then :meth:`bump` s."""
        old = self.table.get(name)
        self.table[name] = value
        log.info("%s %s %s", "updated" if old else "created", self.entry_kind, value)

    def bump(self) -> None:
        """After a change of the table: a new data version (the NameServer and the slaves see it), then
        the file."""
        self.data_version.next_version()
        self.persist()

    def encode(self) -> str:
        return pretty_json({"dataVersion": self.data_version.to_obj(),
                            self.table_key: {k: v.to_obj() for k, v in self.table.items()}})

    def decode(self, tree: Any) -> None:
        version, loaded = self.read_file(tree)
        table: dict[str, _V] = {}
        for name, value in loaded.items():
            if self.invalid_name(name) is not None:
                log.warning("ignoring %s with an illegal name in %s: %r", self.entry_kind, self.path, name)
                continue
            table[name] = value
        for name, value in self.table.items():
            table.setdefault(name, value)
        self.table = table
        self.data_version.assign_from(version)

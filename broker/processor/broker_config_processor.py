"""GET_BROKER_CONFIG (26), UPDATE_BROKER_CONFIG (25), GET_BROKER_RUNTIME_INFO (28).

UPDATE_BROKER_CONFIG changes only the keys of the runtime allow-list
(:mod:`broker.runtime_config`): never a path, a port, an address clients are sent to, a security
switch or anything that could run a program (CVE-2023-33246). A request naming any other key is
refused as a whole with NO_PERMISSION naming the keys, and nothing is applied.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import time
import typing
from collections.abc import Callable, Sequence
from typing import Any

from broker.broker_stats_manager import BrokerStatsManager
from broker.config import BrokerConfig, NettyClientConfig, NettyServerConfig
from broker.role_state import RoleState
from broker.runtime_config import RUNTIME_UPDATABLE_KEYS
from common.config import (
    ConfigError,
    format_properties,
    has_line_break,
    parse_properties,
    parse_value,
    to_properties,
)
from common.util import now_ms, write_file_atomic
from remoting import fastjson
from remoting.body.kv import KVTable
from remoting.body.topic_config import DataVersion
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header.broker import ViewBrokerStatsDataRequestHeader
from store.config import MessageStoreConfig
from store.message_store import MessageStore

__all__ = ["BrokerConfigProcessor", "BROKER_VERSION", "BROKER_VERSION_DESC"]

log = logging.getLogger(__name__)

BROKER_VERSION = 407
BROKER_VERSION_DESC = "V4_9_7"


class BrokerConfigProcessor:
    """Config read/update and runtime info over the wire."""

    def __init__(
        self,
        configs: Sequence[BrokerConfig | NettyServerConfig | NettyClientConfig | MessageStoreConfig],
        store: MessageStore,
        stats: BrokerStatsManager,
        *,
        config_file: str | None = None,
        on_update: Callable[[dict[str, Any]], None] | None = None,
        store_root: str = "",
        runtime_extra: Callable[[], dict[str, str]] | None = None,
        boot_timestamp: int | None = None,
        queue_stats: Callable[[], dict[str, str]] | None = None,
        role: RoleState | None = None,
    ):
        self.configs = configs
        #: the live role: getBrokerConfig shows it (the configs and the file keep the configured one)
        self.role = role
        self.store = store
        self.stats = stats
        self.config_file = config_file
        self.on_update = on_update
        self.store_root = store_root
        self.runtime_extra = runtime_extra
        self.queue_stats = queue_stats  # the request backlogs, in place of 4.9.7's thread-pool queues
        self.data_version = DataVersion()
        self.boot_timestamp = boot_timestamp or now_ms()

    def get_broker_config(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        props = to_properties(*self.configs)
        if self.role is not None:
            props["brokerRole"] = self.role.broker_role.name
            props["brokerId"] = str(self.role.broker_id)
        text = format_properties(props)
        resp = req.response_to(ResponseCode.SUCCESS, body=text.encode("utf-8"))
        resp.add_ext_field("version", self.data_version.to_json().decode())
        return resp

    def _owner(self, key: str) -> tuple[Any, dataclasses.Field, Any] | None:
        for c in self.configs:
            for f in dataclasses.fields(c):
                if f.name == key:
                    return c, f, typing.get_type_hints(type(c))[key]
        return None

    def update_broker_config(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        try:
            props = parse_properties((req.body or b"").decode("utf-8"))
        except UnicodeDecodeError:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "config body is not UTF-8")
        if not props:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "string2Properties error: no properties in the body")
        forbidden = []
        unknown = []
        plan = []
        for key, raw in props.items():
            if has_line_break(raw) or has_line_break(key):
                # The values are written back to the -c file: a line break would smuggle in another key.
                return req.response_to(ResponseCode.SYSTEM_ERROR, f"the value of config key {key} contains a line break")
            owner = self._owner(key)
            if owner is None:
                unknown.append(key)
                continue
            cfg_obj, f, typ = owner
            if key not in RUNTIME_UPDATABLE_KEYS or not f.metadata.get("wire", True):
                forbidden.append(key)
                continue
            plan.append((cfg_obj, key, typ, raw))
        if forbidden:
            log.warning("refused UPDATE_BROKER_CONFIG of %s from %s", forbidden, conn.remote_addr)
            return req.response_to(
                ResponseCode.NO_PERMISSION,
                "Can not update config in black list: " + ", ".join(sorted(forbidden))
                + " (only the broker's runtime allow-list of tuning keys can change while it runs)",
            )
        if unknown:
            return req.response_to(ResponseCode.SYSTEM_ERROR, "unknown config keys: " + ", ".join(sorted(unknown)))
        parsed = []
        try:
            for cfg_obj, key, typ, raw in plan:
                parsed.append((cfg_obj, key, parse_value(key, typ, raw)))
        except ConfigError as e:
            return req.response_to(ResponseCode.SYSTEM_ERROR, str(e))
        changed = {}
        for cfg_obj, key, value in parsed:
            setattr(cfg_obj, key, value)
            changed[key] = value
        self.data_version.next_version()
        log.info("broker config updated from %s: %s", conn.remote_addr, changed)
        self._persist()
        if self.on_update is not None:
            self.on_update(changed)
        return req.response_to(ResponseCode.SUCCESS)

    def _persist(self) -> None:
        if not self.config_file:
            return
        try:
            write_file_atomic(self.config_file, format_properties(to_properties(*self.configs)))
        except OSError as e:
            log.error("cannot persist the broker config to %s: %s", self.config_file, e)

    def view_broker_stats_data(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        """VIEW_BROKER_STATS_DATA (315): minute/hour/day stats of one item."""

        h = req.decode_header(ViewBrokerStatsDataRequestHeader)
        item = self.stats.get_item(h.statsName, h.statsKey)
        if item is None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"The stats <{h.statsName}> <{h.statsKey}> not exist")
        body = {
            "statsDay": item.day_stats().to_obj(),
            "statsHour": item.hour_stats().to_obj(),
            "statsMinute": item.minute_stats().to_obj(),
        }
        return req.response_to(ResponseCode.SUCCESS, body=fastjson.dumps(body))

    def get_runtime_info(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        return req.response_to(ResponseCode.SUCCESS, body=KVTable(table=self.runtime_info()).to_json())

    def runtime_info(self) -> dict[str, str]:
        t: dict[str, str] = {}
        try:
            t.update({k: str(v) for k, v in self.store.runtime_info().items()})
        except Exception:  # noqa: BLE001
            log.exception("store runtime info failed")
        s = self.stats
        s.roll_day()
        t["brokerVersionDesc"] = BROKER_VERSION_DESC
        t["brokerVersion"] = str(BROKER_VERSION)
        t["msgPutTotalYesterdayMorning"] = str(s.put_total_yesterday_morning)
        t["msgPutTotalTodayMorning"] = str(s.put_total_today_morning)
        t["msgPutTotalTodayNow"] = str(s.put_total)
        t["msgGetTotalYesterdayMorning"] = str(s.get_total_yesterday_morning)
        t["msgGetTotalTodayMorning"] = str(s.get_total_today_morning)
        t["msgGetTotalTodayNow"] = str(s.get_total)
        for pool, cap in (
            ("sendThreadPoolQueue", 10000),
            ("pullThreadPoolQueue", 100000),
            ("queryThreadPoolQueue", 20000),
        ):
            t[pool + "Size"] = "0"
            t[pool + "Capacity"] = str(cap)
            t[pool + "HeadWaitTimeMills"] = "0"
        if self.queue_stats is not None:
            t.update(self.queue_stats())
        t["EndTransactionQueueSize"] = "0"
        t["EndTransactionThreadPoolQueueCapacity"] = "100000"
        t.setdefault("dispatchBehindBytes", "0")
        t.setdefault("pageCacheLockTimeMills", "0")
        t.setdefault("putTps", f"{s.put_tps():.2f}")
        t.setdefault("getTotalTps", f"{s.get_tps():.2f}")
        # Messages handed to consumers per second: mqadmin clusterList's OutTPS column.
        t.setdefault("getTransferedTps", f"{s.get_tps():.2f}")
        t.setdefault("bootTimestamp", str(self.boot_timestamp))
        t.setdefault("runtime", _runtime_text(self.boot_timestamp))
        t.setdefault("earliestMessageTimeStamp", "0")
        t.setdefault("remainTransientStoreBufferNumbs", "0")
        t.setdefault("remainHowManyDataToFlush", "0")
        if self.store_root:
            try:
                root = self.store_root if os.path.exists(self.store_root) else os.path.dirname(self.store_root) or "."
                du = shutil.disk_usage(root)
                t["commitLogDirCapacity"] = f"Total : {_human(du.total)}, Free : {_human(du.free)}."
            except OSError:
                pass
        if self.runtime_extra is not None:
            t.update(self.runtime_extra())
        return t


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


def _runtime_text(boot_ms: int) -> str:
    secs = max(0, int(time.time() - boot_ms / 1000))
    days, rem = divmod(secs, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    return f"[ {days} days, {hours} hours, {minutes} minutes, {secs} seconds ]"

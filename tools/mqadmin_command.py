"""The command registry of mqadmin and the helpers its command modules share.

tools/mqadmin.py and the add-on modules (tools/mqadmin_*.py) register their commands here with
:func:`command` / :func:`data_command`; mqadmin builds its parser from :data:`COMMANDS`. Keeping
the registry apart lets the add-ons import it without importing mqadmin itself (no import cycle).
"""

from __future__ import annotations

import argparse
import datetime
import json
from collections.abc import Awaitable, Callable

from client.admin_ext import MQAdminExt as MQAdmin
from client.exceptions import MQClientError
from common.message import MessageConst, MessageExt
from common.topic_validator import check_topic, validate_group
from common.util import time_millis_to_human_string2

__all__ = ["COMMANDS", "JSON_DATA", "Command", "UsageError", "command", "data_command", "fmt_time",
           "print_msg", "parse_reset_timestamp"]


Command = Callable[[MQAdmin, argparse.Namespace], Awaitable[None]]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Command]] = {}
# --json: command name -> coroutine returning the command's data (client.admin_ops' plain data)
JSON_DATA: dict[str, Callable[[MQAdmin, argparse.Namespace], Awaitable[object]]] = {}


class UsageError(Exception):
    """Bad or missing options (exit status 2)."""


def command(name: str, help_text: str, setup: Callable[[argparse.ArgumentParser], None]):
    def deco(fn: Command) -> Command:
        COMMANDS[name] = (help_text, setup, fn)
        return fn

    return deco


def data_command(name: str, help_text: str, setup: Callable[[argparse.ArgumentParser], None],
                 printer: Callable[[argparse.Namespace, object], None]):
    """Register a command whose coroutine returns data: ``printer`` prints it as text, ``--json`` as JSON."""

    def deco(fn: Callable[[MQAdmin, argparse.Namespace], Awaitable[object]]):
        JSON_DATA[name] = fn

        async def text(admin, args) -> None:
            printer(args, await fn(admin, args))

        COMMANDS[name] = (help_text, setup, text)
        return fn

    return deco


def _bool(v: str) -> bool:
    if v.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {v!r}")
    return v.lower() == "true"


def fmt_time(ms: int) -> str:
    """Java UtilAll.timeMillisToHumanString2: ``yyyy-MM-dd HH:mm:ss,SSS``."""
    return time_millis_to_human_string2(ms) if ms > 0 else "-"


def _topic(v: str) -> str:
    err = check_topic(v)
    if err:
        raise UsageError(err)
    return v


def _group(v: str) -> str:
    err = validate_group(v)
    if err:
        raise UsageError(err)
    return v


async def _target_addrs(admin: MQAdmin, args, need_one: bool = True) -> list[str]:
    """Addresses from ``-b brokerAddr`` or every master of ``-c cluster``."""
    if getattr(args, "brokerAddr", None):
        return [args.brokerAddr]
    if getattr(args, "clusterName", None):
        addrs = list((await admin.cluster_master_addrs(args.clusterName)).values())
        if not addrs and need_one:
            raise MQClientError(f"no master broker in cluster {args.clusterName}")
        return addrs
    raise UsageError("one of -b brokerAddr or -c clusterName is required")


def print_msg(m: MessageExt, msg_id: str | None = None) -> None:
    """One message as the Java tool's printMsg does (key/value rows)."""
    rows = [
        ("OffsetID:", m.msg_id),
        ("Topic:", m.topic),
        ("Tags:", f"[{m.properties.get(MessageConst.TAGS, '')}]"),
        ("Keys:", f"[{m.properties.get(MessageConst.KEYS, '')}]"),
        ("Queue ID:", str(m.queue_id)),
        ("Queue Offset:", str(m.queue_offset)),
        ("CommitLog Offset:", str(m.commit_log_offset)),
        ("Reconsume Times:", str(m.reconsume_times)),
        ("Born Timestamp:", fmt_time(m.born_timestamp)),
        ("Store Timestamp:", fmt_time(m.store_timestamp)),
        ("Born Host:", f"{m.born_host[0]}:{m.born_host[1]}"),
        ("Store Host:", f"{m.store_host[0]}:{m.store_host[1]}"),
        ("System Flag:", str(m.sys_flag)),
        ("Properties:", json.dumps(m.properties, ensure_ascii=False)),
        ("Message Body:", m.body.decode("utf-8", errors="replace")),
    ]
    if msg_id:
        rows.insert(0, ("MsgId:", msg_id))
    for k, v in rows:
        print(f"{k:<20s} {v}")


def parse_reset_timestamp(v: str) -> int:
    """``now`` (-1: max offset), epoch ms, or ``yyyy-MM-dd#HH:mm:ss:SSS``."""
    if v == "now":
        return -1
    if v.lstrip("-").isdigit():
        return int(v)
    try:
        dt = datetime.datetime.strptime(v, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        raise UsageError(f"bad timestamp {v!r}: want now, milliseconds or yyyy-MM-dd#HH:mm:ss:SSS") from None
    return int(dt.timestamp() * 1000)

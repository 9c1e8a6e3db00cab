"""Rows of the connector's DataFrames: the schemas and MessageExt -> tuple.

Kept free of pyspark imports (schemas are DDL strings), so tasks build rows
without touching Spark's type objects per message.
"""

from __future__ import annotations

import datetime as _dt

from common.message import MessageConst, MessageExt

__all__ = ["TOPIC_SCHEMA", "STORE_SCHEMA", "topic_row", "store_row", "ms_to_datetime"]

TOPIC_SCHEMA = (
    "topic string, broker string, queueId int, queueOffset long, msgId string, tags string, "
    "keys array<string>, body binary, bornTimestamp timestamp, storeTimestamp timestamp, bornHost string, "
    "reconsumeTimes int, properties map<string,string>"
)
STORE_SCHEMA = TOPIC_SCHEMA + ", physicalOffset long, sysFlag int, bodyCRC int, crcOk boolean"

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MS = _dt.timedelta(milliseconds=1)


def ms_to_datetime(ms: int) -> _dt.datetime:
    """Epoch milliseconds as an aware UTC datetime (exact: no float rounding)."""
    return _EPOCH + ms * _MS


def _host(h: tuple[str, int]) -> str:
    ip, port = h
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _keys(props: dict[str, str]) -> list[str] | None:
    k = props.get(MessageConst.KEYS)
    if k is None:
        return None
    return [p for p in k.split(MessageConst.KEY_SEPARATOR) if p]


def topic_row(m: MessageExt, broker: str) -> tuple:
    """One row of TOPIC_SCHEMA (``body`` already inflated by the caller)."""
    p = m.properties
    return (
        m.topic, broker, m.queue_id, m.queue_offset, p.get(MessageConst.UNIQ_KEY) or m.msg_id,
        p.get(MessageConst.TAGS), _keys(p), m.body, ms_to_datetime(m.born_timestamp),
        ms_to_datetime(m.store_timestamp), _host(m.born_host), m.reconsume_times, p,
    )


def store_row(m: MessageExt, broker: str, crc_ok: bool, stored_crc: int) -> tuple:
    """One row of STORE_SCHEMA."""
    return (*topic_row(m, broker), m.commit_log_offset, m.sys_flag, stored_crc, crc_ok)

"""Helpers shared by the store tests: small-file configs and message factories."""

from __future__ import annotations

from pathlib import Path

from common.message import MessageExtBrokerInner, properties_to_string
from common.util import java_string_hash
from store.config import MessageStoreConfig
from store.default_message_store import DefaultMessageStore


def small_config(root: Path, **kw) -> MessageStoreConfig:
    """Small files so roll-over, deletion and recovery are cheap to exercise."""
    base = dict(
        storePathRootDir=str(root),
        mappedFileSizeCommitLog=64 * 1024,
        mappedFileSizeConsumeQueue=20 * 100,
        maxIndexNum=2000,
        maxHashSlotNum=500,
    )
    base.update(kw)
    return MessageStoreConfig(**base)


def open_store(cfg: MessageStoreConfig, **kw) -> DefaultMessageStore:
    s = DefaultMessageStore(cfg, **kw)
    assert s.load()
    return s


def make_msg(topic: str = "TopicA", queue_id: int = 0, body: bytes = b"hello", *, tags: str | None = "TagA",
             keys: str | None = None, props: dict | None = None, born_host=("127.0.0.1", 40000),
             store_host=("127.0.0.1", 10911), sys_flag: int = 0, flag: int = 0) -> MessageExtBrokerInner:
    p: dict[str, str] = {}
    if tags:
        p["TAGS"] = tags
    if keys:
        p["KEYS"] = keys
    if props:
        p.update(props)
    return MessageExtBrokerInner(
        topic=topic, queue_id=queue_id, flag=flag, body=body, properties=p,
        properties_string=properties_to_string(p), tags_code=java_string_hash(tags) if tags else 0,
        sys_flag=sys_flag, born_timestamp=1_700_000_000_000, born_host=born_host, store_host=store_host,
    )

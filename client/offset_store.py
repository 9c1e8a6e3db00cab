"""Consumer offset stores: on the broker (clustering) or in a local JSON file (broadcasting).

Offsets are "next offset to consume". Both stores keep a memory table
updated as messages complete; ``persist_all`` writes it out (every 5 s and at
shutdown, driven by the client instance).
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Iterable

from common.topic_validator import validate_group
from common.util import read_file_with_bak, write_file_atomic
from remoting import RemotingError
from remoting.body import BodyError
from remoting.body.consumer import MessageQueue, ResetOffsetBody

__all__ = ["ReadOffsetType", "OffsetStore", "RemoteBrokerOffsetStore", "LocalFileOffsetStore"]

log = logging.getLogger("client")


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = 0
    READ_FROM_STORE = 1
    MEMORY_FIRST_THEN_STORE = 2


class OffsetStore:
    """Memory table shared by both stores."""

    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}

    async def load(self) -> None:
        return None

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool = False) -> None:
        old = self.table.get(mq)
        if old is None or not increase_only or offset > old:
            self.table[mq] = offset

    async def read_offset(self, mq: MessageQueue, how: ReadOffsetType) -> int:
        """-1 when unknown; -2 when the store could not be asked."""
        if how in (ReadOffsetType.READ_FROM_MEMORY, ReadOffsetType.MEMORY_FIRST_THEN_STORE):
            v = self.table.get(mq)
            if v is not None:
                return v
            if how == ReadOffsetType.READ_FROM_MEMORY:
                return -1
        return await self._read_from_store(mq)

    async def _read_from_store(self, mq: MessageQueue) -> int:
        return -1

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        return None

    async def persist(self, mq: MessageQueue) -> None:
        await self.persist_all([mq])

    def remove_offset(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)

    def clone_offset_table(self, topic: str) -> dict[MessageQueue, int]:
        return {mq: off for mq, off in self.table.items() if mq.topic == topic}


class RemoteBrokerOffsetStore(OffsetStore):
    """Clustering: offsets live on the master broker of each queue."""

    def __init__(self, instance, group: str):
        super().__init__()
        self.instance = instance
        self.group = group

    async def _broker_addr(self, mq: MessageQueue) -> str | None:
        addr, _ = self.instance.find_broker_address_in_subscribe(mq.brokerName, 0, True)
        if addr is None:
            await self.instance.update_topic_route_from_namesrv(mq.topic)
            addr, _ = self.instance.find_broker_address_in_subscribe(mq.brokerName, 0, True)
        return addr

    async def _read_from_store(self, mq: MessageQueue) -> int:
        try:
            addr = await self._broker_addr(mq)
            if addr is None:
                return -2
            off = await self.instance.api.query_consumer_offset(addr, self.group, mq)
        except (RemotingError, OSError) as e:
            log.info("query offset of %s failed: %s", mq, e)
            return -2
        except Exception as e:  # MQBrokerError: treated like Java's -2 (retry later)
            log.info("query offset of %s refused: %s", mq, e)
            return -2
        if off is None:
            return -1
        self.update_offset(mq, off)
        return off

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        for mq in list(mqs):
            off = self.table.get(mq)
            if off is None:
                continue
            try:
                addr = await self._broker_addr(mq)
                if addr is not None:
                    await self.instance.api.update_consumer_offset_oneway(addr, self.group, mq, off)
            except Exception as e:
                log.info("persist offset of %s failed: %s", mq, e)

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int) -> None:
        addr = await self._broker_addr(mq)
        if addr is not None:
            await self.instance.api.update_consumer_offset(addr, self.group, mq, offset)


def default_local_offset_dir() -> str:
    """Java's ``rocketmq.client.localOffsetStoreDir`` default: ``~/.rocketmq_offsets``."""
    return os.environ.get("rocketmq.client.localOffsetStoreDir") or os.path.join(
        os.path.expanduser("~"), ".rocketmq_offsets"
    )


def _safe_component(name: str) -> str:
    # names come from configuration and the client id; never let them escape the offsets dir
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        raise ValueError(f"unsafe path component {name!r}")
    return name


class LocalFileOffsetStore(OffsetStore):
    """Broadcasting: ``<dir>/<clientId>/<group>/offsets.json`` ({"offsetTable":{MessageQueue:offset}})."""

    def __init__(self, client_id: str, group: str, base_dir: str | None = None):
        super().__init__()
        err = validate_group(group)
        if err:
            raise ValueError(err)
        base = base_dir or default_local_offset_dir()
        self.path = os.path.join(base, _safe_component(client_id), _safe_component(group), "offsets.json")

    async def load(self) -> None:
        text = read_file_with_bak(self.path)
        if not text:
            return
        try:
            body = ResetOffsetBody.from_json(text)
        except (BodyError, ValueError) as e:
            log.warning("offset file %s unreadable: %s", self.path, e)
            return
        self.table.update(body.offsetTable)

    async def _read_from_store(self, mq: MessageQueue) -> int:
        await self.load()
        return self.table.get(mq, -1)

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        keep = set(mqs)
        table = {mq: off for mq, off in self.table.items() if mq in keep}
        if not table:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        write_file_atomic(self.path, ResetOffsetBody(offsetTable=table).to_json(standard=False).decode("utf-8"))

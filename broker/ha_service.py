"""HAService: master -> slave CommitLog replication (RocketMQ's HA protocol, spec broker-behaviour §15).

Raw TCP on ``haListenPort`` (= listenPort + 1), no remoting framing:

* slave -> master: 8-byte big-endian longs, each the slave's CommitLog max offset
  ("I have everything below this"), sent on connect, after every append that moved it
  and at least every ``haSendHeartbeatInterval``;
* master -> slave: ``int64 masterPhyOffset | int32 bodySize | body`` frames of at most
  ``haTransferBatchSize`` bytes, cut anywhere; an empty body is a heartbeat.

A slave first reporting 0 is fed from the start of the master's last CommitLog file;
a slave reporting more than the master has is disconnected. SYNC_MASTER puts wait
(:meth:`HAService.wait_for_slave`, the store's ``replica_waiter``) until a slave acked
the record's end, or answer FLUSH_SLAVE_TIMEOUT after ``slaveTimeout`` /
SLAVE_NOT_AVAILABLE when no slave is close enough.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import time

from common.util import cancel_all
from store.config import MessageStoreConfig
from store.message_store import MessageStore, PutMessageStatus

__all__ = ["HAService", "HAClient"]

log = logging.getLogger(__name__)

_OFFSET = struct.Struct(">q")
_HEADER = struct.Struct(">qi")


class _SlaveConnection:
    """Master side of one slave: reads offset reports, pushes CommitLog data."""

    def __init__(self, service: HAService, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.service = service
        self.reader = reader
        self.writer = writer
        self.addr = writer.get_extra_info("peername")
        self.slave_request_offset = -1  # first report
        self.slave_ack_offset = -1
        self.last_read = time.monotonic()
        self._reported = asyncio.Event()
        self.tasks: list[asyncio.Task] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.tasks = [loop.create_task(self._read_loop()), loop.create_task(self._write_loop())]

    async def _read_loop(self) -> None:
        svc = self.service
        try:
            while True:
                raw = await asyncio.wait_for(self.reader.readexactly(8), svc.housekeeping_s)
                off = _OFFSET.unpack(raw)[0]
                self.last_read = time.monotonic()
                self.slave_ack_offset = off
                if self.slave_request_offset < 0:
                    self.slave_request_offset = off
                    self._reported.set()
                svc.notify_ack(off)
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError, OSError) as e:
            log.info("HA slave %s disconnected (read): %s", self.addr, type(e).__name__)
        finally:
            self.close()

    async def _write_loop(self) -> None:
        svc = self.service
        store = svc.store
        try:
            await self._reported.wait()
            max_off = store.get_max_phy_offset()
            req = self.slave_request_offset
            if req > max_off:
                log.warning("HA slave %s reports offset %d beyond the master's %d: closing", self.addr, req, max_off)
                return
            if req == 0:
                size = svc.file_size
                nxt = max_off - (max_off % size) if size > 0 else 0
            else:
                nxt = req
            last_write = time.monotonic()
            while True:
                data = store.get_commit_log_data(nxt) if nxt < store.get_max_phy_offset() else None
                if data is not None and len(data) > 0:
                    chunk = data[: svc.batch_size]
                    self.writer.write(_HEADER.pack(nxt, len(chunk)))
                    self.writer.write(chunk)
                    nxt += len(chunk)
                    await self.writer.drain()
                    last_write = time.monotonic()
                    continue
                if time.monotonic() - last_write >= svc.heartbeat_s:
                    self.writer.write(_HEADER.pack(nxt, 0))
                    await self.writer.drain()
                    last_write = time.monotonic()
                await svc.wait_for_data(0.1)
        except (ConnectionError, OSError) as e:
            log.info("HA slave %s disconnected (write): %s", self.addr, type(e).__name__)
        finally:
            self.close()

    def close(self) -> None:
        if self in self.service.connections:
            self.service.connections.discard(self)
            log.info("HA connection of slave %s closed", self.addr)
        with contextlib.suppress(Exception):
            self.writer.close()
        current = asyncio.current_task()
        for t in self.tasks:
            if t is not current:
                t.cancel()


class HAService:
    """Master side (accepts slaves, SYNC_MASTER waits) plus, on a slave, the :class:`HAClient`."""

    def __init__(self, store: MessageStore, config: MessageStoreConfig, *, host: str = "0.0.0.0"):
        self.store = store
        self.config = config
        self.host = host
        self.port = config.haListenPort
        self.file_size = config.mappedFileSizeCommitLog
        self.batch_size = max(1, config.haTransferBatchSize)
        self.heartbeat_s = config.haSendHeartbeatInterval / 1000.0
        self.housekeeping_s = config.haHousekeepingInterval / 1000.0
        self.connections: set[_SlaveConnection] = set()
        self.push_to_slave_max_offset = 0
        self._server: asyncio.base_events.Server | None = None
        self._data_event: asyncio.Event | None = None
        self._waiters: list[tuple[int, asyncio.Future]] = []
        self.client: HAClient | None = None

    # -- life cycle --------------------------------------------------------------------

    async def start(self) -> None:
        self._data_event = asyncio.Event()
        try:
            self._server = await asyncio.start_server(self._on_connect, self.host, self.port, reuse_address=True)
            log.info("HA service listening on %s:%d", self.host, self.port)
        except OSError as e:
            log.error("HA port %d not available (%s): no slave can replicate from this broker", self.port, e)

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.stop()
        if self._server is not None:
            self._server.close()
            self._server = None
        for c in list(self.connections):
            c.close()
        for _end, fut in self._waiters:
            if not fut.done():
                fut.set_result(False)
        self._waiters.clear()

    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _SlaveConnection(self, reader, writer)
        self.connections.add(conn)
        log.info("HA slave connected from %s", conn.addr)
        conn.start()

    # -- master side ----------------------------------------------------------------------

    def wakeup(self) -> None:
        """New CommitLog data: let the slave writers push it now."""
        if self._data_event is not None:
            self._data_event.set()

    async def wait_for_data(self, timeout: float) -> None:
        ev = self._data_event
        if ev is None:
            await asyncio.sleep(timeout)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ev.wait(), timeout)
        ev.clear()

    def notify_ack(self, offset: int) -> None:
        if offset > self.push_to_slave_max_offset:
            self.push_to_slave_max_offset = offset
        if self._waiters:
            keep = []
            for end, fut in self._waiters:
                if offset >= end:
                    if not fut.done():
                        fut.set_result(True)
                else:
                    keep.append((end, fut))
            self._waiters = keep

    def is_slave_ok(self, master_put_where: int) -> bool:
        return bool(self.connections) and (
            master_put_where - self.push_to_slave_max_offset < self.config.haSlaveFallbehindMax
        )

    async def wait_for_slave(self, end: int) -> PutMessageStatus:
        """The store's ``replica_waiter`` for SYNC_MASTER puts."""
        if not self.is_slave_ok(end):
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        self.wakeup()
        if self.push_to_slave_max_offset >= end:
            return PutMessageStatus.PUT_OK
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append((end, fut))
        try:
            ok = await asyncio.wait_for(fut, self.config.slaveTimeout / 1000.0)
        except TimeoutError:
            ok = False
        return PutMessageStatus.PUT_OK if ok else PutMessageStatus.FLUSH_SLAVE_TIMEOUT

    # -- slave side ---------------------------------------------------------------------------

    async def stop_client(self) -> None:
        """Back to master: stop replicating from anyone."""
        if self.client is not None:
            client, self.client = self.client, None
            await client.stop()

    def update_master_address(self, addr: str | None) -> None:
        """Start (or re-point) the slave's HA client."""
        if self.client is None:
            if not addr:
                return
            self.client = HAClient(self.store, self.config)
            self.client.master_address = addr
            self.client.start()
        elif addr != self.client.master_address:
            self.client.master_address = addr
            self.client.reconnect()


class HAClient:
    """Slave side: connect to the master's HA port, append what it pushes, report the offset."""

    def __init__(self, store: MessageStore, config: MessageStoreConfig):
        self.store = store
        self.config = config
        self.master_address: str | None = None
        self._task: asyncio.Task | None = None
        self._writer: asyncio.StreamWriter | None = None
        self.connected = asyncio.Event()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def reconnect(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()

    async def stop(self) -> None:
        await cancel_all((self._task,))
        self._task = None
        self.reconnect()

    async def _run(self) -> None:
        while True:
            addr = self.master_address
            if addr:
                try:
                    await self._session(addr)
                except (ConnectionError, OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as e:
                    log.info("HA client to %s: %s", addr, e)
                finally:
                    self.connected.clear()
                    self._writer = None
            await asyncio.sleep(5.0)  # RocketMQ retries every 5 s

    async def _session(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 3.0)
        self._writer = writer
        self.connected.set()
        log.info("HA client connected to master %s", addr)
        heartbeat = self.config.haSendHeartbeatInterval / 1000.0
        reported = self.store.get_max_phy_offset()
        writer.write(_OFFSET.pack(reported))
        await writer.drain()
        last_report = time.monotonic()
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readexactly(_HEADER.size), heartbeat)
                except TimeoutError:
                    head = None
                if head is not None:
                    master_off, size = _HEADER.unpack(head)
                    body = await reader.readexactly(size) if size > 0 else b""
                    if body:
                        mine = self.store.get_max_phy_offset()
                        if mine != 0 and mine != master_off:
                            raise ValueError(f"master pushed offset {master_off} but the slave is at {mine}")
                        if not self.store.append_to_commit_log(master_off, body):
                            raise ValueError(f"appending {len(body)} bytes at {master_off} failed")
                now_max = self.store.get_max_phy_offset()
                if now_max > reported or time.monotonic() - last_report >= heartbeat:
                    writer.write(_OFFSET.pack(now_max))
                    await asyncio.wait_for(writer.drain(), self.config.haHousekeepingInterval / 1000.0)
                    reported = now_max
                    last_report = time.monotonic()
        finally:
            with contextlib.suppress(Exception):
                writer.close()

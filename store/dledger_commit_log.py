"""DLedgerCommitLog: the CommitLog of a broker with ``enableDLegerCommitLog=true``.

Spec message-and-store-format.md §12 and dledger.md §8.2, §9. Every CommitLog
record is the body of one DLedger entry (a batch gives consecutive entries);
the append hook writes ``entry pos + 48`` into the record's PHYSICALOFFSET, so
that value is the message's commit-log offset everywhere (consume queue,
msgId). The broker-visible end of the log is the DLedger *committed* position:
reads past it return nothing and the store's reput (:func:`dledger_reput_service`)
dispatches committed entries only (on every node, so followers build their own queues).

The log wraps a plain :class:`CommitLog` (``base_log``) rather than extending it: a
store that ran without DLedger keeps its old CommitLog files, and offsets below
``divided_commitlog_offset`` are read from them through ``base_log``, the rest from
the DLedger data files, whose first file starts at exactly that offset. ``base_log``'s
record encoder also writes every new record, into a buffer that becomes the entry body.

Puts: :meth:`DLedgerCommitLog.put_message_async` returns once a quorum has the
entry (or with the mapped failure status), as RocketMQ's DLedgerCommitLog does for
every put (its synchronous putMessage waits on the same append future). The
synchronous :meth:`put_message` cannot wait on an event loop: it returns as soon as
the leader appended the entry locally and replication proceeds as for any entry,
so a caller that must report the quorum outcome (delayed delivery, transactions,
send-back) has to await ``DefaultMessageStore.put_message_async`` instead.

A replicated put that fails *after* its entry was appended (the quorum wait timed
out, or the term changed) is not necessarily lost: Raft may still commit the entry
later. :meth:`DLedgerCommitLog.append_outcome` tells such a caller the entry's fate
once it is decided, so a writer that retries (the delayed-message delivery) does not
store the message twice.

The DLedger server runs DLedger's flush behaviour (``async_flush``: written entries
are flushed every ``flushFileInterval`` ms in the background, not before each
acknowledgement) and leaves the file store open when it stops: the store still reads
it and closes it in :meth:`DLedgerCommitLog.shutdown`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections import OrderedDict
from collections.abc import Callable

from common.config import ConfigError
from common.mapped_file import CreateGuard
from common.mapped_file_queue import MappedFileQueue
from common.message import BLANK_MAGIC_CODE, MessageExtBatch, MessageExtBrokerInner
from common.util import cancel_all
from dledger.config import DLedgerConfig
from dledger.entry import BODY_OFFSET
from dledger.mmap_file_store import DLedgerMmapFileStore
from dledger.protocol import DLedgerError, Role
from dledger.protocol import DLedgerResponseCode as C
from dledger.server import DLedgerServer
from store.commit_log import END_FILE_MIN_BLANK_LENGTH, CommitLog, TagsCodeCalculator, pickup_store_timestamp
from store.config import MessageStoreConfig
from store.dispatch import CommitLogDispatcher, DispatchRequest
from store.dledger_bridge import dledger_config_from_store, put_status_for
from store.dledger_leader_watch import watch_leader
from store.message_store import PutMessageResult, PutMessageStatus
from store.reput_message_service import ReputMessageService

__all__ = ["DLedgerCommitLog", "dledger_reput_service", "put_status_for", "dledger_config_from_store"]

log = logging.getLogger(__name__)

_I64 = struct.Struct(">q")
_II = struct.Struct(">ii")
_PHYS_AT = 28  # PHYSICALOFFSET inside a CommitLog record
_QQQ = struct.Struct(">qqq")  # index, term, pos of an entry header (at offset 8)
_UNCONFIRMED_MAX = 10_000


class _Scratch:
    """Stands in for a mapped file so the base encoder writes records into a buffer."""

    __slots__ = ("mm", "wrote_position", "committed_position", "file_from_offset", "file_size", "store_timestamp",
                 "warmed_to")

    def __init__(self, size: int) -> None:
        self.mm = bytearray(size)
        self.wrote_position = self.committed_position = 0
        self.file_from_offset = 0
        # the encoders keep END_FILE_MIN_BLANK_LENGTH free at a file's end: room for exactly ``size`` bytes
        self.file_size = size + END_FILE_MIN_BLANK_LENGTH
        self.warmed_to = size  # nothing to warm; the batch encoder's room check reads it
        self.store_timestamp = 0


def _patch_phys(pos: int, body: bytearray) -> None:
    """DLedger append hook: the record's commit-log offset is where its entry body starts."""
    if len(body) >= _PHYS_AT + 8:
        _I64.pack_into(body, _PHYS_AT, pos + BODY_OFFSET)


class _Put:
    """One put under way: its encoded records, the queue-offset reservation to undo on refusal, and
    the entry positions the append hook collects (the hook also stamps each record's offset)."""

    __slots__ = ("result", "records", "key", "prev", "positions")

    def __init__(self, result: PutMessageResult, records: list[bytearray], key: str, prev: int | None) -> None:
        self.result = result
        self.records = records
        self.key = key
        self.prev = prev
        self.positions: list[int] = []

    def hook(self, pos: int, body: bytearray) -> None:
        _patch_phys(pos, body)
        self.positions.append(pos)


class DLedgerCommitLog:
    """CommitLog over a DLedger group (a :class:`~store.message_store.CommitLogBackend`, as
    :class:`CommitLog` is).

    ``server`` is the :class:`~dledger.server.DLedgerServer` (created in :meth:`load`,
    started by :meth:`start`); ``role_listener(role, term, leader_id)`` may be set
    before :meth:`start` to follow DLedger role changes (the broker's handler).
    """

    #: DLedger deletes its own expired files (its deleteWhen / fileReservedHours)
    deletes_expired_files = False
    #: records are parsed back from the entries by the reput: appends leave no prepared requests
    prepared = None

    def __init__(self, config: MessageStoreConfig, tags_code: TagsCodeCalculator | None = None, *,
                 guard: CreateGuard | None = None) -> None:
        self.config = config
        self.base_log = CommitLog(config, tags_code, guard=guard, file_for=self._scratch_for)
        self.tags_code = self.base_log.tags_code
        self.storage: DLedgerMmapFileStore | None = None
        self.server: DLedgerServer | None = None
        self.dledger_config: DLedgerConfig | None = None
        self.divided_commitlog_offset = 0
        self.role_listener: Callable[[Role, int, str | None], object] | None = None
        #: peer TLS settings (remoting.tls.TlsSystemConfig); may be set before :meth:`load`
        self.tls = None
        self.reput_waker: Callable[[], None] | None = None  # set by dledger_reput_service
        self._scratch: _Scratch | None = None
        self._last_store_ts = 0
        self._committed_cache = (-2, 0)
        self._start_task: asyncio.Task | None = None
        self._watch_task: asyncio.Task | None = None
        self.fast_leader_loss = True  # see store.dledger_leader_watch
        # commit-log offset -> term of appended entries whose replicated put failed (append_outcome)
        self._unconfirmed: OrderedDict[int, int] = OrderedDict()

    # -- the plain files (base_log) ---------------------------------------------------------

    @property
    def mapped_file_queue(self) -> MappedFileQueue:
        """The files written before DLedger was enabled (none for a store that started with it)."""
        return self.base_log.mapped_file_queue

    @property
    def file_size(self) -> int:
        return self.base_log.file_size

    @property
    def topic_queue_table(self) -> dict[str, int]:
        return self.base_log.topic_queue_table

    @topic_queue_table.setter
    def topic_queue_table(self, table: dict[str, int]) -> None:
        self.base_log.topic_queue_table = table

    def roll_next_file(self, offset: int) -> int:
        return self.base_log.roll_next_file(offset)

    def check_message_and_return_size(self, mv, pos: int, base_offset: int, check_crc: bool = False,
                                      strict: bool = False) -> DispatchRequest:
        return self.base_log.check_message_and_return_size(mv, pos, base_offset, check_crc, strict)

    def enable_prepared_dispatch(self, capacity: int = 0) -> None:
        """Nothing to enable: see :attr:`prepared`."""

    def msg_id_prefix(self, store_host: tuple[str, int]) -> str:
        return self.base_log.msg_id_prefix(store_host)

    # -- life cycle -----------------------------------------------------------------

    def load(self) -> bool:
        if not self.base_log.load():
            return False
        legacy = len(self.mapped_file_queue.mapped_files) > 0
        self.dledger_config = cfg = dledger_config_from_store(self.config, legacy)
        try:
            cfg.check_timing()
        except ConfigError as e:
            log.error("cannot start the DLedger commit log: %s", e)
            return False
        try:
            self.storage = DLedgerMmapFileStore(
                cfg.default_path(),
                data_file_size=cfg.mappedFileSizeForEntryData,
                index_file_size=cfg.mappedFileSizeForEntryIndex,
                data_path=cfg.dataStorePath or None,
                guard=self.mapped_file_queue.guard,  # the store's: a data file must leave the 10 % headroom
            )
        except DLedgerError as e:
            log.error("cannot load the DLedger store: %s", e)
            return False
        self.server = DLedgerServer(
            cfg,
            storage=self.storage,
            on_role_change=self._on_role_change,
            on_commit_index=self._on_committed,
            # peers compare it before one of them becomes master (broker/dledger_divided_offset_check.py)
            metadata_extra=self._metadata_extra,
            async_flush=True,  # DLedger's FlushDataService: flushed every flushFileInterval ms
            tls=self.tls,
        )
        return True

    def start(self) -> None:
        """Start the DLedger member (its own port from ``dLegerPeers``) on the running loop."""
        if self._start_task is None:
            loop = asyncio.get_running_loop()
            self._start_task = loop.create_task(self._start_server(), name="dledger-start")
            peers = self.dledger_config.peer_map()
            if self.fast_leader_loss and len(peers) > 1:
                self._watch_task = loop.create_task(watch_leader(self.server, peers, self.dledger_config.selfId),
                                                    name="dledger-leader-watch")

    async def _start_server(self) -> None:
        try:
            await self.server.start()
        except Exception:
            log.exception("DLedger server %s did not start", self.dledger_config.selfId)
            raise

    async def stop(self) -> None:
        """Stop the DLedger member (network, timers; it flushes the files but leaves them open
        for the store until :meth:`shutdown`)."""
        if self._start_task is None:
            return
        await cancel_all((self._watch_task,))
        with contextlib.suppress(Exception):
            await self._start_task
        if self.server.core is not None:
            await self.server.stop()

    def shutdown(self) -> None:
        self.base_log.shutdown()
        if self.storage is not None:
            self.storage.close()  # the server stopped without closing it (the reput read it until now)

    def destroy(self) -> None:
        self.base_log.destroy()
        if self.storage is not None:
            self.storage.data.destroy()
            self.storage.index.destroy()

    def runtime_extra(self) -> dict[str, str]:
        core = self.server.core if self.server is not None else None
        if core is None:
            return {}
        ms = core.member_state
        return {"dLedgerGroup": self.dledger_config.group, "dLedgerSelfId": core.self_id,
                "dLedgerRole": core.role.name, "dLedgerTerm": str(core.term), "dLedgerLeader": core.leader_id or "",
                "dLedgerCommittedIndex": str(ms.committed_index), "dLedgerEndIndex": str(ms.ledger_end_index),
                "dLedgerCommitLag": str(max(0, ms.ledger_end_index - ms.committed_index))}

    def _on_role_change(self, role: Role, term: int, leader_id: str | None):
        log.info("DLedger %s: role %s term %d leader %s", self.dledger_config.selfId, role.value, term, leader_id)
        if self.role_listener is not None:
            return self.role_listener(role, term, leader_id)
        return None

    def _metadata_extra(self) -> dict:
        """``dividedCommitlogOffset`` while nothing is committed in this member's DLedger log (an
        upgrade not done yet): once the group commits, Raft keeps the logs alike, and the value would
        only differ as legacy files expire at different times on different members."""
        st = self.storage
        if st is None or st.committed_index >= 0:
            return {}
        return {"dividedCommitlogOffset": self.divided_commitlog_offset}

    def _on_committed(self, _index: int) -> None:
        if self.reput_waker is not None:
            self.reput_waker()

    # -- DLedger state -----------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        s = self.server
        return s is not None and s.core is not None and s.is_leader

    def ledger_end_index(self) -> int:
        return self.storage.ledger_end_index

    def committed_index(self) -> int:
        return self.storage.committed_index

    def _committed_end(self) -> int:
        st = self.storage
        if st is None:
            return -1
        ci = st.committed_index
        if self._committed_cache[0] != ci:
            e = st.get(ci) if ci >= 0 else None
            self._committed_cache = (ci, e.pos + e.size if e is not None else -1)
        return self._committed_cache[1]

    # -- offsets -------------------------------------------------------------------------

    def get_min_offset(self) -> int:
        first = self.base_log.get_min_offset()
        if first >= 0:
            return first
        d = self.storage.data.get_first_mapped_file() if self.storage is not None else None
        return d.file_from_offset if d is not None else -1

    def get_max_offset(self) -> int:
        """The committed end: nothing beyond it is visible to the store."""
        return max(self.divided_commitlog_offset, self._committed_end())

    def max_written_offset(self) -> int:
        """End of what this node has written (committed or not)."""
        if self.storage is None or not self.storage.data.mapped_files:
            return self.divided_commitlog_offset
        return max(self.divided_commitlog_offset, self.storage.data.get_max_offset())

    @property
    def flushed_where(self) -> int:
        return self.get_max_offset()  # DLedger flushes its own files every few ms

    @property
    def store_timestamp(self) -> int:
        return self._last_store_ts or self.base_log.store_timestamp

    def flush_until(self, target: int) -> int:
        return max(target, self.get_max_offset())

    def flush(self, least_pages: int = 0) -> bool:
        return True

    # -- append -------------------------------------------------------------------------------

    def _scratch_for(self, total: int):
        """base_log's file for the next ``total`` bytes: a buffer (see _encode)."""
        self._scratch = _Scratch(total)
        return self._scratch

    def _encode(self, msg, batch: bool) -> tuple[PutMessageResult, list[bytearray]]:
        """Serialize ``msg`` into records with the base encoder (queue offsets assigned)."""
        self._scratch = None
        result = self.base_log.put_messages(msg) if batch else self.base_log.put_message(msg)
        scratch, self._scratch = self._scratch, None
        if not result.is_ok() or scratch is None:
            return result, []
        buf = scratch.mm
        if _II.unpack_from(buf, 0)[0] == len(buf):
            records = [buf]  # a single record: the scratch buffer is it (the usual case)
        else:
            records = []
            p = 0
            while p < len(buf):
                size = _II.unpack_from(buf, p)[0]
                records.append(buf[p : p + size])
                p += size
        self._last_store_ts = result.append_result.store_timestamp
        return result, records

    def _refuse(self, code: int, key: str, prev: int | None, appended: int, first_qoff: int) -> None:
        """Undo the queue-offset reservation of the records that never became entries."""
        if appended:
            self.topic_queue_table[key] = first_qoff + appended
        elif prev is None:
            self.topic_queue_table.pop(key, None)
        else:
            self.topic_queue_table[key] = prev

    def _finish(self, result: PutMessageResult, positions: list[int], store_host, msg) -> None:
        ar = result.append_result
        first = positions[0] + BODY_OFFSET
        ar.wrote_offset = first
        prefix = self.base_log.msg_id_prefix(store_host)
        if len(positions) == 1:
            ar.msg_id = f"{prefix}{first:016X}"
        else:
            ar.msg_id = ",".join([f"{prefix}{p + BODY_OFFSET:016X}" for p in positions])
        msg.commit_log_offset = first

    def _begin(self, msg, batch: bool) -> PutMessageResult | _Put:
        """Checks, encoding and queue-offset reservation shared by the puts: a refusal or the put."""
        if self.server is None or self.server.core is None:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, remark="DLedger is not started")
        if not self.server.is_leader:
            # DLedger's handleAppend cannot start (pos -1): OS_PAGECACHE_BUSY, as RocketMQ answers
            return PutMessageResult(PutMessageStatus.OS_PAGECACHE_BUSY,
                                    remark=f"not the DLedger leader (leader is {self.server.leader_id})")
        key = f"{msg.topic}-{msg.queue_id}"
        prev = self.topic_queue_table.get(key)
        result, records = self._encode(msg, batch)
        if not result.is_ok():
            return result
        return _Put(result, records, key, prev)

    def _failed_start(self, e: DLedgerError, msg, put: _Put) -> PutMessageResult:
        result, positions = put.result, put.positions
        self._refuse(e.code, put.key, put.prev, len(positions), result.append_result.logics_offset)
        if not positions:
            # a full disk is SERVICE_NOT_AVAILABLE (RocketMQ's disk-full answer), not "busy"
            status = PutMessageStatus.SERVICE_NOT_AVAILABLE if e.code == C.DISK_FULL else PutMessageStatus.OS_PAGECACHE_BUSY
            return PutMessageResult(status, remark=f"DLedger append: {e}")
        # part of a batch went in before the leader refused the rest: report what is stored
        result.append_result.msg_num = len(positions)
        self._finish(result, positions, msg.store_host, msg)
        return result

    def put_message(self, msg: MessageExtBrokerInner, now: int = 0) -> PutMessageResult:
        """Append without waiting for the quorum (internal writers); PUT_OK once the leader has it.
        (``now`` is not used: the store time is stamped when the record is encoded.)"""
        return self._put_nowait(msg, False)

    def put_message_list(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]:
        return [self._put_nowait(m, False) for m in msgs]

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        return self._put_nowait(batch, True)

    def _put_nowait(self, msg, batch: bool) -> PutMessageResult:
        put = self._begin(msg, batch)
        if isinstance(put, PutMessageResult):
            return put
        core = self.server.core
        try:
            for rec in put.records:
                core.propose(rec, put.hook, track=False)  # nobody waits (see put_message)
        except DLedgerError as e:
            return self._failed_start(e, msg, put)
        self._finish(put.result, put.positions, msg.store_host, msg)
        return put.result

    async def put_message_async(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Append and wait until a quorum has it (status mapped per dledger.md §8.2)."""
        return await self._put_replicated(msg, False)

    async def put_messages_async(self, batch: MessageExtBatch) -> PutMessageResult:
        return await self._put_replicated(batch, True)

    async def _put_replicated(self, msg, batch: bool) -> PutMessageResult:
        put = self._begin(msg, batch)
        if isinstance(put, PutMessageResult):
            return put
        result, records, positions = put.result, put.records, put.positions
        core = self.server.core
        term = core.term
        try:
            for rec in records[:-1]:
                core.propose(rec, put.hook, track=False)
            # server.append proposes synchronously, then waits: the whole batch goes in this turn and
            # the commit of its last entry commits all of them
            await self.server.append(records[-1], put.hook)
        except DLedgerError as e:
            if len(positions) < len(records):
                return self._failed_start(e, msg, put)
            self._finish(result, positions, msg.store_host, msg)
            result.status = put_status_for(e.code)
            result.remark = f"DLedger append: {e}"
            self._remember_unconfirmed(positions[-1] + BODY_OFFSET, term)
            return result
        self._finish(result, positions, msg.store_host, msg)
        return result

    async def put_message_list_async(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]:
        """Append single messages in list order and wait once, for the last entry's quorum.

        Each message gets its own result, as :meth:`put_message_async` would give it (a message
        refused before it was appended fails alone; the others go in with consecutive queue
        offsets). One future for the list instead of one wait per message: committing the last
        entry commits every earlier one of the same term; when the last one fails, each earlier
        entry is checked against the committed index.
        """
        results: list[PutMessageResult] = []
        appended: list[tuple[int, PutMessageResult, list[int], MessageExtBrokerInner, int]] = []
        last = None
        for msg in msgs:
            put = self._begin(msg, False)
            if isinstance(put, PutMessageResult):
                results.append(put)
                continue
            core = self.server.core
            term = core.term
            try:
                for rec in put.records:
                    last = core.propose(rec, put.hook, track=False)
            except DLedgerError as e:
                results.append(self._failed_start(e, msg, put))
                continue
            self._finish(put.result, put.positions, msg.store_host, msg)
            results.append(put.result)
            appended.append((last.index, put.result, put.positions, msg, term))
        if not appended:
            return results
        try:
            await self.server.wait_committed(last)
            return results
        except DLedgerError as e:
            failure = e
        core = self.server.core
        committed = core.committed_index if core is not None else -1
        for index, result, positions, _msg, term in appended:
            e_ = self.storage.get(index) if index <= committed else None
            if e_ is not None and e_.term == term and e_.pos == positions[-1]:
                continue  # committed before the failure
            result.status = put_status_for(failure.code)
            result.remark = f"DLedger append: {failure}"
            self._remember_unconfirmed(positions[-1] + BODY_OFFSET, term)
        return results

    def _remember_unconfirmed(self, offset: int, term: int) -> None:
        u = self._unconfirmed
        u[offset] = term
        while len(u) > _UNCONFIRMED_MAX:
            u.popitem(last=False)

    def append_outcome(self, offset: int) -> bool | None:
        """Fate of the message at commit-log ``offset`` whose replicated put reported a failure.

        True: its entry is committed (the message is stored; do not put it again).
        False: it is not stored and never will be (its entry was replaced by another
        leader's, or no entry was appended for it): put it again.
        None: not decided yet (nothing is committed at that position so far): ask later.
        Deciding is final: an answer other than None forgets ``offset``.
        """
        term = self._unconfirmed.get(offset)
        if term is None or self.storage is None:
            return False
        pos = offset - BODY_OFFSET
        if self.get_max_offset() <= pos:
            return None
        mine = False
        head = self.storage.select_data(pos, BODY_OFFSET)
        if head is not None:
            try:
                index, e_term, e_pos = _QQQ.unpack_from(head, 8)
            finally:
                head.release()
            try:
                e = self.storage.get(index) if e_pos == pos and e_term == term and index >= 0 else None
            except DLedgerError:
                e = None  # the bytes at pos are not an entry header (the log was rewritten)
            mine = e is not None and e.pos == pos and e.term == term
        del self._unconfirmed[offset]
        return mine

    def append_data(self, start_offset: int, data) -> bool:
        return False  # DLedger replicates by itself (no HA)

    # -- read -----------------------------------------------------------------------------------

    def get_message(self, offset: int, size: int) -> memoryview | None:
        if offset + size > self.get_max_offset():
            return None
        if offset < self.divided_commitlog_offset:
            return self.base_log.get_message(offset, size)
        return self.storage.select_data(offset, size)

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        return pickup_store_timestamp(self, offset, size)

    def get_data(self, offset: int, return_first_on_not_found: bool = False) -> memoryview | None:
        """Readable bytes from ``offset`` to the end of its file, never past the committed end."""
        end = self.get_max_offset()
        if offset >= end:
            return None
        if offset < self.divided_commitlog_offset:
            return self.base_log.get_data(offset, return_first_on_not_found)
        mv = self.storage.select_data(offset)
        if mv is not None and len(mv) > end - offset:
            mv = mv[: end - offset]
        return mv

    # -- recovery ---------------------------------------------------------------------------------

    def _divide(self) -> None:
        """Fix ``divided_commitlog_offset`` (spec §12): legacy files end where DLedger's begin."""
        legacy = self.mapped_file_queue.mapped_files
        data = self.storage.data
        if data.mapped_files:
            self.divided_commitlog_offset = data.get_first_mapped_file().file_from_offset if legacy else 0
            if legacy:
                self.divided_commitlog_offset = max(self.divided_commitlog_offset,
                                                    legacy[-1].file_from_offset + legacy[-1].file_size)
            return
        if not legacy:
            self.divided_commitlog_offset = 0
            return
        last = legacy[-1]
        wp = last.wrote_position
        if wp + 8 <= last.file_size:
            remaining = last.file_size - wp
            if _II.unpack_from(last.mm, wp)[1] != BLANK_MAGIC_CODE:
                _II.pack_into(last.mm, wp, remaining, BLANK_MAGIC_CODE)
        last.wrote_position = last.committed_position = last.file_size
        last.flush(0)
        self.divided_commitlog_offset = last.file_from_offset + last.file_size
        if data.get_last_mapped_file_or_create(self.divided_commitlog_offset) is None:
            raise OSError("cannot create the first DLedger data file")
        log.info("DLedger commit log starts at dividedCommitlogOffset %d", self.divided_commitlog_offset)

    def _recover(self, max_phy_offset_of_cq: int, truncate_cq, destroy_cq) -> int:
        if self.mapped_file_queue.mapped_files:
            self.base_log.recover_normally(0, lambda _o: None, lambda: None)
        self._divide()
        end = self.max_written_offset()
        if max_phy_offset_of_cq > end:
            log.warning("consume queues point past the DLedger log end %d: truncating", end)
            if end <= 0:
                destroy_cq()
            else:
                truncate_cq(end)
        return end

    def recover_normally(self, max_phy_offset_of_cq: int, truncate_cq, destroy_cq) -> int:
        """Legacy files recover as usual; DLedger recovered its own files when loaded."""
        return self._recover(max_phy_offset_of_cq, truncate_cq, destroy_cq)

    def recover_abnormally(self, max_phy_offset_of_cq: int, min_timestamp: int, dispatch, truncate_cq,
                           destroy_cq, needs_dispatch=None) -> int:
        """As :meth:`recover_normally`: the reput re-dispatches everything committed after the queues' end."""
        return self._recover(max_phy_offset_of_cq, truncate_cq, destroy_cq)


def dledger_reput_service(commit_log: DLedgerCommitLog, dispatchers: list[CommitLogDispatcher],
                          **kw) -> ReputMessageService:
    """The reput of a DLedger store: the classic loop over the committed entries (and the plain
    records below the divided offset), woken by each commit."""
    reput = ReputMessageService(commit_log, dispatchers, entries_from=lambda: commit_log.divided_commitlog_offset,
                                **kw)
    commit_log.reput_waker = reput.wakeup
    return reput

"""CommitLog: the append-only record log (spec message-and-store-format.md §2, §8).

Writes RocketMQ 4.9 v1 records straight into the last mapped file and reads v1
and the 5.x v2 (long topic) records, through the record primitives of
:mod:`common.speedups` (compiled, or common.record_codec's pure twin). Queue
offsets come from the in-memory ``topic-queueId → next offset`` table; PREPARED
and ROLLBACK records get queue offset 0 and do not advance it.

Crash safety: a record is written body/topic/properties first and its header
(TOTALSIZE + MAGIC) last, and recovery zeroes the bytes after the last valid
record, so a process killed mid-append leaves either a whole record or bytes
that do not parse as one. Recovery additionally rejects records whose topic or
properties contain NUL bytes (the signature of a tail cut short).

The store talks to the CommitLog only through the methods documented as
"interface" below, so a DLedger-backed log can replace it.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections import deque
from collections.abc import Callable

from common import record_codec, speedups
from common.mapped_file import CreateGuard, MappedFile
from common.mapped_file_queue import MappedFileQueue
from common.message import (
    MessageExtBatch,
    MessageExtBrokerInner,
    MessageSysFlag,
    host_to_bytes,
)
from common.record_codec import (
    BLANK_HEAD,
    BLANK_MAGIC_CODE,
    MAX_PROPERTIES_BYTES,
    MAX_TOPIC_BYTES,
    MIN_RECORD_SIZE,
    RecordTuple,
    record_length,
    store_timestamp_at,
)
from common.util import now_ms
from store import commit_log_recovery
from store.config import FlushDiskType, MessageStoreConfig
from store.dispatch import DispatchRequest
from store.flush_service import flush_until as _flush_until
from store.message_store import (
    AppendMessageResult,
    AppendMessageStatus,
    CommitLogBackend,
    PutMessageResult,
    PutMessageStatus,
)
from store.tags_code import TagsCodeCalculator

__all__ = [
    "CommitLog",
    "RECORD_V1",  # noqa: F822 - built on first access (module __getattr__)
    "RECORD_V2",  # noqa: F822
    "END_FILE_MIN_BLANK_LENGTH",
    "SCHEDULE_TOPIC",
    "TagsCodeCalculator",
    "pickup_store_timestamp",
    "record_length",
]

log = logging.getLogger(__name__)

END_FILE_MIN_BLANK_LENGTH = 8
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"

_BORN_V6 = MessageSysFlag.BORNHOST_V6
_STORE_V6 = MessageSysFlag.STOREHOSTADDRESS_V6
_TX_MASK = MessageSysFlag.TRANSACTION_MASK
_TX_PREPARED = MessageSysFlag.TRANSACTION_PREPARED_TYPE
_TX_ROLLBACK = MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
_NOT_V6 = ~(_BORN_V6 | _STORE_V6)
_APPEND_OK = AppendMessageStatus.PUT_OK
PREPARED_DISPATCH_CAPACITY = 65536
# appends by pwrite go through this much scratch (a bigger record goes through the mapping)
APPEND_SCRATCH_SIZE = 256 * 1024
# The record primitives: compiled when built, else common.record_codec's pure twin (speedups picks)
_parse_record = speedups.parse_record
# a single put's record (CRC included) in one call
_write_record = speedups.write_record
# TAGS/KEYS/UNIQ_KEY/DELAY of a single put's properties, and the NUL check, in one scan
_dispatch_props = speedups.dispatch_props
# a client batch in one call: split, properties, records, msgIds and its prepared requests
_encode_batch = speedups.encode_batch
_NO_ROOM = bytearray()  # the buffer encode_batch is given when there is no file yet (limit -1: only sizes)
# the prepared request of a single put (the compiled twin skips __init__)
_new_request = speedups.new_dispatch_request
# what speedups.put_single makes and compares against (see CommitLog.put_message)
_PUT_KIT = (MessageExtBrokerInner, MappedFile, DispatchRequest, AppendMessageResult, PutMessageResult, _APPEND_OK,
            PutMessageStatus.PUT_OK, SCHEDULE_TOPIC)

def __getattr__(name: str):
    """``RECORD_V1`` / ``RECORD_V2``: the record as construct Structs (common.record_codec builds them)."""
    if name in ("RECORD_V1", "RECORD_V2"):
        return getattr(record_codec, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_I32 = struct.Struct(">i")


def pickup_store_timestamp(log: CommitLogBackend, offset: int, size: int) -> int:
    """STORETIMESTAMP of the record at ``offset`` of ``log``; -1 when not readable."""
    if offset < log.get_min_offset():
        return -1
    mv = log.get_message(offset, size)
    if mv is None or len(mv) < 76:
        return -1
    return store_timestamp_at(mv)


def _pwrite_all(fd: int, data: memoryview, pos: int) -> None:
    """All of ``data`` at file position ``pos`` (a short write is continued)."""
    while data:
        n = os.pwrite(fd, data, pos)
        data = data[n:]
        pos += n


_INVALID = DispatchRequest(success=False, msg_size=-1)
_BLANK_REQ = DispatchRequest(success=True, msg_size=0)


class CommitLog:
    """The CommitLog of one store directory.

    Implements :class:`store.message_store.CommitLogBackend`, the whole interface the
    store uses; a DLedger-backed log (store.dledger_commit_log) implements it too,
    around one of these.
    """

    #: expired files are deleted by the store's CleanCommitLogService
    deletes_expired_files = True

    def __init__(self, config: MessageStoreConfig, tags_code: TagsCodeCalculator | None = None, *,
                 guard: CreateGuard | None = None, file_for: Callable[[int], MappedFile | None] | None = None) -> None:
        self.config = config
        # where records go when the last file cannot take them: None = the mapped files (roll, warm ahead);
        # a DLedger log encodes into a buffer of its own (store.dledger_commit_log)
        self._file_for = file_for
        # every file's blocks are reserved when it is created; ``guard`` may refuse a new file (disk nearly full)
        self.mapped_file_queue = MappedFileQueue(config.commit_log_dir, config.mappedFileSizeCommitLog, guard=guard)
        self.file_size = config.mappedFileSizeCommitLog
        self.topic_queue_table: dict[str, int] = {}
        self.tags_code = tags_code or TagsCodeCalculator(config.delay_levels_ms())
        # read-only view of the calculator's tag hash cache for the put path (misses go through tags_hash)
        self._tags_cache: dict[str, int] = self.tags_code.cache
        self._addr_cache: dict[str, bytes] = {}
        self._prefix_cache: dict[tuple[str, int], str] = {}
        self._topic_cache: dict[str, bytes] = {}
        self._key_cache: dict[str, dict[int, str]] = {}
        # Prepared dispatch: the DispatchRequests of the records appended here, oldest first,
        # for the ReputMessageService to take instead of parsing the records back. None until
        # enable_prepared_dispatch() (the store does it when its reput consumes them); bounded:
        # once full, the reput parses the records that did not fit.
        self.prepared: deque[DispatchRequest] | None = None
        self.prepared_capacity = PREPARED_DISPATCH_CAPACITY
        self.begin_time_in_lock = 0
        # fill the page cache ahead of the writer (MappedFile.warm_ahead), under SYNC_FLUSH too: the
        # file's blocks are reserved (fallocate) as unwritten extents, and the first write-back of a
        # page converts its extent, which makes the next fdatasync also write the inode's extent
        # tree (synchronously, a device round trip more per group commit). The zeros written 1 MiB
        # at a time go to disk once with one group commit, converting that MiB in one go; the
        # rounds after it write data pages only.
        self._warm = True
        # CommitLog.put_message's usual case in one call (None: the Python below takes it); tests
        # set speedups.pure.put_single here to run the general path alone, the reference
        self.put_single: Callable[..., PutMessageResult | None] = speedups.put_single
        # Client batches reach the file by pwrite, and under SYNC_FLUSH single puts too, not through
        # the mapping, which stays for reading (one page cache). A flush's write-back write-protects
        # the pages stored into through a mapping (a TLB shootdown on each CPU running the broker)
        # and the next store into each faults (ext4_page_mkwrite) on the event loop: measured, 18 %
        # of the broker's CPU per message at 16 senders under SYNC_FLUSH, and 3-8 % for batches of
        # 16 under ASYNC_FLUSH. Single puts under ASYNC_FLUSH stay on the mapping: a pwrite each
        # costs more there (+5 %) than the rare fault it saves (two flushes a second).
        self.append_by_pwrite = file_for is None
        self.singles_by_pwrite = config.flushDiskType is FlushDiskType.SYNC_FLUSH and file_for is None
        self._append_target: MappedFile | None = None  # the file _append_fd writes (the last one)
        # _append_target where single puts go by pwrite too, else None (speedups.put_single reads it)
        self._append_file: MappedFile | None = None
        self._append_fd = -1
        self._append_scratch = bytearray()

    # -- lifecycle ------------------------------------------------------------

    def load(self) -> bool:
        return self.mapped_file_queue.load()

    def start(self) -> None:
        """Nothing runs inside the log: the store's flush services flush it."""

    async def stop(self) -> None:
        """See :meth:`start`."""

    def shutdown(self) -> None:
        self._close_append_fd()
        self.mapped_file_queue.shutdown()

    def destroy(self) -> None:
        self._close_append_fd()
        self.mapped_file_queue.destroy()
        if self.prepared:
            self.prepared.clear()

    # -- offsets ----------------------------------------------------------------

    def get_min_offset(self) -> int:
        first = self.mapped_file_queue.get_first_mapped_file()
        if first is None:
            return -1
        return first.file_from_offset

    def runtime_extra(self) -> dict[str, str]:
        """Keys this CommitLog adds to the broker's runtime info (the DLedger one: its role, term, lag)."""
        return {}

    def get_max_offset(self) -> int:
        return self.mapped_file_queue.get_max_offset()

    @property
    def flushed_where(self) -> int:
        return self.mapped_file_queue.flushed_where

    @property
    def store_timestamp(self) -> int:
        """Store time of the last record known to be flushed (the checkpoint's physicMsgTimestamp)."""
        return self.mapped_file_queue.store_timestamp

    def flush_until(self, target: int) -> int:
        """Blocking: flush until the flushed offset reaches ``target``; return the flushed offset."""
        return _flush_until(self, target)

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_size - offset % self.file_size

    # -- helpers ----------------------------------------------------------------

    def _addr(self, host: str) -> bytes:
        b = self._addr_cache.get(host)
        if b is None:
            b = host_to_bytes((host, 0))
            if len(self._addr_cache) > 10000:
                self._addr_cache.clear()
            self._addr_cache[host] = b
        return b

    def _msg_id_prefix(self, store_host: tuple[str, int]) -> str:
        prefix = self._prefix_cache.get(store_host)
        if prefix is None:
            prefix = (host_to_bytes(store_host) + _I32.pack(store_host[1])).hex().upper()
            if len(self._prefix_cache) > 10_000:
                self._prefix_cache.clear()
            self._prefix_cache[store_host] = prefix
        return prefix

    def _msg_id(self, store_host: tuple[str, int], phys: int) -> str:
        return f"{self._msg_id_prefix(store_host)}{phys:016X}"

    def _last_file_for(self, total: int) -> MappedFile | None:
        """The file to append ``total`` bytes to; writes the BLANK record and rolls when needed."""
        if self._file_for is not None:
            return self._file_for(total)
        files = self.mapped_file_queue.mapped_files
        if files:
            mf = files[-1]
            end = mf.wrote_position + total
            if end + END_FILE_MIN_BLANK_LENGTH <= mf.file_size:  # the usual case: room in the last file
                if end > mf.warmed_to and self._warm:
                    mf.warm_ahead(end)
                return mf
        q = self.mapped_file_queue
        mf = q.get_last_mapped_file_or_create(0)
        if mf is None:
            return None
        remaining = mf.file_size - mf.wrote_position
        if total + END_FILE_MIN_BLANK_LENGTH > remaining:
            BLANK_HEAD.pack_into(mf.mm, mf.wrote_position, remaining, BLANK_MAGIC_CODE)
            mf.wrote_position = mf.committed_position = mf.file_size
            mf = q.get_last_mapped_file_or_create(0)
        if mf is not None and self._warm:
            mf.warm_ahead(mf.wrote_position + total)
        return mf

    def _no_file(self) -> PutMessageResult:
        """The answer when no file can take the record: a full disk refuses the put (the store
        is marked disk-full by the guard); any other failure is RocketMQ's CREATE_MAPEDFILE_FAILED."""
        if self.mapped_file_queue.create_refused_disk_full:
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE, None,
                                    "the broker's disk is full: no room for a new commit log file")
        return PutMessageResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED, None, "create mapped file failed")

    def _topic_bytes(self, topic: str) -> bytes | None:
        """The encoded topic, cached; None when its length is not 1..127 bytes."""
        b = topic.encode("utf-8")
        if not 0 < len(b) <= MAX_TOPIC_BYTES:
            return None
        if len(self._topic_cache) > 10_000:
            self._topic_cache.clear()
        self._topic_cache[topic] = b
        return b

    def _queue_key(self, topic: str, queue_id: int) -> str:
        """``topic-queueId``, the key of :attr:`topic_queue_table` (cached per topic and queue)."""
        per_topic = self._key_cache.get(topic)
        if per_topic is None:
            if len(self._key_cache) > 10_000:
                self._key_cache.clear()
            per_topic = self._key_cache[topic] = {}
        key = per_topic[queue_id] = f"{topic}-{queue_id}"
        return key

    # -- appends by pwrite ---------------------------------------------------------

    def _sync_append_file(self) -> None:
        """Point the pwrite appends at the last file (a descriptor of its own; reopened on a roll)."""
        files = self.mapped_file_queue.mapped_files
        mf = files[-1] if files else None
        if mf is self._append_target:
            return
        self._close_append_fd()
        if mf is None:
            return
        try:
            self._append_fd = os.open(mf.path, os.O_WRONLY | os.O_CLOEXEC)
        except OSError as e:  # appends go through the mapping instead
            log.warning("commit log %s: no descriptor to append by pwrite (%s); appending through the mapping",
                        mf.path, e)
            self.append_by_pwrite = self.singles_by_pwrite = False
            return
        self._append_target = mf
        self._append_file = mf if self.singles_by_pwrite else None
        if not self._append_scratch:
            self._append_scratch = bytearray(APPEND_SCRATCH_SIZE)

    def _close_append_fd(self) -> None:
        fd, self._append_fd, self._append_file, self._append_target = self._append_fd, -1, None, None
        if fd >= 0:
            os.close(fd)

    # -- prepared dispatch ---------------------------------------------------------

    def enable_prepared_dispatch(self, capacity: int = PREPARED_DISPATCH_CAPACITY) -> None:
        """Let appends leave their DispatchRequest for the reput (see :attr:`prepared`)."""
        self.prepared = deque()
        self.prepared_capacity = capacity

    # -- append -------------------------------------------------------------------

    def put_message_list(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]:
        """Append each message as :meth:`put_message` would, with one store timestamp for all.

        Each message gets its own result; an illegal one fails alone.
        """
        now = now_ms()
        if self.singles_by_pwrite:
            self._sync_append_file()
        put = self._put
        return [put(m, now) for m in msgs]

    def put_message(self, msg: MessageExtBrokerInner, now: int = 0) -> PutMessageResult:
        """Append one record; stamps store time (``now``, default the clock), physical and queue
        offset into ``msg``."""
        if self.singles_by_pwrite:
            self._sync_append_file()
        return self._put(msg, now or now_ms())

    def _put(self, msg: MessageExtBrokerInner, now: int) -> PutMessageResult:
        """:meth:`put_message` at store time ``now``. The compiled twin takes the usual case in one
        call (``speedups.put_single``, see :attr:`put_single`; by pwrite where the log appends so);
        what it declines, and everything under the pure twin, runs below, through the mapping."""
        done = self.put_single(self, msg, now, _PUT_KIT)
        if done is not None:
            return done
        body = msg.body
        body_len = len(body)
        if body_len > self.config.maxMessageSize:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None,
                                    f"message body size {body_len} exceeds maxMessageSize")
        topic = msg.topic
        topic_b = self._topic_cache.get(topic) or self._topic_bytes(topic)
        if topic_b is None:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "topic length must be 1..127 bytes")
        topic_len = len(topic_b)
        props_s = msg.properties_string
        if not props_s and msg.properties:
            props_b = msg.properties_bytes()
            props_s = msg.properties_string
        else:
            props_b = props_s.encode("utf-8")
        props_len = len(props_b)
        if props_len > MAX_PROPERTIES_BYTES:
            return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, None,
                                    f"properties size {props_len} exceeds 32767")
        # the dispatch fields and the NUL check (recovery's sign of a torn record) in one scan of the string
        fields = _dispatch_props(props_s)
        if fields is None:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "properties contain NUL")
        born = msg.born_host
        store = msg.store_host
        addrs = self._addr_cache
        born_a = addrs.get(born[0]) or self._addr(born[0])
        store_a = addrs.get(store[0]) or self._addr(store[0])
        sys_flag = msg.sys_flag
        if len(born_a) == 4 and len(store_a) == 4:
            sys_flag &= _NOT_V6
            total = MIN_RECORD_SIZE + body_len + topic_len + props_len
        else:
            bv6 = len(born_a) == 16
            sv6 = len(store_a) == 16
            sys_flag = (sys_flag | _BORN_V6) if bv6 else (sys_flag & ~_BORN_V6)
            sys_flag = (sys_flag | _STORE_V6) if sv6 else (sys_flag & ~_STORE_V6)
            total = MIN_RECORD_SIZE + body_len + topic_len + props_len + (12 if bv6 else 0) + (12 if sv6 else 0)
        if total + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "message larger than a commit-log file")
        # _last_file_for's usual case inlined: room in the last file, already warmed that far
        files = self.mapped_file_queue.mapped_files
        mf = files[-1] if files else None
        if (mf is None or mf.wrote_position + total + END_FILE_MIN_BLANK_LENGTH > mf.file_size
                or (mf.wrote_position + total > mf.warmed_to and self._warm)):
            mf = self._last_file_for(total)
            if mf is None:
                return self._no_file()
        tx = sys_flag & _TX_MASK
        qid = msg.queue_id
        per_topic = self._key_cache.get(topic)
        key = per_topic.get(qid) if per_topic is not None else None
        if key is None:
            key = self._queue_key(topic, qid)
        counts = tx != _TX_PREPARED and tx != _TX_ROLLBACK
        qoff = self.topic_queue_table.get(key, 0) if counts else 0
        mm = mf.mm
        pos = mf.wrote_position
        phys = mf.file_from_offset + pos
        prepared = msg.prepared_transaction_offset
        # payload first, header (TOTALSIZE/MAGIC) last: a torn append never looks whole
        _write_record(mm, pos, body, topic_b, props_b, qid, msg.flag, qoff, phys, sys_flag, msg.born_timestamp,
                      born_a, born[1], now, store_a, store[1], msg.reconsume_times, prepared, msg.body_crc)
        mf.wrote_position = mf.committed_position = pos + total
        mf.store_timestamp = now
        if counts:
            self.topic_queue_table[key] = qoff + 1
        msg.store_timestamp = now
        msg.queue_offset = qoff
        msg.commit_log_offset = phys
        msg.sys_flag = sys_flag
        queue = self.prepared
        if queue is not None and len(queue) < self.prepared_capacity:
            # (the same values parse_record finds in the record just written)
            tags, keys, uniq, delay = fields
            if delay is not None and topic == SCHEDULE_TOPIC:
                tags_code = self.tags_code.of(topic, tags, delay, now)
            elif tags:
                tags_code = self._tags_cache.get(tags)
                if tags_code is None:
                    tags_code = self.tags_code.tags_hash(tags)
            else:
                tags_code = 0
            if keys is None:
                keys = ""
            queue.append(_new_request(DispatchRequest, topic, qid, phys, total, tags_code, now, qoff, keys, uniq,
                                      sys_flag, prepared, props_s))
        prefix = self._prefix_cache.get(store) or self._msg_id_prefix(store)
        return PutMessageResult(
            PutMessageStatus.PUT_OK,
            AppendMessageResult(_APPEND_OK, phys, total, "", now, qoff, 1, 0, prefix),
        )

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """Append every message of a client batch body as consecutive records in one file."""
        tx = batch.sys_flag & _TX_MASK
        if tx != MessageSysFlag.TRANSACTION_NOT_TYPE:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "batch messages cannot be transactional")
        src = batch.body
        if len(src) > self.config.maxMessageSize:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "batch body exceeds maxMessageSize")
        if not isinstance(src, bytes):
            src = bytes(src)
        topic = batch.topic
        topic_b = self._topic_cache.get(topic) or self._topic_bytes(topic)
        if topic_b is None:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "topic length must be 1..127 bytes")
        born, store = batch.born_host, batch.store_host
        born_a, store_a = self._addr(born[0]), self._addr(store[0])
        sys_flag = batch.sys_flag
        sys_flag = (sys_flag | _BORN_V6) if len(born_a) == 16 else (sys_flag & ~_BORN_V6)
        sys_flag = (sys_flag | _STORE_V6) if len(store_a) == 16 else (sys_flag & ~_STORE_V6)
        qid = batch.queue_id
        per_topic = self._key_cache.get(topic)
        key = per_topic.get(qid) if per_topic is not None else None
        if key is None:
            key = self._queue_key(topic, qid)
        first_qoff = self.topic_queue_table.get(key, 0)
        queue = self.prepared
        # the reput's requests come with the records, except for SCHEDULE_TOPIC_XXXX (its tag code is a
        # delivery time): the reput parses those back
        cls = DispatchRequest if queue is not None and len(queue) < self.prepared_capacity and topic != SCHEDULE_TOPIC \
            else None
        prefix = self._prefix_cache.get(store) or self._msg_id_prefix(store)
        now = now_ms()
        if self.append_by_pwrite:
            self._sync_append_file()
        files = self.mapped_file_queue.mapped_files
        mf = files[-1] if files else None
        props_b = batch.properties_bytes()

        def encode(buf, pos: int, lim: int, file_base: int) -> tuple:
            return _encode_batch(buf, pos, lim, src, props_b, topic_b, qid, first_qoff, file_base, sys_flag,
                                 batch.born_timestamp, born_a, born[1], now, store_a, store[1],
                                 batch.reconsume_times, batch.prepared_transaction_offset, prefix, cls, topic)

        # split, properties, records, msgIds and dispatch requests in one call; (3, total) when the
        # records do not fit the last file's room (or its warmed part): make room, then once more
        for _ in range(2):
            via_fd = False
            if mf is None:
                mm, start, base, limit = _NO_ROOM, 0, 0, -1
            else:
                mm, start, base = mf.mm, mf.wrote_position, mf.file_from_offset
                limit = mf.file_size - END_FILE_MIN_BLANK_LENGTH - start
                if self._warm and mf.warmed_to - start < limit:
                    limit = mf.warmed_to - start
                if mf is self._append_target:  # by pwrite: encoded in the scratch, at the file's offsets
                    scratch = self._append_scratch
                    r = encode(scratch, 0, min(limit, len(scratch)), base + start)
                    via_fd = r[0] != 3 or r[1] > limit  # room in the file but not in the scratch: the mapping
            if not via_fd:
                r = encode(mm, start, limit, base)
            status = r[0]
            if status != 3:
                break
            if r[1] + END_FILE_MIN_BLANK_LENGTH > self.file_size:
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL, None, "batch larger than a commit-log file")
            mf = self._last_file_for(r[1])
            if mf is None:
                return self._no_file()
        if status:
            if status == 3:  # cannot be: _last_file_for made the room
                raise RuntimeError(f"no room for a batch of {r[1]} bytes after rolling")
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL if status == 1
                                    else PutMessageStatus.PROPERTIES_SIZE_EXCEEDED, None, r[1])
        _, end, n, msg_ids, reqs = r
        if via_fd:
            _pwrite_all(self._append_fd, memoryview(scratch)[:end], start)
            end += start
        mf.wrote_position = mf.committed_position = end
        mf.store_timestamp = now
        self.topic_queue_table[key] = first_qoff + n
        batch.store_timestamp = now
        batch.queue_offset = first_qoff
        batch.commit_log_offset = base + start
        batch.sys_flag = sys_flag
        if reqs is not None and len(queue) + n <= self.prepared_capacity:
            queue.extend(reqs)
        return PutMessageResult(
            PutMessageStatus.PUT_OK,
            AppendMessageResult(_APPEND_OK, base + start, end - start, msg_ids, now, first_qoff, n),
        )

    def append_data(self, start_offset: int, data: bytes | memoryview) -> bool:
        """Append raw CommitLog bytes at ``start_offset`` (replication); False unless it is the end."""
        if start_offset != self.get_max_offset():
            return False
        q = self.mapped_file_queue
        mv = memoryview(data)
        offset = start_offset
        while len(mv):
            mf = q.get_last_mapped_file_or_create(offset)
            if mf is None:
                return False
            if mf.file_from_offset + mf.wrote_position != offset:
                log.error("append_data: offset %d does not continue file %s", offset, mf.file_name)
                return False
            n = min(len(mv), mf.remaining())
            if self._warm and mf.wrote_position + n > mf.warmed_to:
                mf.warm_ahead(mf.wrote_position + n)
            mf.append(mv[:n])
            mv = mv[n:]
            offset += n
        return True

    async def put_message_async(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """:meth:`put_message`: the append is done at once (the flush and HA waits are the store's)."""
        return self.put_message(msg)

    async def put_messages_async(self, batch: MessageExtBatch) -> PutMessageResult:
        return self.put_messages(batch)

    async def put_message_list_async(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]:
        return self.put_message_list(msgs)

    def append_outcome(self, offset: int) -> bool | None:
        """Whether a put that reported a failure after its append stored the message: never here
        (a local append either happens or fails before any byte): put it again. Only a replicated
        log may answer True, or None (not decided yet)."""
        return False

    def msg_id_prefix(self, store_host: tuple[str, int]) -> str:
        """The hex store address of the offset msgIds (cached)."""
        return self._prefix_cache.get(store_host) or self._msg_id_prefix(store_host)

    # -- read ---------------------------------------------------------------------

    def get_message(self, offset: int, size: int) -> memoryview | None:
        """``size`` bytes at ``offset`` (one record), or None when not readable."""
        # never fall back to the first file (RocketMQ does for offset 0): the record must be in its own file
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        return mf.select(offset % self.file_size, size)

    def get_data(self, offset: int, return_first_on_not_found: bool = False) -> memoryview | None:
        """Everything readable from ``offset`` to the end of its file."""
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset, return_first_on_not_found)
        if mf is None:
            return None
        return mf.select(offset % self.file_size)

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        return pickup_store_timestamp(self, offset, size)

    # -- parsing for dispatch and recovery -------------------------------------------

    def check_message_and_return_size(self, mv, pos: int, base_offset: int, check_crc: bool = False,
                                      strict: bool = False) -> DispatchRequest:
        """Parse the record at ``pos`` of ``mv`` (a file view; ``base_offset`` = the file's start).

        Returns a DispatchRequest; ``msg_size`` 0 for BLANK, ``success`` False when
        the bytes are not a valid record. ``strict`` (recovery) also rejects NUL
        bytes in topic/properties, the trace of a record cut short.
        """
        f = _parse_record(mv, pos, strict)
        if f is None:
            return _INVALID
        if f[1] == BLANK_MAGIC_CODE:
            return _BLANK_REQ
        if check_crc:
            b = f[11]
            if (zlib.crc32(mv[b : b + f[12]]) & 0x7FFFFFFF) != f[2]:
                log.warning("body CRC mismatch at %d", base_offset + pos)
                return _INVALID
        return self.request_of(f, mv)

    def request_of(self, f: RecordTuple, mv) -> DispatchRequest:
        """The DispatchRequest of a record parse_record read from ``mv``."""
        plen = f[15]
        if plen:
            ps = f[14]
            # never fail on property bytes written elsewhere: dispatch must go on
            props_s = str(mv[ps : ps + plen], "utf-8", "replace")
        else:
            props_s = ""
        topic = f[13]
        store_ts = f[9]
        return DispatchRequest(topic, f[3], f[6], f[0], self.tags_code.of(topic, f[16], f[19], store_ts), store_ts,
                               f[5], f[17] or "", f[18], f[7], f[10], None, True, None, props_s)

    # -- recovery (store.commit_log_recovery) -------------------------------------------

    def recover_normally(self, max_phy_offset_of_cq: int, truncate_cq: Callable[[int], None],
                         destroy_cq: Callable[[], None]) -> int:
        """Normal recovery: check the last 3 files; cut after the last valid record. Returns the end offset."""
        return commit_log_recovery.recover_normally(self, max_phy_offset_of_cq, truncate_cq, destroy_cq)

    def recover_abnormally(self, max_phy_offset_of_cq: int, min_timestamp: int,
                           dispatch: Callable[[DispatchRequest], None],
                           truncate_cq: Callable[[int], None], destroy_cq: Callable[[], None],
                           needs_dispatch: Callable[[str, int, int, int, int], bool] | None = None) -> int:
        """Abnormal recovery: re-dispatch every valid record from the last file older than the checkpoint."""
        return commit_log_recovery.recover_abnormally(self, max_phy_offset_of_cq, min_timestamp, dispatch,
                                                      truncate_cq, destroy_cq, needs_dispatch)

    # -- flush / delete ----------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> bool:
        return self.mapped_file_queue.flush(least_pages)

    def delete_expired_file(self, expired_ms: int, delete_interval_ms: int, interval_forcibly_ms: int,
                            clean_immediately: bool) -> int:
        return self.mapped_file_queue.delete_expired_file_by_time(
            expired_ms, delete_interval_ms, interval_forcibly_ms, clean_immediately)


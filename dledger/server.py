"""DLedgerServer: the asyncio driver that runs one DLedgerCore for real.

It owns what the core must not: a tick timer, the remoting server and client,
the file store and the ``currterm`` file. For every Ready it persists first
(hard state; the flush of written entries unless ``async_flush``), then sends, then completes waiting
appends and calls the hooks (spec dledger.md §8 for the RPC framing: remoting
code = DLedger request code, body = fastjson of the request, response remoting
code 200 with the DLedger result in the body's ``code``).

Public API::

    server = DLedgerServer(config, on_role_change=cb, on_committed=hook, async_flush=True)
    await server.start()
    index, pos = await server.append(b"...")      # completes once committed
    e = server.core.propose(b"...", track=False); await server.wait_committed(e)  # the same, in two steps
    # peers: VOTE, HEART_BEAT, PUSH, LEADERSHIP_TRANSFER; clients: APPEND (body or batchMsgs),
    # GET, METADATA; PULL answers UNSUPPORTED (not served by DLedger either)
    code = await server.transfer_leadership("n2")
    server.leader_lost(term)                      # follower: the leader's process is gone
    await server.stop()
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import logging
import random
import shutil
import time
from collections.abc import Callable
from typing import Any

from common.util import now_ms
from dledger.config import DLedgerConfig
from dledger.core import DLedgerCore, Ready
from dledger.entry import DLedgerEntry
from dledger.flush_data_service import FileSyncer
from dledger.member_state import load_term_file, save_term_file
from dledger.metrics import DLedgerTimings
from dledger.mmap_file_store import DLedgerMmapFileStore
from dledger.protocol import (
    DLedgerError,
    HeartBeatResponse,
    LeadershipTransferResponse,
    Message,
    PushEntryResponse,
    PushType,
    RequestCode,
    Role,
    VoteResponse,
    VoteResult,
    message_from_json,
)
from dledger.protocol import (
    DLedgerResponseCode as C,
)
from dledger.push_codec import (
    BINARY_EXT,
    decode_push_request,
    decode_push_response,
    encode_entries,
    encode_push_request,
    encode_push_response,
)
from dledger.storage import AppendHook, MemoryStorage, Storage
from remoting import fastjson
from remoting.client import RemotingClient
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.server import RemotingServer
from remoting.tls import TlsSystemConfig

__all__ = ["DLedgerServer"]

log = logging.getLogger("dledger")

_RPC_TIMEOUT_S = 3.0
_CLEAN_INTERVAL_S = 10.0
_PUSHED_MAX = 256  # encoded binary pushes kept for the other followers
_CARRY_ENTRIES = (PushType.APPEND, PushType.TRUNCATE)
_PEER_CODES = (RequestCode.VOTE, RequestCode.HEART_BEAT, RequestCode.PUSH, RequestCode.LEADERSHIP_TRANSFER)


class DLedgerServer:
    """One DLedger member on an asyncio loop.

    ``on_commit_index(index)`` is told the new committed index when it moves, without the list
    of entries ``on_committed`` gets (building it reads every committed entry back).
    ``on_role_change(role, term, leader_id)`` and ``on_committed(entries)`` may be
    plain functions or coroutines (coroutines run as tasks, in order of calls).
    ``storage`` defaults to the mmap file store under ``config.default_path()``
    (``storeType=MEMORY``: a MemoryStorage); the server closes only a storage it
    created itself (a caller's storage is flushed and checkpointed by :meth:`stop`,
    and stays open for the caller).

    ``async_flush=False`` flushes written entries before anything acknowledges them
    (every Ready); ``async_flush=True`` is DLedger's FlushDataService: entries are
    acknowledged once written (they are in the page cache, so a killed process loses
    nothing) and a background thread flushes every ``flushFileInterval`` ms.
    """

    def __init__(
        self,
        config: DLedgerConfig,
        *,
        storage: Storage | None = None,
        on_role_change: Callable[[Role, int, str | None], Any] | None = None,
        on_committed: Callable[[list[DLedgerEntry]], Any] | None = None,
        on_commit_index: Callable[[int], None] | None = None,
        metadata_extra: Callable[[], dict] | None = None,
        rng: random.Random | None = None,
        noop_on_election: bool = True,
        async_flush: bool = False,
        tls: TlsSystemConfig | None = None,
    ):
        config.check_timing()
        self.config = config
        #: TLS for peer traffic (remoting.tls): the server side as its mode says, the client side when enabled
        self.tls = tls
        self.peers = config.peer_map()
        self._storage = storage
        self._owns_storage = storage is None
        self.async_flush = async_flush
        self._flusher: asyncio.Task | None = None
        self.syncers: list[FileSyncer] = []  # the flush loop's (data, index) for a file store
        self.on_role_change = on_role_change
        self.on_committed = on_committed
        self.on_commit_index = on_commit_index
        self.metadata_extra = metadata_extra  # fields the caller adds to METADATA answers
        self._rng = rng
        self._noop = noop_on_election
        self.core: DLedgerCore | None = None
        self._server: RemotingServer | None = None
        self._client: RemotingClient | None = None
        self._ticker: asyncio.Task | None = None
        # rid -> (connection, request, answer in the binary PUSH form)
        self._inbound: dict[int, tuple[Connection, RemotingCommand, bool]] = {}
        # peers whose PUSH answers carry the binary mark: they get binary pushes (dledger/push_codec.py)
        self._binary_peers: set[str] = set()
        self._binary = config.enableBinaryPush
        # entries of recent binary pushes by first index, encoded once for all followers that get them
        self._pushed: dict[int, tuple[DLedgerEntry, DLedgerEntry, bytes]] = {}
        self._inbound_rid = 0
        self._appends: dict[int, asyncio.Future] = {}
        self._transfers: dict[int, asyncio.Future] = {}
        self._client_appends: dict[int, tuple[Connection, RemotingCommand]] = {}
        self.timings = DLedgerTimings()  # append / replicate latency for the metrics endpoint
        self._last_checkpoint = 0.0
        self._next_clean = 0.0
        self._ready_scheduled = False
        self._stopped = False

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        cfg = self.config
        if self._storage is None:
            if cfg.storeType.upper() == "MEMORY":
                self._storage = MemoryStorage()
            else:
                self._storage = DLedgerMmapFileStore.from_config(cfg)
        self._hard_state_dir = cfg.default_path()
        hard_state = load_term_file(self._hard_state_dir) if cfg.storeType.upper() != "MEMORY" else (0, None)
        self.core = DLedgerCore(
            cfg, self._storage, hard_state=hard_state, rng=self._rng, noop_on_election=self._noop
        )
        self.core.collect_committed = self.on_committed is not None
        host, _, port = self.peers[cfg.selfId].rpartition(":")
        self._server = RemotingServer(host, int(port), name=f"dledger-{cfg.selfId}", tls=self.tls)
        for code in _PEER_CODES:
            self._server.register_processor(int(code), self._on_peer_request)
        self._server.register_processor(int(RequestCode.APPEND), self._on_append_request)
        self._server.register_processor(int(RequestCode.METADATA), self._on_metadata_request)
        self._server.register_processor(int(RequestCode.GET), self._on_get_request)
        self._server.register_processor(int(RequestCode.PULL), self._on_pull_request)
        await self._server.start()
        tls = self.tls
        self._client = RemotingClient(ssl_context=tls.client_context() if tls is not None and tls.client_enabled else None)
        self._ticker = asyncio.get_running_loop().create_task(self._tick_loop())
        if self.async_flush:
            self._flusher = asyncio.get_running_loop().create_task(self._flush_loop())

    async def stop(self) -> None:
        """Stop timers and network; flush and checkpoint the storage; close it if it is ours."""
        self._stopped = True
        for attr in ("_ticker", "_flusher"):
            task = getattr(self, attr)
            if task is not None:
                if attr == "_ticker":
                    task.cancel()  # the flusher ends by itself: never leave a flush thread running
                try:
                    await task
                except asyncio.CancelledError:
                    pass
                setattr(self, attr, None)
        if self._server is not None:
            await self._server.stop(grace=0.5)
        if self._client is not None:
            await self._client.close()
        for fut in [*self._appends.values(), *self._transfers.values()]:
            if not fut.done():
                fut.set_exception(DLedgerError(C.INTERNAL_ERROR, "server stopped"))
        if self._storage is not None:
            if self._owns_storage:
                self._storage.close()
            else:
                self._storage.flush()
                persist = getattr(self._storage, "persist_checkpoint", None)
                if persist is not None:
                    persist()

    # ------------------------------------------------------------------ API
    @property
    def role(self) -> Role:
        return self.core.role

    @property
    def term(self) -> int:
        return self.core.term

    @property
    def leader_id(self) -> str | None:
        return self.core.leader_id

    @property
    def is_leader(self) -> bool:
        return self.core.role is Role.LEADER

    @property
    def committed_index(self) -> int:
        return self.core.committed_index

    @property
    def committed_pos(self) -> int:
        return self.core.committed_pos

    @property
    def binary_peers(self) -> frozenset[str]:
        """Peers this member pushes to in the binary form (they answered a PUSH with its mark)."""
        return frozenset(self._binary_peers)

    @property
    def storage(self) -> Storage:
        return self._storage

    def get_entry(self, index: int) -> DLedgerEntry | None:
        return self._storage.get(index)

    async def append(self, data: bytes, hook: AppendHook | None = None) -> tuple[int, int]:
        """Append on the leader; returns (index, pos) once committed. DLedgerError(code) when
        the append cannot start (NOT_LEADER...) or does not commit (TERM_CHANGED,
        WAIT_QUORUM_ACK_TIMEOUT). ``hook(pos, body)`` patches the body before it is written."""
        t0 = time.perf_counter()
        entry = self.core.propose(data, hook)
        fut = asyncio.get_running_loop().create_future()
        self._appends[entry.index] = fut
        self._schedule_ready()
        result = await fut
        self.timings.append.since(t0)
        return result

    async def wait_committed(self, entry: DLedgerEntry) -> tuple[int, int]:
        """Wait for the outcome of ``entry``, which this leader proposed (``core.propose`` in the same
        loop turn, with or without ``track``): (index, pos) once committed, DLedgerError(code) as
        :meth:`append`. Committing an entry commits every earlier one of the term, so a caller that
        proposed several entries (``track=False``) waits for the last only."""
        t0 = time.perf_counter()
        self.core.track(entry)
        fut = asyncio.get_running_loop().create_future()
        self._appends[entry.index] = fut
        self._schedule_ready()
        result = await fut
        self.timings.append.since(t0)
        return result

    async def transfer_leadership(self, transferee: str) -> int:
        """Hand leadership to ``transferee``; returns the DLedgerResponseCode of the outcome."""
        rid = self.core.transfer_leadership(transferee)
        fut = asyncio.get_running_loop().create_future()
        self._transfers[rid] = fut
        self._schedule_ready()
        return await fut

    def forbid_leadership(self) -> None:
        """This member must never lead (its caller found its data unfit): it steps down if it leads."""
        if self.core is not None and not self._stopped:
            self.core.forbid_leadership()
            self._schedule_ready()

    def leader_lost(self, term: int | None = None) -> bool:
        """The caller knows the leader is gone (e.g. its process died): a follower of
        ``term`` (default: the current term) stands for election now instead of waiting
        ``maxHeartBeatLeak`` heartbeats. Returns whether it did. Safe at any time: Raft's
        safety never depends on when a member turns candidate."""
        core = self.core
        if core is None or self._stopped or core.role is not Role.FOLLOWER:
            return False
        if term is not None and term != core.term:
            return False
        core.elector.change_role_to_candidate(core.term)
        self._schedule_ready()
        return True

    # ------------------------------------------------------------------ the loop
    async def _flush_loop(self) -> None:
        """DLedger's FlushDataService: flush the written entries every ``flushFileInterval`` ms
        in the background: a file store's through its syncers (dledger.flush_data_service), any
        other storage, or a round a syncer declines, on an executor thread (the mapped files'
        flush releases the GIL)."""
        loop = asyncio.get_running_loop()
        interval = max(self.config.flushFileInterval, 1) / 1000.0
        st = self._storage
        syncers = self.syncers = (
            [FileSyncer(st.data, lambda: st.cuts), FileSyncer(st.index, lambda: st.cuts)]
            if isinstance(st, DLedgerMmapFileStore) else [])
        try:
            while not self._stopped:
                await asyncio.sleep(interval)
                if self._stopped:
                    return
                try:
                    # both asked (no short cut): a declined one starts afresh next round
                    if syncers and all([s.request() for s in syncers]):
                        continue
                    await loop.run_in_executor(None, st.flush)
                except Exception:  # noqa: BLE001 - keep flushing
                    log.exception("dledger %s: flush failed", self.config.selfId)
        finally:
            for s in syncers:
                s.close()  # a round under way finishes; stop() flushes the storage itself

    async def _tick_loop(self) -> None:
        """One core tick per ``tickIntervalMs`` of wall time: a loop that ran late (busy with
        sends, or the process was paused) ticks the missed ticks now, so heartbeat and election
        timeouts are wall-clock durations (a busy follower still notices a silent leader in
        time; a leader resumed after SIGSTOP sees at once that it lost its quorum). At most two
        election timeouts (plus the vote spread) are replayed, enough for every timeout to fire
        once; older time is dropped (replaying it would only send rounds nobody can answer)."""
        loop = asyncio.get_running_loop()
        cfg = self.config
        interval = cfg.tickIntervalMs / 1000.0
        max_behind = 2 * cfg.ticks(cfg.heartBeatTimeIntervalMs * cfg.maxHeartBeatLeak + cfg.maxVoteIntervalMs)
        next_at = loop.time()
        while True:
            behind = int((loop.time() - next_at) / interval) if loop.time() > next_at else 0
            if behind > max_behind:
                next_at += (behind - max_behind) * interval
                behind = max_behind
            for _ in range(behind + 1):
                self.core.tick()
                self._process_ready()
            next_at += behind * interval
            now = loop.time()
            if now - self._last_checkpoint >= self.config.checkPointInterval / 1000.0:
                self._last_checkpoint = now
                persist = getattr(self._storage, "persist_checkpoint", None)
                if persist is not None:
                    persist()
            if now >= self._next_clean:
                self._next_clean = now + _CLEAN_INTERVAL_S
                self._clean_files()
            next_at = max(next_at + interval, now)
            await asyncio.sleep(next_at - now)

    def _schedule_ready(self) -> None:
        """Handle the core's Ready once this loop iteration's other callbacks ran, so
        appends and pushes arriving together share one flush (group commit)."""
        if not self._ready_scheduled:
            self._ready_scheduled = True
            asyncio.get_running_loop().call_soon(self._process_ready)

    def _clean_files(self) -> None:
        """DLedger's CleanSpaceService, simplified: at a ``deleteWhen`` hour or above the
        check ratio delete committed files older than ``fileReservedHours``; above the
        force ratio (when enabled) regardless of age. Only committed files ever go."""
        delete = getattr(self._storage, "delete_expired_files", None)
        if delete is None:
            return
        cfg = self.config
        try:
            usage = shutil.disk_usage(cfg.storeBaseDir)
            ratio = usage.used / usage.total if usage.total else 0.0
        except OSError:
            ratio = 0.0
        # DLedger's isDiskFull: force-clean ratio + 0.05, at most 0.95.
        self.core.disk_full = ratio > min(cfg.diskSpaceRatioToForceClean + 0.05, 0.95)
        hours = {h.strip() for h in cfg.deleteWhen.split(";") if h.strip()}
        at_hour = time.strftime("%H") in hours or str(int(time.strftime("%H"))) in hours
        if cfg.enableDiskForceClean and ratio > cfg.diskSpaceRatioToForceClean:
            n = delete(None)
        elif at_hour or ratio > cfg.diskSpaceRatioToCheckExpired:
            n = delete(now_ms() - cfg.fileReservedHours * 3600 * 1000)
        else:
            return
        if n:
            log.info("dledger %s: deleted %d expired data files", cfg.selfId, n)

    def _process_ready(self) -> None:
        self._ready_scheduled = False
        core = self.core
        if core is None or self._stopped:
            return
        while core.has_ready():
            rd = core.ready()
            # 1. persist before anything leaves this node
            if rd.hard_state is not None and self.config.storeType.upper() != "MEMORY":
                save_term_file(self._hard_state_dir, rd.hard_state)
            if rd.must_sync and not self.async_flush:
                self._storage.flush()
            self._storage.set_committed_index(rd.committed_index)
            # 2. send
            for m in rd.messages:
                if m.IS_RESPONSE:
                    self._send_response(m)
                else:
                    self._send_request(m)
            # 3. report
            self._report(rd)
            core.advance(rd)

    def _report(self, rd: Ready) -> None:
        for rc in rd.role_changes:
            if self.on_role_change is not None:
                self._call_hook(self.on_role_change, rc.role, rc.term, rc.leader_id)
        if rd.committed_entries and self.on_committed is not None:
            self._call_hook(self.on_committed, rd.committed_entries)
        if self.on_commit_index is not None and rd.committed_index > self.core.applied_index:
            self.on_commit_index(rd.committed_index)
        for r in rd.append_results:
            fut = self._appends.pop(r.index, None)
            if fut is not None and not fut.done():
                if r.code == C.SUCCESS:
                    fut.set_result((r.index, r.pos))
                else:
                    fut.set_exception(DLedgerError(C(r.code), f"append {r.index}"))
            waiting = self._client_appends.pop(r.index, None)
            if waiting is not None:
                conn, req = waiting
                body = {
                    "group": self.config.group,
                    "code": r.code,
                    "index": r.index,
                    "pos": r.pos,
                    "term": r.term,
                }
                conn.send_response(req.response_to(200, body=fastjson.dumps(body)))
        for t in rd.transfer_results:
            fut = self._transfers.pop(t.rid, None)
            if fut is not None and not fut.done():
                fut.set_result(t.code)

    def _call_hook(self, fn: Callable, *args) -> None:
        try:
            res = fn(*args)
        except Exception:
            log.exception("dledger hook %r failed", fn)
            return
        if inspect.isawaitable(res):
            asyncio.ensure_future(res)

    # ------------------------------------------------------------------ RPC out
    def _send_request(self, m: Message) -> None:
        addr = self.peers.get(m.to)
        if addr is None:
            return
        push = m.CODE is RequestCode.PUSH
        binary = push and m.to in self._binary_peers
        if binary:
            cmd = RemotingCommand.request(int(m.CODE), body=self._binary_push_body(m))
            cmd.ext_fields = {BINARY_EXT: "1"}  # set directly: the header's generic copy costs more
        else:
            cmd = RemotingCommand.request(int(m.CODE), body=m.encode())
        # pushes that carry entries are timed (replicate latency); compares and commits are not
        t0 = time.perf_counter() if push and m.type in _CARRY_ENTRIES else 0.0

        def done(resp: RemotingCommand | None, exc: BaseException | None, m=m) -> None:
            if self.core is None or self._ticker is None:
                return
            if t0 and resp is not None and resp.code == 200:
                self.timings.observe_replicate(m.to, (time.perf_counter() - t0) * 1000.0)
            reply = None
            if resp is not None and resp.code == 200 and resp.body:
                marked = push and self._binary and resp.ext_fields is not None \
                    and resp.ext_fields.get(BINARY_EXT) == "1"
                if push:
                    # the peer's answers tell whether it speaks the binary form (any answer without the
                    # mark, e.g. a Java member's, or one that could not read a binary push: JSON again)
                    if marked:
                        self._binary_peers.add(m.to)
                    else:
                        self._binary_peers.discard(m.to)
                try:
                    if binary and marked:
                        reply = decode_push_response(resp.body)
                    else:
                        reply = message_from_json(int(m.CODE), True, fastjson.loads(resp.body))
                except (ValueError, TypeError, DLedgerError) as e:
                    log.warning("bad %s response from %s: %s", m.CODE.name, m.to, e)
            if reply is None:
                reply = self._network_error(m)  # timeout, refused, or unreadable answer
            else:
                reply.frm, reply.to, reply.rid = m.to, m.frm, m.rid
            self.core.step(reply)
            self._schedule_ready()

        self._client.invoke_async(addr, cmd, _RPC_TIMEOUT_S, done)

    def _binary_push_body(self, m: Message) -> bytes:
        """The binary form of PUSH ``m``; its entries encoded once for all followers that get them."""
        entries = m.batch_entry or ([m.entry] if m.entry is not None else [])
        if not entries:
            return encode_push_request(m, b"")
        first, last = entries[0], entries[-1]
        got = self._pushed.get(first.index)
        if got is not None and got[0] is first and got[1] is last:
            return encode_push_request(m, got[2])
        if len(self._pushed) >= _PUSHED_MAX:
            self._pushed.clear()
        data = encode_entries(entries)
        self._pushed[first.index] = (first, last, data)
        return encode_push_request(m, data)

    @staticmethod
    def _network_error(m: Message) -> Message:
        cls = {
            RequestCode.VOTE: VoteResponse,
            RequestCode.HEART_BEAT: HeartBeatResponse,
            RequestCode.PUSH: PushEntryResponse,
            RequestCode.LEADERSHIP_TRANSFER: LeadershipTransferResponse,
        }[m.CODE]
        extra = {"vote_result": VoteResult.UNKNOWN} if cls is VoteResponse else {}
        return m.reply(cls, code=int(C.NETWORK_ERROR), **extra)

    # ------------------------------------------------------------------ RPC in
    def _on_peer_request(self, req: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        ext = req.ext_fields
        binary = self._binary and ext is not None and req.code == RequestCode.PUSH and ext.get(BINARY_EXT) == "1"
        try:
            if binary:
                msg = decode_push_request(req.body or b"")
            else:
                msg = message_from_json(req.code, False, fastjson.loads(req.body or b"{}"))
        except (ValueError, TypeError, KeyError, DLedgerError) as e:
            return req.response_to(
                200, body=fastjson.dumps({"code": int(C.UNEXPECTED_ARGUMENT)}), remark=str(e)
            )
        self._inbound_rid += 1
        rid = self._inbound_rid
        self._inbound[rid] = (conn, req, binary)
        msg.frm = msg.local_id or ""
        msg.to = self.config.selfId
        msg.rid = rid
        self.core.step(msg)
        self._schedule_ready()
        return None

    def _send_response(self, m: Message) -> None:
        item = self._inbound.pop(m.rid, None)
        if item is None:
            return
        conn, req, binary = item
        if binary:
            resp = req.response_to(200, body=encode_push_response(m))
            resp.ext_fields = {BINARY_EXT: "1"}
            conn.send_response(resp)
        elif self._binary and req.code == RequestCode.PUSH:
            # a JSON PUSH answered with the mark: the leader may push in the binary form from now on
            resp = req.response_to(200, body=m.encode())
            resp.ext_fields = {BINARY_EXT: "1"}
            conn.send_response(resp)
        else:
            conn.send_response(req.response_to(200, body=m.encode()))

    def _on_append_request(self, req: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        """A DLedger client's APPEND, answered once committed: AppendEntryRequest (``body``, base64)
        or BatchAppendEntryRequest (``batchMsgs``, a list of base64 bodies: one entry each, the
        answer carries the last entry's index and pos, as DLedger's batch future does)."""
        core = self.core
        try:
            d = fastjson.loads(req.body or b"{}")
            if not isinstance(d, dict):
                raise ValueError("the request is not a JSON object")
            batch = d.get("batchMsgs")
            if batch is not None:
                if not isinstance(batch, list):
                    raise ValueError("batchMsgs is not a list")
                bodies = [base64.b64decode(x or "", validate=True) for x in batch]
            else:
                bodies = [base64.b64decode(d.get("body") or "")]
        except (ValueError, TypeError) as e:
            return req.response_to(
                200, body=fastjson.dumps({"code": int(C.UNEXPECTED_ARGUMENT)}), remark=str(e)
            )
        base = {"group": self.config.group, "leaderId": core.leader_id, "term": core.term}
        if d.get("group", self.config.group) != self.config.group:
            return req.response_to(200, body=fastjson.dumps({**base, "code": int(C.UNKNOWN_GROUP)}))
        if not bodies:
            return req.response_to(
                200, body=fastjson.dumps({**base, "code": int(C.REQUEST_WITH_EMPTY_BODYS), "index": -1, "pos": -1})
            )
        try:
            if len(bodies) > 1 and core.pusher.pending_count() + len(bodies) > self.config.maxPendingRequestsNum:
                raise DLedgerError(C.LEADER_PENDING_FULL, "too many appends waiting for quorum")
            last = len(bodies) - 1
            for k, data in enumerate(bodies):
                entry = core.propose(data, track=k == last)  # the answer carries the last entry's outcome
        except DLedgerError as e:
            # nothing of the batch was appended unless the leadership changed meanwhile (impossible
            # within this synchronous loop) or the disk filled: either way the client retries
            self._schedule_ready()
            return req.response_to(
                200, body=fastjson.dumps({**base, "code": int(e.code), "index": -1, "pos": -1})
            )
        self._client_appends[entry.index] = (conn, req)
        self._schedule_ready()
        return None

    def _on_get_request(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        """GetEntriesRequest: the leader returns the one entry at ``beginIndex``."""
        core = self.core
        base = {"group": self.config.group, "leaderId": core.leader_id, "term": core.term}
        try:
            d = fastjson.loads(req.body or b"{}")
            index = int(d.get("beginIndex", -1))
        except (ValueError, TypeError) as e:
            return req.response_to(
                200, body=fastjson.dumps({**base, "code": int(C.UNEXPECTED_ARGUMENT)}), remark=str(e)
            )
        if not self.is_leader:
            return req.response_to(200, body=fastjson.dumps({**base, "code": int(C.NOT_LEADER)}))
        e = self._storage.get(index)
        if e is None:
            return req.response_to(200, body=fastjson.dumps({**base, "code": int(C.INDEX_OUT_OF_RANGE)}))
        return req.response_to(
            200, body=fastjson.dumps({**base, "code": int(C.SUCCESS), "entries": [e.to_json()]})
        )

    def _on_pull_request(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        """PULL (PullEntriesRequest): DLedger 0.3.1.2 defines it but serves nothing (spec §8);
        answered explicitly with UNSUPPORTED instead of leaving the caller to time out."""
        core = self.core
        body = {"group": self.config.group, "code": int(C.UNSUPPORTED), "leaderId": core.leader_id,
                "term": core.term, "entries": []}
        return req.response_to(200, body=fastjson.dumps(body), remark="PULL is not implemented by DLedger")

    def _on_metadata_request(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        body = {
            "group": self.config.group,
            "code": int(C.SUCCESS),
            "leaderId": self.core.leader_id,
            "term": self.core.term,
            "peers": dict(self.peers),
        }
        if self.metadata_extra is not None:
            body = {**self.metadata_extra(), **body}
        return req.response_to(200, body=fastjson.dumps(body))

"""EntryPusher: DLedger's replication (spec dledger.md §4) as a tick/step state machine.

* :class:`EntryDispatcher` - one per follower on the leader: COMPARE, TRUNCATE,
  APPEND and COMMIT pushes with a bounded in-flight window.
* :class:`QuorumAckChecker` - leader: committed index from the peers' water
  marks; completes waiting proposals.
* :class:`EntryHandler` - follower: applies pushes in index order, answers
  duplicates, and forces a COMPARE when a gap does not fill in time.

Deviation from DLedger 0.3.1.2, on purpose: the leader only commits by counting
an entry of its own term (Raft §5.4.2); see :class:`QuorumAckChecker`.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from dataclasses import dataclass, field

from dledger.context import AppendResult, CoreContext
from dledger.entry import DLedgerEntry
from dledger.protocol import (
    DLedgerError,
    PushEntryRequest,
    PushEntryResponse,
    PushType,
    Role,
)
from dledger.protocol import (
    DLedgerResponseCode as C,
)

__all__ = ["EntryPusher", "EntryDispatcher", "QuorumAckChecker", "EntryHandler", "MAX_PENDING_PUSHES"]

MAX_PENDING_PUSHES = 1000  # DLedger's in-flight APPEND window per follower
_SUCCESS = int(C.SUCCESS)
# DLedger's fixed delays (3 s compare/truncate RPC, 500 ms retry, 1 s idle COMMIT push,
# 1 s follower push timeout) scale with maxPushTimeOutMs here; its default 1000 gives
# exactly DLedger's values, and tests can run a fast cluster by lowering one key.


class _Inflight(enum.Enum):
    COMPARE = 1
    TRUNCATE = 2


@dataclass
class EntryDispatcher:
    """Leader-side push state for one follower."""

    peer: str
    type: PushType = PushType.COMPARE
    term: int = -1
    write_index: int = -1
    compare_index: int = -1
    pending: dict[int, int] = field(default_factory=dict)  # first index -> tick sent
    batch_last: dict[int, int] = field(default_factory=dict)  # first index -> last index of a batch
    rids: dict[int, int] = field(default_factory=dict)  # rid -> index of in-flight APPEND pushes
    inflight: tuple[int, _Inflight, int, int] | None = None  # (rid, kind, index, tick sent)
    retry_at: int = 0
    last_push: int = 0


class QuorumAckChecker:
    """Leader: advance the committed index to what a quorum stores; complete proposals."""

    def __init__(self, ctx: CoreContext):
        self.ctx = ctx
        self.water_marks: dict[str, int] = {}
        # index -> (deadline tick, entry) of the proposals that want an AppendResult, in index order;
        # an OrderedDict because it is consumed from the front (a plain dict's first key is found by
        # scanning the holes of earlier removals)
        self.pending_appends: OrderedDict[int, tuple[int, DLedgerEntry]] = OrderedDict()

    def reset(self, leader: bool) -> None:
        ms = self.ctx.ms
        for index in sorted(self.pending_appends):
            pos = self.pending_appends[index][1].pos
            self.ctx.append_results.append(AppendResult(index, int(C.TERM_CHANGED), -1, pos))
        self.pending_appends.clear()
        self.water_marks = {p: -1 for p in ms.peer_map}
        if leader:
            self.water_marks[ms.self_id] = ms.ledger_end_index

    def update_peer(self, peer: str, index: int) -> None:
        if index > self.water_marks.get(peer, -1):
            self.water_marks[peer] = index

    def check(self) -> None:
        ms = self.ctx.ms
        if not ms.is_leader():
            return
        marks = sorted(self.water_marks.values(), reverse=True)
        quorum_index = marks[len(marks) // 2]
        if quorum_index > ms.committed_index:
            e = self.ctx.storage.get(min(quorum_index, ms.ledger_end_index))
            # Raft's rule: an older term's entry is committed only through a later entry
            # of the current term (DLedger counts any index, which loses data, Raft fig. 8).
            if e is not None and e.term == ms.curr_term:
                set_committed(self.ctx, e.index)
        # pending_appends is filled in index order (and deadline order): complete from the front.
        pending = self.pending_appends
        committed = ms.committed_index
        results = self.ctx.append_results
        while pending:
            i = next(iter(pending))
            if i > committed:
                break
            e = pending.pop(i)[1]
            results.append(AppendResult(i, _SUCCESS, e.term, e.pos))

    def expire(self) -> None:
        now = self.ctx.now
        pending = self.pending_appends
        while pending:
            i, (dl, e) = next(iter(pending.items()))
            if dl > now:
                break
            del pending[i]
            self.ctx.append_results.append(AppendResult(i, int(C.WAIT_QUORUM_ACK_TIMEOUT), e.term, e.pos))


def set_committed(ctx: CoreContext, index: int) -> None:
    """updateCommittedIndex: only forward, never past the local log end."""
    ms = ctx.ms
    index = min(index, ms.ledger_end_index)
    if index > ms.committed_index and index >= ms.ledger_begin_index:
        ms.committed_index = index


class EntryHandler:
    """Follower: applies pushes of the current leader in index order.

    DLedger's handler relies on TCP order; this one also survives duplicated,
    reordered and delayed pushes. ``validated`` is the highest index known to
    equal the leader's log in this term (established by a matching COMPARE or
    a TRUNCATE, reset on any role/term change or restart). An APPEND is only
    applied at ``validated + 1``; a stored entry there that differs from the
    pushed one is cut with everything after it (Raft's conflict rule), and a
    TRUNCATE whose entry is already stored cuts nothing, so a stale push can
    never remove an entry the leader was told is stored. Entries up to the
    committed index always count as validated. When nothing lines up with the
    leader (it cleaned the entries we lack), the log restarts at the leader's
    entry (``Storage.reset``).
    """

    def __init__(self, ctx: CoreContext):
        self.ctx = ctx
        self.write_requests: dict[int, tuple[PushEntryRequest, int]] = {}  # first index -> (req, arrival)
        self.validated = -1

    def reset(self) -> None:
        self._drop_queued()
        self.validated = -1

    def _drop_queued(self) -> None:
        """Answer every queued APPEND (DLedger lets them time out; an answer frees the
        driver's bookkeeping at once, and the leader ignores answers it no longer expects)."""
        queued = self.write_requests
        self.write_requests = {}
        for req, _t in queued.values():
            self._reply(req, C.INCONSISTENT_STATE)

    def _reply(self, req: PushEntryRequest, code: C) -> None:
        ms = self.ctx.ms
        self.ctx.respond(
            req.reply(
                PushEntryResponse,
                code=int(code),
                term=ms.curr_term,
                leader_id=ms.leader_id,
                index=req.first_index,
                count=req.count,
                begin_index=ms.ledger_begin_index,
                end_index=ms.ledger_end_index,
            )
        )

    def _check_leader(self, req: PushEntryRequest) -> C | None:
        ms = self.ctx.ms
        if not ms.is_follower():
            return C.NOT_FOLLOWER
        if req.term != ms.curr_term:
            return C.INCONSISTENT_TERM
        if req.leader_id != ms.leader_id:
            return C.INCONSISTENT_LEADER
        return None

    @staticmethod
    def _entries(req: PushEntryRequest) -> list[DLedgerEntry]:
        return req.batch_entry if req.batch_entry else ([req.entry] if req.entry is not None else [])

    def _commit(self, req: PushEntryRequest) -> None:
        set_committed(self.ctx, min(req.commit_index, self.validated))

    def _match(self, e: DLedgerEntry) -> bool:
        storage = self.ctx.storage
        local = storage.get(e.index)
        if local is None:
            # Cleaned here after it was committed: a committed entry equals the leader's.
            return e.index < storage.ledger_begin_index and e.index <= self.ctx.ms.committed_index
        return local.same_as(e)

    def _raise_validated(self) -> None:
        """Entries up to our committed index equal every legitimate leader's (Raft's leader
        completeness), so they count as validated even right after a restart."""
        ms = self.ctx.ms
        floor = min(ms.committed_index, ms.ledger_end_index)
        if floor > self.validated:
            self.validated = floor

    def _put(self, e: DLedgerEntry) -> None:
        """Store the leader's entry at ``validated + 1``: keep, overwrite a conflict, or append."""
        ctx = self.ctx
        storage = ctx.storage
        if e.index <= storage.ledger_end_index:
            if not self._match(e):
                if e.index <= ctx.ms.committed_index:
                    raise DLedgerError(C.INCONSISTENT_STATE, f"refusing to overwrite committed {e.index}")
                storage.truncate(e)
                ctx.must_sync = True
        else:
            ctx.written.append(storage.append(e.index, e.term, e.body, pos=e.pos))
        self.validated = e.index

    def handle_push(self, req: PushEntryRequest) -> None:
        ctx = self.ctx
        self._raise_validated()
        bad = self._check_leader(req)
        if req.type is PushType.APPEND:
            entries = self._entries(req)
            if not entries:
                self._reply(req, C.REQUEST_WITH_EMPTY_BODYS)
                return
            if bad is not None:
                self._reply(req, C.INCONSISTENT_STATE)
                return
            first = entries[0].index
            queued = self.write_requests
            if first in queued:
                self._reply(req, C.REPEATED_PUSH)
                return
            if not queued and first == self.validated + 1:
                # the usual case (pushes arrive in order): applied at once, without the queue
                self._apply(req, entries)
                return
            queued[first] = (req, ctx.now)
            self._drain()
            return
        if req.type is PushType.COMMIT:
            if bad is None:
                self._commit(req)
            self._reply(req, bad or C.SUCCESS)
            return
        # COMPARE / TRUNCATE: queued appends belong to a superseded push sequence.
        self._drop_queued()
        if bad is not None or req.entry is None:
            self._reply(req, bad or C.UNEXPECTED_ARGUMENT)
            return
        e = req.entry
        if req.type is PushType.COMPARE:
            ok = self._match(e)
            if ok:
                self.validated = max(self.validated, e.index)
            self._reply(req, C.SUCCESS if ok else C.INCONSISTENT_STATE)
            return
        storage = ctx.storage
        if e.index <= self.validated:
            ok = self._match(e)  # a stale TRUNCATE: the entry is already confirmed
        elif (
            e.index > storage.ledger_end_index + 1
            or e.index < storage.ledger_begin_index
            or (e.index > self.validated + 1 and not self._match(e))
        ):
            # Nothing here lines up with the leader's log: it starts (older files cleaned)
            # past our end or before our first entry, or our entry there differs and the
            # one below it cannot be vouched for (the leader truncates at its first entry
            # only). Restart our log at the leader's entry (DLedger's rebuildWithPos) and
            # let the leader resend the rest; keeping our older entries could leave a
            # stale one under a committed index.
            storage.reset(e)
            ms = ctx.ms
            ms.committed_index = min(ms.committed_index, e.index - 1)
            ctx.written.append(e)
            ctx.must_sync = True
            self.validated = e.index
            ok = True
        else:
            try:
                self._put(e)
                ok = True
            except DLedgerError:
                ok = False
        self._settle(req, ok)

    def _settle(self, req: PushEntryRequest, ok: bool) -> None:
        """Answer a push: SUCCESS (after committing up to what it carries) or INCONSISTENT_STATE."""
        if ok:
            self._commit(req)
        self._reply(req, C.SUCCESS if ok else C.INCONSISTENT_STATE)

    def _drain(self) -> None:
        """Apply queued APPEND pushes that start at or below ``validated + 1``."""
        while True:
            ready = [i for i in self.write_requests if i <= self.validated + 1]
            if not ready:
                return
            req, _ = self.write_requests.pop(min(ready))
            self._apply(req, self._entries(req))

    def _apply(self, req: PushEntryRequest, entries: list[DLedgerEntry]) -> None:
        """Store an APPEND push that starts at or below ``validated + 1`` and answer it."""
        ctx = self.ctx
        if len(entries) > 1 and entries[0].index == self.validated + 1 == ctx.storage.ledger_end_index + 1:
            # the usual case (a batch that extends the log): stored in one go when the store can
            stored = ctx.storage.append_run(entries)
            if stored is not None:
                ctx.written.extend(stored)
                self.validated = stored[-1].index
                self._settle(req, True)
                return
        ok = True
        try:
            for e in entries:
                if e.index <= self.validated:
                    ok = ok and self._match(e)  # a duplicate or a lost acknowledgement
                else:
                    self._put(e)
        except DLedgerError:
            ok = False
        self._settle(req, ok)

    def tick(self) -> None:
        """A gap that does not fill: fail the earliest timed-out push so the leader compares."""
        if not self.write_requests:
            return
        ctx = self.ctx
        limit = ctx.cfg.ticks(ctx.cfg.maxPushTimeOutMs)
        late = [i for i, (_r, t) in self.write_requests.items() if ctx.now - t >= limit]
        if late:
            req, _ = self.write_requests.pop(min(late))
            self._reply(req, C.INCONSISTENT_STATE)


class EntryPusher:
    """Leader dispatchers + quorum checker + follower handler of one member."""

    def __init__(self, ctx: CoreContext):
        self.ctx = ctx
        self.dispatchers = {p: EntryDispatcher(p) for p in ctx.ms.other_peers()}
        self.checker = QuorumAckChecker(ctx)
        self.handler = EntryHandler(ctx)
        t = ctx.cfg.ticks
        push_ms = ctx.cfg.maxPushTimeOutMs
        self._rpc_timeout = t(3 * push_ms)
        self._retry = t(push_ms // 2)
        self._commit_idle = t(push_ms)
        self._push_timeout = t(push_ms)
        self._ack_wait = t(ctx.cfg.maxWaitAckTimeMs)
        self.pump_due = False
        self.check_due = False

    # ------------------------------------------------------------------ lifecycle
    def on_role_change(self, role: Role, term: int) -> None:
        leader = role is Role.LEADER
        self.checker.reset(leader)
        self.handler.reset()
        for d in self.dispatchers.values():
            self._to_compare(d)
            d.term = term
            d.retry_at = 0
            d.last_push = self.ctx.now
        if leader:
            self.pump_all()

    def lag_of(self, peer: str) -> int:
        ms = self.ctx.ms
        return ms.ledger_end_index - self.checker.water_marks.get(peer, -1)

    # ------------------------------------------------------------------ leader write path
    def on_appended(self, entry: DLedgerEntry, track: bool = True) -> None:
        """A leader append: own water mark, a waiting proposal (``track``: it wants an AppendResult), pushes."""
        ctx = self.ctx
        self.checker.update_peer(ctx.ms.self_id, entry.index)
        if track:
            self.checker.pending_appends[entry.index] = (ctx.now + self._ack_wait, entry)
        # Pushes go out when the driver takes the next Ready (flush_pushes), so every entry
        # appended in between travels in the same push round (one batch with enableBatchPush);
        # the quorum check runs there too, once for all of them (only a one-member group can
        # commit on its own append).
        self.pump_due = self.check_due = True

    def track(self, entry: DLedgerEntry) -> None:
        """An AppendResult for ``entry`` after all (proposed with ``track=False`` in this term)."""
        ms = self.ctx.ms
        checker = self.checker
        pending = checker.pending_appends
        index = entry.index
        if not ms.is_leader() or index in pending:
            return
        if index <= ms.committed_index:
            self.ctx.append_results.append(AppendResult(index, _SUCCESS, entry.term, entry.pos))
            return
        later = bool(pending) and next(reversed(pending)) > index
        pending[index] = (self.ctx.now + self._ack_wait, entry)
        if later:  # rare (the usual caller tracks the entry it just proposed): keep the index order
            checker.pending_appends = OrderedDict(sorted(pending.items()))

    def flush_pushes(self) -> None:
        """Count the acknowledgements and send what became pushable since the last call
        (called by ``ready()``)."""
        if self.check_due:
            self.check_due = False
            self.checker.check()
        if self.pump_due:
            self.pump_due = False
            self.pump_all()

    @property
    def work_due(self) -> bool:
        """Acknowledgements to count or pushes to send at the next ``ready()``."""
        return self.pump_due or self.check_due

    def pending_count(self) -> int:
        """Appends waiting for the quorum: the proposals waiting for a result, or the entries not yet
        committed when more (proposals that want no result are counted too)."""
        ms = self.ctx.ms
        return max(len(self.checker.pending_appends), ms.ledger_end_index - ms.committed_index)

    # ------------------------------------------------------------------ dispatchers
    def _to_compare(self, d: EntryDispatcher) -> None:
        d.type = PushType.COMPARE
        d.compare_index = -1
        d.pending.clear()
        d.batch_last.clear()
        d.rids.clear()
        d.inflight = None

    def _to_append(self, d: EntryDispatcher, index: int) -> None:
        d.type = PushType.APPEND
        d.pending.clear()
        d.batch_last.clear()
        d.rids.clear()
        d.inflight = None
        self.checker.update_peer(d.peer, index)
        d.write_index = index + 1
        self.checker.check()

    def _push(
        self, d: EntryDispatcher, type_: PushType, entry: DLedgerEntry | None, batch: list | None = None
    ) -> PushEntryRequest:
        ms = self.ctx.ms
        d.last_push = self.ctx.now
        return self.ctx.send(
            PushEntryRequest(
                to=d.peer,
                term=ms.curr_term,
                leader_id=ms.self_id,
                type=type_,
                entry=entry,
                batch_entry=batch or [],
                commit_index=ms.committed_index,
            )
        )

    def _push_append(self, d: EntryDispatcher, first: int, last: int, entries: list | None = None) -> None:
        """Push entries first..last: one entry, or one batch (enableBatchPush)."""
        storage = self.ctx.storage
        if first == last:
            m = self._push(d, PushType.APPEND, entries[0] if entries else storage.get(first))
        else:
            batch = entries or [storage.get(i) for i in range(first, last + 1)]
            m = self._push(d, PushType.APPEND, None, batch)
            d.batch_last[first] = last
        d.pending[first] = self.ctx.now
        d.rids[m.rid] = first

    def _batch(self, first: int) -> list[DLedgerEntry]:
        """Entries of the push starting at ``first``: one, or (enableBatchPush) entries until
        maxBatchPushSize bytes, at least one."""
        cfg = self.ctx.cfg
        get = self.ctx.storage.get
        e = get(first)
        out = [e]
        if not cfg.enableBatchPush:
            return out
        end = self.ctx.ms.ledger_end_index
        limit = cfg.maxBatchPushSize
        size = e.size
        i = first + 1
        while i <= end and size < limit:
            e = get(i)
            out.append(e)
            size += e.size
            i += 1
        return out

    def pump_all(self) -> None:
        for d in self.dispatchers.values():
            self.pump(d)

    def pump(self, d: EntryDispatcher) -> None:
        ctx = self.ctx
        ms = ctx.ms
        if not ms.is_leader() or d.inflight is not None or ctx.now < d.retry_at:
            return
        storage = ctx.storage
        if d.type is PushType.COMPARE:
            end = ms.ledger_end_index
            if end < 0:
                return
            if d.compare_index == -1 or not (ms.ledger_begin_index <= d.compare_index <= end):
                d.compare_index = end
            m = self._push(d, PushType.COMPARE, storage.get(d.compare_index))
            d.inflight = (m.rid, _Inflight.COMPARE, d.compare_index, ctx.now)
        elif d.type is PushType.APPEND:
            if d.write_index < ms.ledger_begin_index:
                # What this follower needs next was cleaned here: compare again, which ends
                # in a TRUNCATE at our first entry (the follower restarts its log there).
                self._to_compare(d)
                self.pump(d)
                return
            while d.write_index <= ms.ledger_end_index and len(d.pending) < MAX_PENDING_PUSHES:
                entries = self._batch(d.write_index)
                last = d.write_index + len(entries) - 1
                self._push_append(d, d.write_index, last, entries)
                d.write_index = last + 1

    def _truncate(self, d: EntryDispatcher, index: int) -> None:
        entry = self.ctx.storage.get(index)
        if entry is None:  # cleaned meanwhile: start over
            self._retry_compare(d)
            return
        d.type = PushType.TRUNCATE
        m = self._push(d, PushType.TRUNCATE, entry)
        d.inflight = (m.rid, _Inflight.TRUNCATE, index, self.ctx.now)

    def on_push_response(self, resp: PushEntryResponse) -> None:
        ctx = self.ctx
        ms = ctx.ms
        d = self.dispatchers.get(resp.frm)
        if d is None or not ms.is_leader():
            return
        code = resp.code
        if d.inflight is not None and d.inflight[0] == resp.rid:
            _rid, kind, index, _t = d.inflight
            d.inflight = None
            if kind is _Inflight.TRUNCATE:
                if code == C.SUCCESS:
                    self._to_append(d, index)
                else:
                    self._retry_compare(d)
            elif code not in (C.SUCCESS, C.INCONSISTENT_STATE):
                self._retry_compare(d)
            else:
                self._after_compare(d, index, code, resp)
            self.pump(d)
            return
        index = d.rids.pop(resp.rid, None)
        if index is None or d.type is not PushType.APPEND:
            return  # COMMIT pushes and stale answers
        if code == C.SUCCESS:
            d.pending.pop(index, None)
            last = d.batch_last.pop(index, index)
            self.checker.update_peer(d.peer, last)
            # Counted and refilled once per Ready (flush_pushes), not once per answer: the
            # answers of one loop turn share one quorum check and one push round.
            self.check_due = self.pump_due = True
        elif code == C.INCONSISTENT_STATE:
            self._to_compare(d)
            self.pump(d)

    def _retry_compare(self, d: EntryDispatcher) -> None:
        self._to_compare(d)
        d.retry_at = self.ctx.now + self._retry

    def _after_compare(self, d: EntryDispatcher, index: int, code: int, resp: PushEntryResponse) -> None:
        ms = self.ctx.ms
        f_begin, f_end = resp.begin_index, resp.end_index
        truncate_index = -1
        if code == C.SUCCESS and index == f_end:
            self._to_append(d, index)
            return
        if code == C.SUCCESS:
            truncate_index = index
        elif f_end < ms.ledger_begin_index or f_begin > ms.ledger_end_index or index < f_begin:
            truncate_index = ms.ledger_begin_index
        elif index > f_end:
            d.compare_index = f_end
        else:
            d.compare_index = index - 1
        if truncate_index == ms.ledger_begin_index and index < f_begin <= ms.ledger_end_index:
            # The follower cleaned everything below f_begin after committing it, so its
            # log matches ours there: cut at its first entry, not at ours (which it lacks).
            truncate_index = max(f_begin, ms.ledger_begin_index)
        if truncate_index == -1 and d.compare_index < ms.ledger_begin_index:
            truncate_index = ms.ledger_begin_index
        if truncate_index != -1:
            self._truncate(d, truncate_index)

    # ------------------------------------------------------------------ time
    def tick(self) -> None:
        ctx = self.ctx
        ms = ctx.ms
        if ms.is_follower():
            self.handler.tick()
        if not ms.is_leader():
            return
        now = ctx.now
        for d in self.dispatchers.values():
            if d.inflight is not None and now - d.inflight[3] >= self._rpc_timeout:
                self._retry_compare(d)
            if d.type is PushType.APPEND:
                wm = self.checker.water_marks.get(d.peer, -1)
                while d.pending:
                    first = next(iter(d.pending))
                    if d.batch_last.get(first, first) > wm:
                        break
                    del d.pending[first]
                    d.batch_last.pop(first, None)
                sent = d.pending.get(wm + 1)
                if wm + 1 < ms.ledger_begin_index:
                    self._to_compare(d)
                elif sent is not None and now - sent >= self._push_timeout:
                    # The push the follower needs next is overdue: send it again.
                    self._push_append(d, wm + 1, d.batch_last.get(wm + 1, wm + 1))
                elif d.write_index > ms.ledger_end_index and now - d.last_push >= self._commit_idle:
                    self._push(d, PushType.COMMIT, None)
            self.pump(d)
        self.checker.expire()

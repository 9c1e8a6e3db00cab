"""The narrow Storage protocol the core writes its log through, and MemoryStorage.

The core appends and truncates through this protocol; durability is the
driver's job: it calls :meth:`Storage.flush` for the entries a Ready lists
before it sends that Ready's messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from dledger.entry import DLedgerEntry
from dledger.protocol import DLedgerError, DLedgerResponseCode

__all__ = ["Storage", "MemoryStorage", "AppendHook", "apply_append_hook"]

# DLedger's AppendHook: called with the entry's position and its body (a bytearray to
# patch in place, e.g. RocketMQ's PHYSICALOFFSET = pos + 48) before the entry is stored.
AppendHook = Callable[[int, bytearray], None]


@runtime_checkable
class Storage(Protocol):
    """What the Raft core needs from a log store (DLedgerStore)."""

    @property
    def ledger_begin_index(self) -> int: ...  # first stored index (0 when empty)

    @property
    def ledger_end_index(self) -> int: ...  # last stored index, -1 when empty

    @property
    def ledger_end_term(self) -> int: ...  # term of the last entry, -1 when empty

    @property
    def committed_index(self) -> int:  # last committed index loaded from the checkpoint, -1 if none
        ...

    def get(self, index: int) -> DLedgerEntry | None:
        """The entry at ``index`` or None when outside [begin, end]."""

    def append(
        self, index: int, term: int, body: bytes, pos: int | None = None, hook: AppendHook | None = None
    ) -> DLedgerEntry:
        """Append the entry ``index`` (must be end + 1). ``pos`` None: the store picks the
        position (leader); otherwise the entry must land exactly there (follower), else
        DLedgerError(INCONSISTENT_STATE). ``hook(pos, body)`` may patch the body in place
        once the position is known (same length), before it is written."""

    def append_run(self, entries: list[DLedgerEntry]) -> list[DLedgerEntry] | None:
        """Store pushed entries that follow the log's end (index end + 1 on, each at the position
        where the previous one ends) as :meth:`append` would one by one, in one go; return the
        stored entries, or None with nothing written when the store declines (the caller then
        appends them one by one)."""

    def truncate(self, entry: DLedgerEntry) -> None:
        """Make ``entry`` the last entry: keep the local one at that index if equal, else
        cut at ``entry.pos`` and write ``entry`` there."""

    def reset(self, entry: DLedgerEntry) -> None:
        """Drop the whole log and restart it with ``entry`` (at ``entry.pos``) as its first
        entry: a follower whose log ends before the leader's first (cleaned) entry."""

    def set_committed_index(self, index: int) -> None:
        """Record the committed index (persisted with the next checkpoint)."""

    def flush(self) -> None:
        """Make everything written so far durable."""

    def close(self) -> None: ...


class MemoryStorage:
    """An in-memory Storage for tests (DLedgerMemoryStore with DLedger's positions).

    Positions are assigned as if all entries sat in one endless data file.
    Surviving a "crash" is modelled by keeping the object and building a new
    core over it.
    """

    def __init__(self) -> None:
        self._entries: list[DLedgerEntry] = []
        self._begin = 0
        self._committed = -1
        self._reset_pos = 0

    @property
    def ledger_begin_index(self) -> int:
        return self._begin

    @property
    def ledger_end_index(self) -> int:
        return self._begin + len(self._entries) - 1

    @property
    def ledger_end_term(self) -> int:
        return self._entries[-1].term if self._entries else -1

    @property
    def committed_index(self) -> int:
        return self._committed

    def _next_pos(self) -> int:
        if not self._entries:
            return self._reset_pos
        last = self._entries[-1]
        return last.pos + last.size

    def get(self, index: int) -> DLedgerEntry | None:
        i = index - self._begin
        if 0 <= i < len(self._entries):
            return self._entries[i]
        return None

    def append(
        self, index: int, term: int, body: bytes, pos: int | None = None, hook: AppendHook | None = None
    ) -> DLedgerEntry:
        if index != self.ledger_end_index + 1:
            raise DLedgerError(
                DLedgerResponseCode.INCONSISTENT_INDEX, f"append {index} after {self.ledger_end_index}"
            )
        nxt = self._next_pos()
        if pos is not None and pos != nxt:
            raise DLedgerError(DLedgerResponseCode.INCONSISTENT_STATE, f"pos {pos} != write position {nxt}")
        if hook is not None:
            body = apply_append_hook(hook, nxt, body)
        e = DLedgerEntry(index=index, term=term, body=bytes(body), pos=nxt)
        self._entries.append(e)
        return e

    def append_run(self, entries: list[DLedgerEntry]) -> list[DLedgerEntry] | None:
        if not entries or entries[0].index != self.ledger_end_index + 1:
            return None
        pos = self._next_pos()
        for k, e in enumerate(entries):
            if e.index != entries[0].index + k or e.pos != pos:
                return None
            pos += e.size
        stored = [DLedgerEntry(index=e.index, term=e.term, body=bytes(e.body), pos=e.pos) for e in entries]
        self._entries.extend(stored)
        return stored

    def truncate(self, entry: DLedgerEntry) -> None:
        i = entry.index - self._begin
        if i < 0:
            raise DLedgerError(DLedgerResponseCode.INDEX_LESS_THAN_LOCAL_BEGIN, f"truncate {entry.index}")
        if i > len(self._entries):
            raise DLedgerError(
                DLedgerResponseCode.INCONSISTENT_INDEX, f"truncate {entry.index} beyond the end"
            )
        local = self.get(entry.index)
        if local is not None and local.same_as(entry):
            del self._entries[i + 1 :]
            return
        prev = self.get(entry.index - 1)
        if prev is not None and prev.pos + prev.size != entry.pos:
            # Checked before cutting anything: the entry must follow our entry index - 1.
            raise DLedgerError(DLedgerResponseCode.INCONSISTENT_STATE, f"truncate pos {entry.pos}")
        del self._entries[i:]
        self._entries.append(
            DLedgerEntry(index=entry.index, term=entry.term, body=bytes(entry.body), pos=entry.pos)
        )

    def reset(self, entry: DLedgerEntry) -> None:
        self._entries = [
            DLedgerEntry(index=entry.index, term=entry.term, body=bytes(entry.body), pos=entry.pos)
        ]
        self._begin = entry.index
        self._reset_pos = entry.pos

    def delete_before(self, index: int) -> int:
        """Drop entries below ``index`` (committed ones only), as cleaning expired files does;
        returns how many were dropped."""
        index = min(index, self._committed + 1, self.ledger_end_index)
        n = max(0, index - self._begin)
        if n:
            del self._entries[:n]
            self._begin += n
        return n

    def set_committed_index(self, index: int) -> None:
        self._committed = index

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def apply_append_hook(hook: AppendHook, pos: int, body: bytes) -> bytes:
    """Run ``hook`` on a copy of ``body`` for an entry at ``pos``; it must keep the length."""
    buf = bytearray(body)
    hook(pos, buf)
    if len(buf) != len(body):
        raise DLedgerError(DLedgerResponseCode.UNEXPECTED_ARGUMENT, "an append hook must not resize the body")
    return bytes(buf)

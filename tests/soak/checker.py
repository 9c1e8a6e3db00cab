"""Total-queue checker: what producers sent and saw acknowledged against what consumers read back.

Every scenario of the fault suite records its history here and asks one question at the end:
was anything acknowledged lost, read that was never sent, read twice, read out of a producer's
order, or did one (queue, offset) name two different messages?

A message is named by a unique key (``p<producer>-<seq>``) carried in its body; the body is
``body_for(key)`` so a torn or garbled record that still decodes is caught as ``corrupt``.
Acknowledged means response code 0 (SUCCESS) only: FLUSH_DISK_TIMEOUT, SLAVE_NOT_AVAILABLE and
the like are "maybe stored", as are sends whose answer never came.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

__all__ = ["History", "Report", "body_for", "key_of", "check"]

KEY_END = b"|"


def body_for(key: str, size: int = 64) -> bytes:
    """The body that carries ``key``: the key, ``|``, then filler derived from the key (a torn tail shows)."""
    head = key.encode() + KEY_END
    filler = hashlib.blake2b(head, digest_size=32).hexdigest().encode()
    n = max(0, size - len(head))
    return head + (filler * (n // len(filler) + 1))[:n]


def key_of(body: bytes) -> str | None:
    """The key a body carries, or None when it carries none."""
    end = body.find(KEY_END)
    if end <= 0:
        return None
    try:
        return body[:end].decode()
    except UnicodeDecodeError:
        return None


@dataclass
class History:
    """Producers' side: every attempt (producer, seq, key) and the keys answered SUCCESS."""

    attempted: dict[str, tuple[str, int]] = field(default_factory=dict)  # key -> (producer, seq)
    acked: set[str] = field(default_factory=set)
    ack_time: dict[str, float] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def key(producer: str, seq: int) -> str:
        return f"{producer}-{seq:09d}"

    def attempt(self, producer: str, seq: int, size: int = 64) -> tuple[str, bytes]:
        """Record an attempt; returns (key, body)."""
        k = self.key(producer, seq)
        if k in self.attempted:
            raise ValueError(f"key {k} attempted twice: keys must be unique")
        self.attempted[k] = (producer, seq)
        self.sizes[k] = size
        return k, body_for(k, size)

    def ack(self, key: str, code: int, at: float = 0.0) -> None:
        """The answer to ``key``'s send: only code 0 counts as acknowledged."""
        if code == 0:
            self.acked.add(key)
            self.ack_time[key] = at


@dataclass(frozen=True)
class Read:
    queue: tuple[str, int]  # (topic, queueId)
    offset: int
    body: bytes


@dataclass
class Report:
    attempted: int = 0
    acked: int = 0
    read: int = 0
    lost: list[str] = field(default_factory=list)  # acked, never read
    unexpected: list[bytes] = field(default_factory=list)  # read, never attempted (or no key)
    duplicated: list[str] = field(default_factory=list)  # read at two or more (queue, offset)
    corrupt: list[str] = field(default_factory=list)  # key readable, body not the one sent
    order: list[tuple[str, tuple[str, int], int, int]] = field(default_factory=list)  # (producer, queue, seq, after)
    inconsistent: list[tuple[tuple[str, int], int]] = field(default_factory=list)  # same slot, two messages

    @property
    def ok(self) -> bool:
        return not (self.lost or self.unexpected or self.duplicated or self.corrupt or self.order
                    or self.inconsistent)

    def summary(self) -> str:
        return (f"attempted={self.attempted} acked={self.acked} read={self.read} lost={len(self.lost)} "
                f"unexpected={len(self.unexpected)} duplicated={len(self.duplicated)} corrupt={len(self.corrupt)} "
                f"order={len(self.order)} inconsistent={len(self.inconsistent)}")

    def detail(self, n: int = 5) -> str:
        return (f"{self.summary()}\n lost: {self.lost[:n]}\n unexpected: {self.unexpected[:n]}\n"
                f" duplicated: {self.duplicated[:n]}\n corrupt: {self.corrupt[:n]}\n order: {self.order[:n]}\n"
                f" inconsistent: {self.inconsistent[:n]}")


def check(history: History, reads: list[Read] | list[tuple[tuple[str, int], int, bytes]]) -> Report:
    """Compare ``history`` with every message read back (from one node or several, once or again).

    Reading the same (queue, offset) twice with the same message is not a duplicate; the same key
    at two different slots is. Order: for each (producer, queue), messages sorted by offset must
    have increasing sequence numbers (producers send one at a time, each waiting for its answer).
    """
    rep = Report(attempted=len(history.attempted), acked=len(history.acked))
    slot_key: dict[tuple[tuple[str, int], int], str | bytes] = {}
    key_slots: dict[str, set[tuple[tuple[str, int], int]]] = {}
    bad_slots: set[tuple[tuple[str, int], int]] = set()
    for r in reads:
        queue, offset, body = (r.queue, r.offset, r.body) if isinstance(r, Read) else r
        slot = (queue, offset)
        key = key_of(body)
        ident: str | bytes = key if key is not None else bytes(body)
        prev = slot_key.get(slot)
        if prev is None:
            slot_key[slot] = ident
        elif prev != ident:
            if slot not in bad_slots:
                bad_slots.add(slot)
                rep.inconsistent.append(slot)
            continue
        else:
            continue  # the same slot read again
        rep.read += 1
        if key is None or key not in history.attempted:
            rep.unexpected.append(bytes(body[:64]))
            continue
        if bytes(body) != body_for(key, history.sizes.get(key, len(body))):
            rep.corrupt.append(key)
        key_slots.setdefault(key, set()).add(slot)
    for key, slots in key_slots.items():
        if len(slots) > 1:
            rep.duplicated.append(key)
    rep.lost = sorted(k for k in history.acked if k not in key_slots)
    # per-producer order within each queue: one slot per key (the first), sorted by offset
    runs: dict[tuple[str, tuple[str, int]], list[tuple[int, int]]] = {}
    for key, slots in key_slots.items():
        producer, seq = history.attempted[key]
        queue, offset = min(slots)
        runs.setdefault((producer, queue), []).append((offset, seq))
    for (producer, queue), run in runs.items():
        run.sort()
        for (_o1, s1), (_o2, s2) in zip(run, run[1:], strict=False):
            if s2 <= s1:
                rep.order.append((producer, queue, s2, s1))
    return rep

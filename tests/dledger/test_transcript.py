"""Golden transcript: every message and role change of a small scripted scenario.

A change in the core's behaviour shows up as a diff of
``testdata/election_and_append.txt``. After reviewing it, regenerate with
``DLEDGER_REWRITE=1 pytest tests/dledger/test_transcript.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

from dledger.protocol import (
    HeartBeatRequest,
    HeartBeatResponse,
    Message,
    PushEntryRequest,
    PushEntryResponse,
    VoteRequest,
    VoteResponse,
)
from tests.dledger.simnet import Cluster

GOLDEN = Path(__file__).parent / "testdata" / "election_and_append.txt"


def render(m: Message) -> str:
    head = f"{m.frm}->{m.to} {type(m).__name__} term={m.term}"
    if isinstance(m, VoteRequest):
        return f"{head} ledger=({m.ledger_end_index},{m.ledger_end_term})"
    if isinstance(m, VoteResponse):
        return f"{head} {m.vote_result.value}"
    if isinstance(m, HeartBeatRequest):
        return head
    if isinstance(m, HeartBeatResponse):
        return f"{head} code={m.code}"
    if isinstance(m, PushEntryRequest):
        e = m.entry
        ent = f" entry=({e.index},{e.term},{e.body!r})" if e is not None else ""
        return f"{head} {m.type.value}{ent} commit={m.commit_index}"
    if isinstance(m, PushEntryResponse):
        return f"{head} code={m.code} index={m.index} end={m.end_index}"
    return head


def scenario() -> list[str]:
    c = Cluster(3, seed=2024)
    lines: list[str] = []
    orig = c._send

    def send(m):
        lines.append(f"t{c.now} {render(m)}")
        orig(m)

    c._send = send
    seen = 0

    def roles():
        nonlocal seen
        for t, nid, role, term in c.role_log[seen:]:
            lines.append(f"t{t} {nid} becomes {role.value} term={term}")
        seen = len(c.role_log)

    c.run_until(lambda: (roles(), c.leader())[1] is not None, 1000)
    c.run(12)
    roles()
    ld = c.leader()
    lines.append(f"t{c.now} propose a, b on {ld.self_id}")
    ld.propose(b"a")
    ld.propose(b"b")
    c._drain_ready(ld.self_id)
    c.run_until(lambda: all(x.committed_index == 1 for x in c.nodes.values()), 1000)
    roles()
    lines.append(f"t{c.now} committed everywhere: {c.committed}")
    return lines


def test_golden_transcript():
    got = "\n".join(scenario()) + "\n"
    if os.environ.get("DLEDGER_REWRITE"):
        GOLDEN.write_text(got)
    assert got == GOLDEN.read_text(), "transcript changed; review and rewrite with DLEDGER_REWRITE=1"

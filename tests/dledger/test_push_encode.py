"""The PUSH bodies' byte templates (PushEntryRequest/PushEntryResponse.encode) write exactly what
the generic fastjson form writes: ``to_json`` serialized with sorted keys, nulls left out."""

from __future__ import annotations

import random

import orjson
import pytest

from dledger.entry import DLedgerEntry
from dledger.protocol import Message, PushEntryRequest, PushEntryResponse, PushType, message_from_json

IDS = [None, "n0", "RaftNode00", 'odd "q\\uote" \u00e9\u4e2d']


def _generic(m: Message) -> bytes:
    return orjson.dumps(m.to_json(), option=orjson.OPT_SORT_KEYS)


def _entry(r: random.Random, index: int) -> DLedgerEntry:
    body = bytes(r.randrange(256) for _ in range(r.randrange(64)))
    return DLedgerEntry(index, r.randrange(9), body, r.randrange(1 << 40), 1, r.randrange(3), r.randrange(-9, 9),
                        r.randrange(1 << 31))


@pytest.mark.parametrize("seed", range(40))
def test_request_template_equals_generic(seed):
    r = random.Random(seed)
    for _ in range(50):
        entry = _entry(r, r.randrange(100)) if r.random() < 0.6 else None
        batch = [_entry(r, i) for i in range(r.randrange(4))] if entry is None or r.random() < 0.2 else []
        m = PushEntryRequest(group=r.choice(IDS), remote_id=r.choice(IDS), local_id=r.choice(IDS),
                             leader_id=r.choice(IDS), term=r.randrange(-1, 1 << 40), commit_index=r.randrange(-1, 99),
                             type=r.choice([None, *PushType]), entry=entry, batch_entry=batch,
                             code=r.choice([200, 406]))
        assert m.encode() == _generic(m)
        if None not in (m.group, m.remote_id, m.local_id, m.leader_id, m.type):
            # and it reads back as the same request
            assert message_from_json(51004, False, orjson.loads(m.encode())).encode() == m.encode()


@pytest.mark.parametrize("seed", range(20))
def test_response_template_equals_generic(seed):
    r = random.Random(seed)
    for _ in range(50):
        m = PushEntryResponse(group=r.choice(IDS), remote_id=r.choice(IDS), local_id=r.choice(IDS),
                              leader_id=r.choice(IDS), term=r.randrange(-1, 99), index=r.choice([None, -1, 7]),
                              begin_index=r.randrange(-1, 9), end_index=r.randrange(-1, 9), count=r.randrange(3),
                              code=r.choice([200, 406, 413]))
        assert m.encode() == _generic(m)


def test_entry_json_bytes_follow_a_moved_entry():
    e = DLedgerEntry(3, 1, b"abc", 100)
    first = e.json_bytes()
    assert first == orjson.dumps(e.to_json(), option=orjson.OPT_SORT_KEYS)
    e.pos = 200  # an entry rewritten at another position (a follower's reset) must not keep the old bytes
    assert orjson.loads(e.json_bytes())["pos"] == 200


def test_non_int_fields_take_the_generic_path():
    m = PushEntryRequest(group="g", term=True, commit_index=2, entry=DLedgerEntry(1, 1, b"x", 0))
    assert m.encode() == _generic(m)
    resp = PushEntryResponse(group="g", term=1, begin_index=False)
    assert resp.encode() == _generic(resp)

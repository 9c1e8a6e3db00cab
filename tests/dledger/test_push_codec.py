"""The binary PUSH form (dledger/push_codec.py): the same messages as the JSON form, malformed
bodies refused with ValueError, and the per-peer negotiation between real servers."""

from __future__ import annotations

import os

import pytest

from dledger.entry import DLedgerEntry
from dledger.protocol import PushEntryRequest, PushEntryResponse, PushType, message_from_json
from dledger.push_codec import (
    decode_push_request,
    decode_push_response,
    encode_entries,
    encode_push_request,
    encode_push_response,
)
from remoting import fastjson
from tests.dledger.test_server import Member, configs, leader_of, stop_all
from tests.support import async_wait_until


def _entry(i: int, body: bytes = b"", **kw) -> DLedgerEntry:
    return DLedgerEntry(i, 3, body, 1000 + 200 * i, **kw)


REQUESTS = [
    PushEntryRequest(group="g", remote_id="n1", local_id="n0", leader_id="n0", term=3, commit_index=4,
                     type=PushType.APPEND, entry=_entry(5, os.urandom(100))),
    PushEntryRequest(group="g", remote_id="n2", local_id="n0", leader_id="n0", term=7, commit_index=-1,
                     type=PushType.APPEND, batch_entry=[_entry(i, os.urandom(i * 10)) for i in range(6, 10)]),
    PushEntryRequest(group="grp-ü", remote_id="n1", local_id="n0", leader_id=None, term=1, commit_index=9,
                     type=PushType.COMMIT),
    PushEntryRequest(group="g", remote_id="n1", local_id="n0", leader_id="n0", term=2, commit_index=0,
                     type=PushType.COMPARE, entry=_entry(0, b"", magic=1, channel=2, chain_crc=-3, body_crc=4)),
    PushEntryRequest(group="g", remote_id=None, local_id=None, leader_id="n0", term=2, commit_index=0,
                     type=PushType.TRUNCATE, entry=_entry(1, b"\x00" * 48), code=406),
]
RESPONSES = [
    PushEntryResponse(group="g", remote_id="n0", local_id="n1", leader_id="n0", term=3, code=200, index=5,
                      begin_index=0, end_index=5, count=4),
    PushEntryResponse(group="g", remote_id=None, local_id="n1", leader_id=None, term=-1, code=406, index=None,
                      begin_index=-1, end_index=-1, count=0),
]


@pytest.mark.parametrize("m", REQUESTS, ids=lambda m: m.type.value)
def test_request_same_message_as_json(m):
    via_json = message_from_json(51004, False, fastjson.loads(m.encode()))
    got = decode_push_request(encode_push_request(m))
    assert got.to_json() == via_json.to_json()
    assert [e.body for e in got.batch_entry] == [e.body for e in m.batch_entry]
    if m.entry is not None:
        assert got.entry.same_as(m.entry) and got.entry.chain_crc == m.entry.chain_crc


def test_request_with_entries_encoded_once():
    m = REQUESTS[1]
    assert encode_push_request(m, encode_entries(m.batch_entry)) == encode_push_request(m)
    # the entries travel in their data-file layout
    assert encode_entries(m.batch_entry) == b"".join(e.encode() for e in m.batch_entry)


@pytest.mark.parametrize("m", RESPONSES, ids=["success", "nulls"])
def test_response_same_message_as_json(m):
    via_json = message_from_json(51004, True, fastjson.loads(m.encode()))
    assert decode_push_response(encode_push_response(m)).to_json() == via_json.to_json()


@pytest.mark.parametrize("blob,decode", [(encode_push_request(REQUESTS[1]), decode_push_request),
                                         (encode_push_request(REQUESTS[3]), decode_push_request),
                                         (encode_push_response(RESPONSES[0]), decode_push_response)])
def test_malformed_bodies_are_refused(blob, decode):
    for n in range(len(blob)):
        with pytest.raises(ValueError):
            decode(blob[:n])
    with pytest.raises(ValueError):
        decode(blob + b"\x00")
    with pytest.raises(ValueError):
        decode(b"\x02" + blob[1:])  # an unknown version


def test_entry_size_mismatch_is_refused():
    blob = bytearray(encode_push_request(REQUESTS[0]))
    head = len(blob) - REQUESTS[0].entry.size
    blob[head + 4 : head + 8] = (REQUESTS[0].entry.size + 1).to_bytes(4, "big")  # the entry's size field
    with pytest.raises(ValueError, match="size"):
        decode_push_request(bytes(blob))


async def _replicated(members, n, tag):
    ld = await async_wait_until(lambda: leader_of(members), timeout=15, what="one leader")
    last = 0
    for i in range(n):
        last, _ = await ld.server.append(b"%s-%d" % (tag, i))
    await async_wait_until(lambda: all(m.server.committed_index >= last for m in members), timeout=15,
                           what="all members commit")
    for m in members:
        assert m.server.get_entry(last).body == b"%s-%d" % (tag, n - 1)
    return ld


@pytest.mark.timeout(90)
async def test_binary_push_negotiated_per_peer_and_dropped_when_a_peer_stops_speaking_it(tmp_path):
    cfgs = configs(tmp_path)
    cfgs[2].enableBinaryPush = False  # answers like a Java member: no mark, JSON only
    members = [Member(c, k) for k, c in enumerate(cfgs)]
    for m in members:
        await m.server.start()
    try:
        ld = await async_wait_until(lambda: leader_of(members), timeout=15, what="one leader")
        if ld is members[2]:  # the test needs a leader that speaks the binary form
            await ld.server.transfer_leadership("n0")
            await async_wait_until(lambda: leader_of(members) is members[0], timeout=15, what="n0 leads")
        ld = await _replicated(members, 20, b"a")
        other = next(m for m in members[:2] if m is not ld)
        assert ld.server.binary_peers == {other.cfg.selfId}
        # a member that spoke binary comes back without it: the leader goes back to JSON for it
        await other.server.stop()
        other.cfg.enableBinaryPush = False
        again = Member(other.cfg, 77)
        members = [m for m in members if m is not other] + [again]
        await again.server.start()
        ld = await _replicated(members, 5, b"b")
        assert ld.server.binary_peers == frozenset()
    finally:
        await stop_all(members)

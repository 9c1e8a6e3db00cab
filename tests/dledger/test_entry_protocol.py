"""DLedgerEntry bytes and the JSON bodies of DLedger RPCs."""

from __future__ import annotations

import struct

import pytest

from common.config import ConfigError, apply_properties
from dledger.config import DLedgerConfig, parse_peers
from dledger.entry import DLedgerEntry, EntryFormatError, decode_index_unit, encode_index_unit
from dledger.member_state import load_term_file, save_term_file
from dledger.protocol import (
    DLedgerError,
    Message,
    PushEntryRequest,
    PushEntryResponse,
    PushType,
    VoteResponse,
    VoteResult,
    message_from_json,
)
from dledger.protocol import DLedgerResponseCode as C
from remoting import fastjson


def test_entry_encode_decode_roundtrip_and_layout():
    e = DLedgerEntry(index=7, term=3, body=b"abc", pos=4096)
    raw = e.encode()
    assert len(raw) == e.size == 51
    assert struct.unpack(">iiqqqiiii", raw[:48]) == (1, 51, 7, 3, 4096, 0, 0, 0, 3)
    assert DLedgerEntry.decode(raw) == e
    assert decode_index_unit(encode_index_unit(e)) == (1, 4096, 51, 7, 3)
    with pytest.raises(EntryFormatError):
        DLedgerEntry.decode(raw[:40])
    bad = bytearray(raw)
    struct.pack_into(">i", bad, 4, 99)
    with pytest.raises(EntryFormatError):
        DLedgerEntry.decode(bytes(bad))


def test_push_request_json_matches_fastjson_names():
    req = PushEntryRequest(
        group="g", remote_id="n1", local_id="n0", leader_id="n0", term=4, commit_index=9,
        type=PushType.APPEND, entry=DLedgerEntry(10, 4, b"\x00\x01", pos=480),
    )  # fmt: skip
    j = req.to_json()
    assert j["type"] == "APPEND" and j["commitIndex"] == 9 and j["remoteId"] == "n1"
    assert j["entry"] == {
        "body": "AAE=", "bodyCrc": 0, "chainCrc": 0, "channel": 0, "index": 10,
        "magic": 1, "pos": 480, "size": 50, "term": 4,
    }  # fmt: skip
    # fastjson's derived getters are ignored when reading
    j.update({"batch": False, "count": 1, "firstEntryIndex": 10, "lastEntryIndex": 10, "totalSize": 50})
    back = message_from_json(51004, False, j)
    assert isinstance(back, PushEntryRequest) and back.entry == req.entry and back.commit_index == 9


def test_vote_response_json_and_unknown_code():
    r = message_from_json(
        51001, True, {"group": "g", "term": 5, "code": 200, "voteResult": "REJECT_ALREADY_VOTED"}
    )
    assert isinstance(r, VoteResponse) and r.vote_result is VoteResult.REJECT_ALREADY_VOTED and r.term == 5
    with pytest.raises(DLedgerError):
        message_from_json(12345, False, {})


def test_config_peers_and_properties():
    c = apply_properties(DLedgerConfig(), {"selfId": "n1", "peers": "n0-127.0.0.1:4001;n1-127.0.0.1:4002"})
    assert c.peer_map() == {"n0": "127.0.0.1:4001", "n1": "127.0.0.1:4002"}
    assert c.ticks(2000) == 200 and c.ticks(1) == 1
    with pytest.raises(ConfigError):
        parse_peers("n0localhost:1")


def test_term_file_roundtrip(tmp_path):
    assert load_term_file(str(tmp_path)) == (0, None)
    save_term_file(str(tmp_path), (4, "n2"))
    assert (tmp_path / "currterm").read_text() == "currTerm=4\nvoteLeader=n2\n"
    save_term_file(str(tmp_path), (5, None))
    assert load_term_file(str(tmp_path)) == (5, None)


def test_push_fast_paths_equal_the_generic_encoding():
    entries = [DLedgerEntry(i, 3, b"x%d" % i, pos=100 * i) for i in range(3)]
    reqs = [
        PushEntryRequest(group="g", remote_id="n1", local_id="n0", leader_id="n0", term=3, commit_index=1,
                         type=PushType.APPEND, batch_entry=entries),
        PushEntryRequest(group="g", leader_id="n0", term=3, type=PushType.COMPARE, entry=entries[0]),
        PushEntryRequest(group="g", term=3, type=PushType.COMMIT, code=C.SUCCESS),
    ]  # fmt: skip
    resps = [
        PushEntryResponse(group="g", remote_id="n0", local_id="n1", term=3, code=C.INCONSISTENT_STATE,
                          index=7, begin_index=0, end_index=5, count=2),
        PushEntryResponse(group="g", term=3),
    ]  # fmt: skip
    for m in [*reqs, *resps]:
        fast = m.to_json()
        assert fast == Message.to_json(m)
        assert type(m).from_json(fast) == Message.from_json.__func__(type(m), fast)
        back = type(m).from_json(fastjson.loads(m.encode()))
        assert back == m
        assert isinstance(back.code, int) and fastjson.loads(m.encode())["code"] == int(m.code)
    # a body without the optional keys still parses (defaults as the dataclass gives them)
    assert PushEntryRequest.from_json({"type": "COMMIT"}) == Message.from_json.__func__(
        PushEntryRequest, {"type": "COMMIT"})

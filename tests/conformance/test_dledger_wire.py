"""DLedger RPC codes and JSON bodies (dledger.md §8, §8.1, §8.2), transcribed by hand."""

from __future__ import annotations

import orjson
import pytest

from dledger.entry import DLedgerEntry
from dledger.protocol import (
    DLedgerResponseCode,
    HeartBeatRequest,
    LeadershipTransferRequest,
    ParseResult,
    PushEntryRequest,
    PushEntryResponse,
    PushType,
    RequestCode,
    VoteRequest,
    VoteResponse,
    VoteResult,
)
from store.dledger_commit_log import put_status_for

CODES = {"METADATA": 50000, "APPEND": 50001, "GET": 50002, "VOTE": 51001, "HEART_BEAT": 51002, "PULL": 51003,
         "PUSH": 51004, "LEADERSHIP_TRANSFER": 51005}
RESPONSE_CODES = {
    "UNKNOWN": -1, "SUCCESS": 200, "TIMEOUT": 300, "METADATA_ERROR": 301, "NETWORK_ERROR": 302, "UNSUPPORTED": 303,
    "UNKNOWN_GROUP": 400, "UNKNOWN_MEMBER": 401, "UNEXPECTED_MEMBER": 402, "EXPIRED_TERM": 403, "NOT_LEADER": 404,
    "NOT_FOLLOWER": 405, "INCONSISTENT_STATE": 406, "INCONSISTENT_TERM": 407, "INCONSISTENT_INDEX": 408,
    "INCONSISTENT_LEADER": 409, "INDEX_OUT_OF_RANGE": 410, "UNEXPECTED_ARGUMENT": 411, "REPEATED_REQUEST": 412,
    "REPEATED_PUSH": 413, "DISK_ERROR": 414, "DISK_FULL": 415, "TERM_NOT_READY": 416, "FALL_BEHIND_TOO_MUCH": 417,
    "TAKE_LEADERSHIP_FAILED": 418, "INDEX_LESS_THAN_LOCAL_BEGIN": 419, "REQUEST_WITH_EMPTY_BODYS": 420,
    "PUSH_REQUEST_IS_FULL": 421, "INTERNAL_ERROR": 500, "TERM_CHANGED": 501, "WAIT_QUORUM_ACK_TIMEOUT": 502,
    "LEADER_PENDING_FULL": 503, "ILLEGAL_MEMBER_STATE": 504, "LEADER_NOT_READY": 505, "LEADER_TRANSFERRING": 506,
}
VOTE_RESULTS = ["UNKNOWN", "ACCEPT", "REJECT_UNKNOWN_LEADER", "REJECT_UNEXPECTED_LEADER", "REJECT_EXPIRED_VOTE_TERM",
                "REJECT_ALREADY_VOTED", "REJECT_ALREADY_HAS_LEADER", "REJECT_TERM_NOT_READY",
                "REJECT_TERM_SMALL_THAN_LEDGER", "REJECT_EXPIRED_LEDGER_TERM", "REJECT_SMALL_LEDGER_END_INDEX",
                "REJECT_TAKING_LEADERSHIP"]
COMMON = {"group", "remoteId", "localId", "code", "leaderId", "term"}
ENTRY_KEYS = {"body", "bodyCrc", "chainCrc", "channel", "index", "magic", "pos", "size", "term"}


def test_request_codes():
    assert {c.name: int(c) for c in RequestCode} == CODES


def test_response_codes():
    assert {c.name: int(c) for c in DLedgerResponseCode} == RESPONSE_CODES


def test_enum_names():
    assert [r.value for r in VoteResult] == VOTE_RESULTS
    assert {p.value for p in ParseResult} == {"WAIT_TO_REVOTE", "REVOTE_IMMEDIATELY", "PASSED", "WAIT_TO_VOTE_NEXT"}
    assert {t.value for t in PushType} == {"APPEND", "COMMIT", "COMPARE", "TRUNCATE"}


def _keys(msg) -> set[str]:
    return set(orjson.loads(msg.encode()))


def _full(cls, **kw):
    return cls(group="g", remote_id="n1", local_id="n0", leader_id="n0", term=3, **kw)


@pytest.mark.parametrize("cls,extra,kw", [
    (VoteRequest, {"ledgerEndIndex", "ledgerEndTerm"}, {"ledger_end_index": 5, "ledger_end_term": 2}),
    (VoteResponse, {"voteResult"}, {"vote_result": VoteResult.ACCEPT}),
    (HeartBeatRequest, set(), {}),
    (LeadershipTransferRequest, {"transferId", "transfereeId", "takeLeadershipLedgerIndex"},
     {"transfer_id": "n0", "transferee_id": "n1", "take_leadership_ledger_index": 9}),
    (PushEntryResponse, {"index", "beginIndex", "endIndex", "count"}, {"index": 4}),
])
def test_message_json_keys(cls, extra, kw):
    assert _keys(_full(cls, **kw)) == COMMON | extra


def test_vote_result_written_by_name():
    body = orjson.loads(_full(VoteResponse, vote_result=VoteResult.REJECT_ALREADY_VOTED).encode())
    assert body["voteResult"] == "REJECT_ALREADY_VOTED" and body["code"] == 200


def test_push_entry_request_json():
    e = DLedgerEntry(index=7, term=3, body=b"abc", pos=0)
    body = orjson.loads(_full(PushEntryRequest, commit_index=6, type=PushType.APPEND, entry=e).encode())
    assert set(body) >= COMMON | {"commitIndex", "type", "entry"}
    assert body["type"] == "APPEND" and set(body["entry"]) == ENTRY_KEYS and body["entry"]["body"] == "YWJj"
    # A Java leader's push carries derived getters (batch, count, ...): readers ignore them.
    java = dict(body, batch=False, count=1, firstEntryIndex=7, lastEntryIndex=7, totalSize=3, batchEntry=[])
    back = PushEntryRequest.from_json(java)
    assert back.entry.body == b"abc" and back.commit_index == 6 and back.type is PushType.APPEND
    batch = orjson.loads(_full(PushEntryRequest, type=PushType.APPEND, batch_entry=[e, e]).encode())
    assert len(batch["batchEntry"]) == 2


# dledger.md §8.2, transcribed.
PUT_MAP = {"SUCCESS": "PUT_OK", "INCONSISTENT_LEADER": "SERVICE_NOT_AVAILABLE", "NOT_LEADER": "SERVICE_NOT_AVAILABLE",
           "LEADER_NOT_READY": "SERVICE_NOT_AVAILABLE", "DISK_FULL": "SERVICE_NOT_AVAILABLE",
           "WAIT_QUORUM_ACK_TIMEOUT": "OS_PAGECACHE_BUSY", "LEADER_PENDING_FULL": "OS_PAGECACHE_BUSY"}


@pytest.mark.parametrize("code", list(DLedgerResponseCode), ids=lambda c: c.name)
def test_put_result_mapping(code):
    assert put_status_for(int(code)).name == PUT_MAP.get(code.name, "UNKNOWN_ERROR")

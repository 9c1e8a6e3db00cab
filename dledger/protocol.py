"""DLedger RPC vocabulary: request codes, response codes, vote results and the messages.

Messages are plain dataclasses with DLedger's field meanings; ``to_json`` /
``from_json`` give the fastjson bodies of spec dledger.md §8. Three fields are
not on the wire and exist for the core and its driver: ``frm``/``to`` (who sends
to whom) and ``rid`` (request id: a response carries the id of the request it
answers, as the remoting ``opaque`` does).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import orjson

from common.errors import RocketMQError
from dledger.entry import DLedgerEntry

__all__ = [
    "RequestCode",
    "DLedgerResponseCode",
    "VoteResult",
    "ParseResult",
    "PushType",
    "Role",
    "DLedgerError",
    "Message",
    "VoteRequest",
    "VoteResponse",
    "HeartBeatRequest",
    "HeartBeatResponse",
    "PushEntryRequest",
    "PushEntryResponse",
    "LeadershipTransferRequest",
    "LeadershipTransferResponse",
    "message_from_json",
]


class RequestCode(enum.IntEnum):
    """DLedger remoting request codes (spec §8)."""

    METADATA = 50000
    APPEND = 50001
    GET = 50002
    VOTE = 51001
    HEART_BEAT = 51002
    PULL = 51003
    PUSH = 51004
    LEADERSHIP_TRANSFER = 51005


class DLedgerResponseCode(enum.IntEnum):
    """The ``code`` field carried inside every DLedger response body (spec §8.1)."""

    UNKNOWN = -1
    SUCCESS = 200
    TIMEOUT = 300
    METADATA_ERROR = 301
    NETWORK_ERROR = 302
    UNSUPPORTED = 303
    UNKNOWN_GROUP = 400
    UNKNOWN_MEMBER = 401
    UNEXPECTED_MEMBER = 402
    EXPIRED_TERM = 403
    NOT_LEADER = 404
    NOT_FOLLOWER = 405
    INCONSISTENT_STATE = 406
    INCONSISTENT_TERM = 407
    INCONSISTENT_INDEX = 408
    INCONSISTENT_LEADER = 409
    INDEX_OUT_OF_RANGE = 410
    UNEXPECTED_ARGUMENT = 411
    REPEATED_REQUEST = 412
    REPEATED_PUSH = 413
    DISK_ERROR = 414
    DISK_FULL = 415
    TERM_NOT_READY = 416
    FALL_BEHIND_TOO_MUCH = 417
    TAKE_LEADERSHIP_FAILED = 418
    INDEX_LESS_THAN_LOCAL_BEGIN = 419
    REQUEST_WITH_EMPTY_BODYS = 420
    PUSH_REQUEST_IS_FULL = 421
    INTERNAL_ERROR = 500
    TERM_CHANGED = 501
    WAIT_QUORUM_ACK_TIMEOUT = 502
    LEADER_PENDING_FULL = 503
    ILLEGAL_MEMBER_STATE = 504
    LEADER_NOT_READY = 505
    LEADER_TRANSFERRING = 506


class VoteResult(enum.Enum):
    """VoteResponse.RESULT."""

    UNKNOWN = "UNKNOWN"
    ACCEPT = "ACCEPT"
    REJECT_UNKNOWN_LEADER = "REJECT_UNKNOWN_LEADER"
    REJECT_UNEXPECTED_LEADER = "REJECT_UNEXPECTED_LEADER"
    REJECT_EXPIRED_VOTE_TERM = "REJECT_EXPIRED_VOTE_TERM"
    REJECT_ALREADY_VOTED = "REJECT_ALREADY_VOTED"
    REJECT_ALREADY_HAS_LEADER = "REJECT_ALREADY_HAS_LEADER"
    REJECT_TERM_NOT_READY = "REJECT_TERM_NOT_READY"
    REJECT_TERM_SMALL_THAN_LEDGER = "REJECT_TERM_SMALL_THAN_LEDGER"
    REJECT_EXPIRED_LEDGER_TERM = "REJECT_EXPIRED_LEDGER_TERM"
    REJECT_SMALL_LEDGER_END_INDEX = "REJECT_SMALL_LEDGER_END_INDEX"
    REJECT_TAKING_LEADERSHIP = "REJECT_TAKING_LEADERSHIP"


class ParseResult(enum.Enum):
    """VoteResponse.ParseResult: the outcome of counting one vote round."""

    WAIT_TO_REVOTE = "WAIT_TO_REVOTE"
    REVOTE_IMMEDIATELY = "REVOTE_IMMEDIATELY"
    PASSED = "PASSED"
    WAIT_TO_VOTE_NEXT = "WAIT_TO_VOTE_NEXT"


class PushType(enum.Enum):
    """PushEntryRequest.Type."""

    APPEND = "APPEND"
    COMMIT = "COMMIT"
    COMPARE = "COMPARE"
    TRUNCATE = "TRUNCATE"


# Plain dicts for the PUSH hot path: an enum's call and its ``value`` property cost a few
# Python frames per push; a dict lookup costs none.
_PUSH_TYPE_OF = {t.value: t for t in PushType}
_PUSH_TYPE_VALUE = {t: t.value for t in PushType}


class Role(enum.Enum):
    """MemberState.Role."""

    UNKNOWN = "UNKNOWN"
    CANDIDATE = "CANDIDATE"
    LEADER = "LEADER"
    FOLLOWER = "FOLLOWER"


class DLedgerError(RocketMQError):
    """A DLedger precondition failed; ``code`` is the DLedgerResponseCode to report."""

    def __init__(self, code: DLedgerResponseCode, msg: str = ""):
        super().__init__(f"{code.name}: {msg}" if msg else code.name)
        self.code = code


# JSON key for each python attribute that differs from a plain camelCase rename.
def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.capitalize() for p in rest)


_NOT_WIRE = {"frm", "to", "rid"}
_K_LIST = "list"
_K_OBJ = "obj"
_K_INT = "int"
_WIRE_CACHE: dict[type, tuple[tuple[str, str, str | None], ...]] = {}
# fields whose value is an int or a str: copied as is (the hot path does no type tests on them)
_PLAIN_TYPES = {"str", "str | None", "bool", "bool | None"}
_INT_TYPES = {"int", "int | None"}  # int(v): an IntEnum code goes out as its number


def _wire_fields(cls: type) -> tuple[tuple[str, str, str | None], ...]:
    """(attribute, JSON key, kind) of the wire fields of a message class, computed once:
    kind None = plain value, "list" = list of entries, "obj" = enum or entry."""
    got = _WIRE_CACHE.get(cls)
    if got is None:
        out = []
        for f in fields(cls):
            if f.name in _NOT_WIRE:
                continue
            t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
            if t in _PLAIN_TYPES:
                kind = None
            elif t in _INT_TYPES:
                kind = _K_INT
            else:
                kind = _K_LIST if t.startswith("list") else _K_OBJ
            out.append((f.name, _camel(f.name), kind))
        got = _WIRE_CACHE[cls] = tuple(out)
    return got


@dataclass(slots=True, kw_only=True)
class Message:
    """RequestOrResponse: the fields every DLedger request and response carries."""

    CODE: ClassVar[RequestCode]
    IS_RESPONSE: ClassVar[bool] = False

    group: str = ""
    remote_id: str | None = None
    local_id: str | None = None
    code: int = DLedgerResponseCode.SUCCESS
    leader_id: str | None = None
    term: int = -1
    frm: str = ""
    to: str = ""
    rid: int = 0

    def to_json(self) -> dict:
        """The fastjson body (nulls omitted, as fastjson does by default)."""
        out: dict = {}
        for name, key, kind in _wire_fields(type(self)):
            v = getattr(self, name)
            if v is None:
                continue
            if kind is not None:
                if kind is _K_INT:
                    v = int(v)
                elif kind is _K_LIST:
                    if not v:
                        out[key] = []
                        continue
                    v = [e.to_json() if isinstance(e, DLedgerEntry) else e for e in v]
                elif isinstance(v, enum.Enum):
                    v = v.value if isinstance(v.value, str) else int(v)
                elif isinstance(v, DLedgerEntry):
                    v = v.to_json()
            out[key] = v
        return out

    @classmethod
    def from_json(cls, d: dict) -> Message:
        """Parse a fastjson body; unknown keys (fastjson's derived getters) are ignored."""
        kwargs = {}
        parse = cls._parse_field
        for name, key, kind in _wire_fields(cls):
            if key in d:
                v = d[key]
                kwargs[name] = parse(name, v) if kind is _K_OBJ or kind is _K_LIST else v
        return cls(**kwargs)

    def encode(self) -> bytes:
        """The request or response body on the wire: JSON with the keys sorted as fastjson
        writes them (UTF-8, nulls omitted)."""
        return orjson.dumps(self.to_json(), option=orjson.OPT_SORT_KEYS)

    @classmethod
    def _parse_field(cls, name: str, v):
        return v

    def reply(self, cls: type[Message], **kw) -> Message:
        """A response to this request: same group and rid, addressed back to the sender."""
        return cls(
            group=self.group,
            remote_id=self.local_id,
            local_id=self.remote_id,
            frm=self.to,
            to=self.frm,
            rid=self.rid,
            **kw,
        )


@dataclass(slots=True, kw_only=True)
class VoteRequest(Message):
    CODE: ClassVar[RequestCode] = RequestCode.VOTE
    ledger_end_index: int = -1
    ledger_end_term: int = -1
    # Not in DLedger: True asks "would you vote for me in ``term``?" (Raft thesis 9.6 pre-vote); the
    # answer changes nothing on the voter. None (a real vote) stays off the wire, so real votes are
    # byte-identical to DLedger's.
    pre_vote: bool | None = None


@dataclass(slots=True, kw_only=True)
class VoteResponse(Message):
    CODE: ClassVar[RequestCode] = RequestCode.VOTE
    IS_RESPONSE: ClassVar[bool] = True
    vote_result: VoteResult = VoteResult.UNKNOWN

    @classmethod
    def _parse_field(cls, name, v):
        return VoteResult(v) if name == "vote_result" else v


@dataclass(slots=True, kw_only=True)
class HeartBeatRequest(Message):
    CODE: ClassVar[RequestCode] = RequestCode.HEART_BEAT


@dataclass(slots=True, kw_only=True)
class HeartBeatResponse(Message):
    CODE: ClassVar[RequestCode] = RequestCode.HEART_BEAT
    IS_RESPONSE: ClassVar[bool] = True


@dataclass(slots=True, kw_only=True)
class PushEntryRequest(Message):
    CODE: ClassVar[RequestCode] = RequestCode.PUSH
    commit_index: int = -1
    type: PushType = PushType.APPEND
    entry: DLedgerEntry | None = None
    batch_entry: list[DLedgerEntry] = field(default_factory=list)

    @property
    def first_index(self) -> int:
        if self.batch_entry:
            return self.batch_entry[0].index
        return self.entry.index if self.entry is not None else -1

    @property
    def count(self) -> int:
        return len(self.batch_entry) if self.batch_entry else (1 if self.entry is not None else 0)

    @classmethod
    def _parse_field(cls, name, v):
        if name == "type":
            return PushType(v)
        if name == "entry":
            return DLedgerEntry.from_json(v) if v is not None else None
        if name == "batch_entry":
            return [DLedgerEntry.from_json(e) for e in v] if v else []
        return v

    # The replication hot path: field by field (same result as Message.to_json/from_json).
    def to_json(self) -> dict:
        out = _common_json(self)
        out["commitIndex"] = self.commit_index
        if self.type is not None:
            out["type"] = _PUSH_TYPE_VALUE[self.type]
        if self.entry is not None:
            out["entry"] = self.entry.to_json()
        if self.batch_entry is not None:
            out["batchEntry"] = [e.to_json() for e in self.batch_entry]
        return out

    @classmethod
    def from_json(cls, d: dict) -> PushEntryRequest:
        g = d.get
        e = g("entry")
        batch = g("batchEntry")
        return cls(
            **_common_kwargs(g),
            commit_index=g("commitIndex", -1),
            type=_push_type(d["type"]) if "type" in d else PushType.APPEND,
            entry=DLedgerEntry.from_json(e) if e is not None else None,
            batch_entry=[DLedgerEntry.from_json(x) for x in batch] if batch else [],
        )


def _common_json(m: Message) -> dict:
    """The RequestOrResponse fields of a PUSH message, written field by field for the hot path."""
    out: dict = {"code": int(m.code), "term": m.term}
    if m.group is not None:
        out["group"] = m.group
    if m.remote_id is not None:
        out["remoteId"] = m.remote_id
    if m.local_id is not None:
        out["localId"] = m.local_id
    if m.leader_id is not None:
        out["leaderId"] = m.leader_id
    return out


def _common_kwargs(g: Callable[..., Any]) -> dict:
    """The RequestOrResponse fields of a PUSH body (``g`` is its dict's ``get``)."""
    return {
        "group": g("group", ""),
        "remote_id": g("remoteId"),
        "local_id": g("localId"),
        "code": g("code", DLedgerResponseCode.SUCCESS),
        "leader_id": g("leaderId"),
        "term": g("term", -1),
    }


def _push_type(v) -> PushType:
    t = _PUSH_TYPE_OF.get(v) if type(v) is str else None
    return t if t is not None else PushType(v)  # PushType(v) raises ValueError for an unknown type


@dataclass(slots=True, kw_only=True)
class PushEntryResponse(Message):
    CODE: ClassVar[RequestCode] = RequestCode.PUSH
    IS_RESPONSE: ClassVar[bool] = True
    index: int | None = None
    begin_index: int = -1
    end_index: int = -1
    count: int = 1

    def to_json(self) -> dict:
        out = _common_json(self)
        out["beginIndex"] = self.begin_index
        out["count"] = self.count
        out["endIndex"] = self.end_index
        if self.index is not None:
            out["index"] = self.index
        return out

    @classmethod
    def from_json(cls, d: dict) -> PushEntryResponse:
        g = d.get
        return cls(
            **_common_kwargs(g),
            index=g("index"),
            begin_index=g("beginIndex", -1),
            end_index=g("endIndex", -1),
            count=g("count", 1),
        )


@dataclass(slots=True, kw_only=True)
class LeadershipTransferRequest(Message):
    CODE: ClassVar[RequestCode] = RequestCode.LEADERSHIP_TRANSFER
    transfer_id: str | None = None
    transferee_id: str | None = None
    take_leadership_ledger_index: int = -1


@dataclass(slots=True, kw_only=True)
class LeadershipTransferResponse(Message):
    CODE: ClassVar[RequestCode] = RequestCode.LEADERSHIP_TRANSFER
    IS_RESPONSE: ClassVar[bool] = True


_BY_CODE = {
    (cls.CODE, cls.IS_RESPONSE): cls
    for cls in (
        VoteRequest,
        VoteResponse,
        HeartBeatRequest,
        HeartBeatResponse,
        PushEntryRequest,
        PushEntryResponse,
        LeadershipTransferRequest,
        LeadershipTransferResponse,
    )
}


def message_from_json(code: int, is_response: bool, body: dict) -> Message:
    """Build the message class for DLedger request ``code`` from its JSON body."""
    # IntEnum members hash and compare as their ints: a plain int finds its class without RequestCode(code)
    cls = _BY_CODE.get((code, is_response))
    if cls is None:
        raise DLedgerError(DLedgerResponseCode.UNSUPPORTED, f"request code {code}")
    return cls.from_json(body)

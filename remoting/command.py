"""RemotingCommand: one request or response of the RocketMQ remoting protocol.

A plain data object (no wire encoding here; see :mod:`remoting.codec`). Custom
headers travel as ``ext_fields`` (string to string); typed access goes through
``decode_header(SomeHeader)`` and ``request(code, SomeHeader(...))``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, TypeVar

from remoting.codes import CURRENT_VERSION, RPC_ONEWAY, RPC_TYPE_RESPONSE, LanguageCode, SerializeType
from remoting.header import CommandHeader

__all__ = ["RemotingCommand", "next_opaque", "ext_fields_of"]

H = TypeVar("H", bound=CommandHeader)

_JAVA = LanguageCode.JAVA
_JSON = SerializeType.JSON

Body = bytes | bytearray | memoryview

# Process-wide request id, as Java's static AtomicInteger. Kept non-negative:
# it wraps after 2**31 requests.
_opaque_counter = itertools.count()


def next_opaque() -> int:
    """A fresh request id for this process."""
    return next(_opaque_counter) & 0x7FFFFFFF


def _java_str(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def ext_fields_of(header: CommandHeader | Mapping[str, Any] | None) -> dict[str, str] | None:
    """extFields for a typed header or a plain mapping (values written as Java's toString; None dropped)."""
    if header is None:
        return None
    if isinstance(header, CommandHeader):
        return header.to_ext_fields()
    return {str(k): _java_str(v) for k, v in header.items() if v is not None}


class RemotingCommand:
    """One frame's content: code, flags, opaque, remark, extFields and body.

    ``body`` of a decoded command is ``bytes``; a command to send may carry any
    bytes-like body, which is written without a copy.
    """

    __slots__ = ("code", "language", "version", "opaque", "flag", "remark", "ext_fields", "body", "serialize_type")

    def __init__(
        self,
        code: int = 0,
        *,
        language: int = LanguageCode.JAVA,
        version: int = CURRENT_VERSION,
        opaque: int = 0,
        flag: int = 0,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: Body | None = None,
        serialize_type: int = SerializeType.JSON,
    ):
        self.code = code
        self.language = language
        self.version = version
        self.opaque = opaque
        self.flag = flag
        self.remark = remark
        self.ext_fields = ext_fields
        self.body = body
        self.serialize_type = serialize_type

    # -- constructors --------------------------------------------------------------

    @classmethod
    def request(
        cls,
        code: int,
        header: CommandHeader | Mapping[str, Any] | None = None,
        body: Body | None = None,
        *,
        oneway: bool = False,
        serialize_type: int = SerializeType.JSON,
    ) -> RemotingCommand:
        """A new request with a fresh opaque."""
        return _filled(
            _new(cls), code, next_opaque(), RPC_ONEWAY if oneway else 0, None, header, body, serialize_type
        )

    @classmethod
    def response(
        cls,
        code: int,
        remark: str | None = None,
        header: CommandHeader | Mapping[str, Any] | None = None,
        body: Body | None = None,
    ) -> RemotingCommand:
        """A response not yet tied to a request; a server handler may return it (opaque is filled in)."""
        return _filled(_new(cls), code, 0, RPC_TYPE_RESPONSE, remark, header, body, _JSON)

    def response_to(
        self,
        code: int,
        remark: str | None = None,
        header: CommandHeader | Mapping[str, Any] | None = None,
        body: Body | None = None,
    ) -> RemotingCommand:
        """A response to this request: same opaque and serialize type, response flag set."""
        return _filled(
            _new(RemotingCommand), code, self.opaque, RPC_TYPE_RESPONSE, remark, header, body, self.serialize_type
        )

    # -- accessors -------------------------------------------------------------------

    def decode_header(self, header_cls: type[H]) -> H:
        """Typed custom header; raises ``remoting.header.HeaderError`` for a missing required field."""
        return header_cls.from_ext_fields(self.ext_fields)

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_TYPE_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY)

    def mark_oneway(self) -> RemotingCommand:
        """Set the oneway bit (returns self)."""
        self.flag |= RPC_ONEWAY
        return self

    def mark_response(self) -> RemotingCommand:
        """Set the response bit (returns self)."""
        self.flag |= RPC_TYPE_RESPONSE
        return self

    def add_ext_field(self, key: str, value: Any) -> None:
        """Add one extFields entry (value written as Java's toString)."""
        if self.ext_fields is None:
            self.ext_fields = {}
        self.ext_fields[key] = _java_str(value)

    # -- value semantics (tests, logs) -----------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RemotingCommand):
            return NotImplemented
        return (
            self.code == other.code
            and self.language == other.language
            and self.version == other.version
            and self.opaque == other.opaque
            and self.flag == other.flag
            and self.remark == other.remark
            and (self.ext_fields or None) == (other.ext_fields or None)
            and bytes(self.body or b"") == bytes(other.body or b"")
            and self.serialize_type == other.serialize_type
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        kind = "response" if self.flag & RPC_TYPE_RESPONSE else "request"
        blen = len(self.body) if self.body is not None else 0
        return (
            f"RemotingCommand({kind} code={self.code} opaque={self.opaque} flag={self.flag} "
            f"lang={self.language} version={self.version} remark={self.remark!r} "
            f"ext={self.ext_fields!r} body={blen}B stype={self.serialize_type})"
        )


_new = RemotingCommand.__new__


def _filled(
    c: RemotingCommand,
    code: int,
    opaque: int,
    flag: int,
    remark: str | None,
    header: CommandHeader | Mapping[str, Any] | None,
    body: Body | None,
    serialize_type: int,
) -> RemotingCommand:
    """A new command of ours (Java language, current version): slots filled directly, as this runs once
    per request and per response on the hot path."""
    c.code = code
    c.language = _JAVA
    c.version = CURRENT_VERSION
    c.opaque = opaque
    c.flag = flag
    c.remark = remark
    c.ext_fields = None if header is None else ext_fields_of(header)
    c.body = body
    c.serialize_type = serialize_type
    return c

"""Sans-IO frame codec for the RocketMQ remoting protocol (no asyncio, no sockets).

Frame (all big-endian)::

    int32 length          bytes after this field = 4 + headerLength + bodyLength
    uint8 serializeType   0 = JSON, 1 = ROCKETMQ (binary)
    uint24 headerLength
    header                JSON object or binary header
    body                  the rest (length implied)

:class:`FrameDecoder` turns a byte stream into :class:`RemotingCommand` objects
(every complete frame of each ``feed``), :func:`encode` turns a command into
chunks for ``transport.writelines`` without copying the body. The layouts are
declared with ``construct`` (:data:`FRAME_PREFIX`, :data:`BINARY_HEADER`, built on
first access: importing and compiling construct costs start-up time the hot path
never needs); the hot path uses equivalent precompiled ``struct`` formats (a test
checks they agree).
"""

from __future__ import annotations

import struct
from typing import Any

import orjson

from common.speedups import json_head as _json_head
from common.speedups import json_header as _json_header
from remoting.codes import CURRENT_VERSION, RPC_TYPE_RESPONSE, LanguageCode, SerializeType
from remoting.command import RemotingCommand
from remoting.errors import HeaderTextError, LocalProtocolError, RemoteProtocolError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameDecoder",
    "encode",
    "encode_bytes",
    "response_frame",
    "decode_header",
    "encode_header",
    "FRAME_PREFIX",  # noqa: F822 - built on first access (module __getattr__)
    "BINARY_HEADER",  # noqa: F822
]

#: ``com.rocketmq.remoting.frameMaxLength`` default, counted with the length field.
DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024

# -- declared layouts (construct, built on first access) ------------------------------

_LAYOUTS: dict[str, Any] = {}


def _build_layouts() -> None:
    from construct import GreedyRange, Int8ub, Int16sb, Int24ub, Int32sb, PascalString, Prefixed, Struct

    # The 8-byte frame prefix: total length, serialize type, header length.
    _LAYOUTS["FRAME_PREFIX"] = Struct(
        "length" / Int32sb,
        "serialize_type" / Int8ub,
        "header_length" / Int24ub,
    ).compile()
    ext_entry = Struct("key" / PascalString(Int16sb, "utf8"), "value" / PascalString(Int32sb, "utf8"))
    # The ROCKETMQ binary header (serialize type 1). An empty remark means null.
    _LAYOUTS["BINARY_HEADER"] = Struct(
        "code" / Int16sb,
        "language" / Int8ub,
        "version" / Int16sb,
        "opaque" / Int32sb,
        "flag" / Int32sb,
        "remark" / PascalString(Int32sb, "utf8"),
        "ext_fields" / Prefixed(Int32sb, GreedyRange(ext_entry)),
    ).compile()


def __getattr__(name: str) -> Any:
    """``FRAME_PREFIX`` (frame prefix: length, serialize type, header length) and ``BINARY_HEADER``
    (the ROCKETMQ binary header) as compiled construct Structs, built on first access."""
    if name in ("FRAME_PREFIX", "BINARY_HEADER"):
        if not _LAYOUTS:
            _build_layouts()
        return _LAYOUTS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# -- hot-path equivalents (struct) -------------------------------------------------

_PREFIX = struct.Struct(">iI")  # length, (serialize type << 24 | header length)
_LEN = struct.Struct(">i")
_WORD = struct.Struct(">I")
_BIN_FIXED = struct.Struct(">hBhii")  # code, language, version, opaque, flag
_I16 = struct.Struct(">h")
_I32 = _LEN

_LANG_NAMES: dict[int, str] = {int(m): m.name for m in LanguageCode}
_LANG_BY_NAME: dict[str, int] = {m.name: m for m in LanguageCode}
_STYPE_NAMES = {SerializeType.JSON: "JSON", SerializeType.ROCKETMQ: "ROCKETMQ"}
_JSON = int(SerializeType.JSON)
_ROCKETMQ = int(SerializeType.ROCKETMQ)
_new_command = RemotingCommand.__new__
_loads = orjson.loads
_dumps = orjson.dumps
_JSONDecodeError = orjson.JSONDecodeError
_OTHER = LanguageCode.OTHER
_INT_MIN = -(2**31)
_INT_MAX = 2**31 - 1
_LANG_JAVA = LanguageCode.JAVA


# -- decoding ------------------------------------------------------------------------


def _json_int(d: dict, key: str, default: int) -> int:
    v = d.get(key, default)
    if v is None:
        return default
    n = None
    if type(v) is int:
        n = v
    # fastjson also reads "123" and 123.0 into an int field.
    elif isinstance(v, float) and v.is_integer():
        n = int(v)
    elif isinstance(v, str):
        try:
            n = int(v.strip())
        except ValueError:
            pass
    if n is None:
        raise RemoteProtocolError(f"JSON header field {key!r} is not an integer: {v!r}")
    # The Java fields are ints: a value out of range is a malformed header there too (and would
    # make our own response unencodable).
    if not _INT_MIN <= n <= _INT_MAX:
        raise RemoteProtocolError(f"JSON header field {key!r} is out of the int range: {v!r}")
    return n


def _ext_str(v: Any) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int | float):
        return str(v)
    raise RemoteProtocolError(f"extFields value is not a string: {v!r}")


def _decode_json(raw: memoryview | bytes) -> RemotingCommand:
    # the usual header in one compiled call; the general path below for everything else
    fields = _json_header(raw, _LANG_BY_NAME)
    if fields is not None:
        cmd = _new_command(RemotingCommand)
        cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields = fields
        return cmd
    try:
        d = _loads(raw)
    except _JSONDecodeError as e:
        _refuse_non_utf8_json(raw)
        raise RemoteProtocolError(f"malformed JSON header: {e}") from None
    if type(d) is not dict:
        raise RemoteProtocolError("JSON header is not an object")
    cmd = _new_command(RemotingCommand)
    g = d.get
    v = g("code")
    cmd.code = v if type(v) is int and _INT_MIN <= v <= _INT_MAX else _json_int(d, "code", 0)
    lang = g("language", "JAVA")
    if type(lang) is str:
        # Unknown names (a newer client) are kept as OTHER rather than refused.
        cmd.language = _LANG_BY_NAME.get(lang, _OTHER)
    elif type(lang) is int:
        cmd.language = lang
    elif lang is None:
        cmd.language = _LANG_JAVA
    else:
        raise RemoteProtocolError(f"JSON header field 'language' is invalid: {lang!r}")
    v = g("version")
    cmd.version = v if type(v) is int and _INT_MIN <= v <= _INT_MAX else _json_int(d, "version", 0)
    v = g("opaque")
    cmd.opaque = v if type(v) is int and _INT_MIN <= v <= _INT_MAX else _json_int(d, "opaque", 0)
    v = g("flag")
    cmd.flag = v if type(v) is int and _INT_MIN <= v <= _INT_MAX else _json_int(d, "flag", 0)
    remark = g("remark")
    if remark is not None and type(remark) is not str:
        remark = str(remark)
    cmd.remark = remark
    ext = g("extFields")
    if ext is not None:
        if type(ext) is not dict:
            raise RemoteProtocolError("JSON header field 'extFields' is not an object")
        for v in ext.values():
            if type(v) is not str:
                # Some clients send numbers/booleans; null values are dropped.
                ext = {k: (v if type(v) is str else _ext_str(v)) for k, v in ext.items() if v is not None}
                break
    cmd.ext_fields = ext
    return cmd


def _refuse_non_utf8_json(raw: memoryview | bytes) -> None:
    """A JSON header that is well-formed but for bytes that are not UTF-8 names its request: refuse
    that request (HeaderTextError) rather than the connection. Runs on the error path only."""
    try:
        str(raw, "utf-8")
        return  # valid text: the JSON itself is malformed
    except UnicodeDecodeError as e:
        reason = f"JSON header is not UTF-8: {e}"
    try:
        d = _loads(str(raw, "utf-8", "replace"))
    except _JSONDecodeError:
        return
    if type(d) is not dict:
        return
    cmd = _new_command(RemotingCommand)
    cmd.remark = cmd.ext_fields = cmd.body = None
    cmd.language, cmd.version = _OTHER, 0
    try:
        cmd.code = _json_int(d, "code", 0)
        cmd.opaque = _json_int(d, "opaque", 0)
        cmd.flag = _json_int(d, "flag", 0)
    except RemoteProtocolError:
        return
    raise HeaderTextError(reason, cmd)


def _utf8(mv: memoryview, start: int, end: int, what: str) -> str:
    try:
        return str(mv[start:end], "utf-8")
    except UnicodeDecodeError as e:
        # framing is intact: the request can be answered (HeaderTextError carries it) and the connection kept
        raise HeaderTextError(f"binary header {what} is not UTF-8: {e}") from None


def _decode_binary(mv: memoryview, start: int, end: int) -> RemotingCommand:
    if end - start < _BIN_FIXED.size + 8:
        raise RemoteProtocolError(f"binary header too short: {end - start} bytes")
    cmd = _new_command(RemotingCommand)
    cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag = _BIN_FIXED.unpack_from(mv, start)
    try:
        _decode_binary_rest(cmd, mv, start + _BIN_FIXED.size, end)
    except HeaderTextError as e:
        cmd.remark = cmd.ext_fields = cmd.body = None
        e.command = cmd
        raise
    return cmd


def _span(mv: memoryview, p: int, end: int, prefix: struct.Struct, what: str) -> tuple[int, int]:
    """(start, stop) of the length-prefixed field at ``p``; RemoteProtocolError when it overruns ``end``."""
    if end - p < prefix.size:
        raise RemoteProtocolError(f"binary header truncated before {what}")
    (n,) = prefix.unpack_from(mv, p)
    p += prefix.size
    if n < 0 or n > end - p:
        raise RemoteProtocolError(f"binary header {what} length {n} out of range")
    return p, p + n


def _decode_binary_rest(cmd: RemotingCommand, mv: memoryview, p: int, end: int) -> None:
    p, q = _span(mv, p, end, _I32, "remark")
    cmd.remark = _utf8(mv, p, q, "remark") if q > p else None
    p, qend = _span(mv, q, end, _I32, "extFields")
    ext = None
    if qend > p:
        ext = {}
        q = p
        while q < qend:  # inline, not _span: this loop runs for every header field of every frame
            if qend - q < 2:
                raise RemoteProtocolError("binary header truncated before key")
            (klen,) = _I16.unpack_from(mv, q)
            k, q = q + 2, q + 2 + klen
            if klen < 0 or q > qend:
                raise RemoteProtocolError(f"binary header key length {klen} out of range")
            key = _utf8(mv, k, q, "key")  # before the value is framed: a bad key text is answerable
            if qend - q < 4:
                raise RemoteProtocolError("binary header truncated before value")
            (vlen,) = _I32.unpack_from(mv, q)
            v, q = q + 4, q + 4 + vlen
            if vlen < 0 or q > qend:
                raise RemoteProtocolError(f"binary header value length {vlen} out of range")
            ext[key] = _utf8(mv, v, q, "value")  # a duplicate key: the last one wins
    cmd.ext_fields = ext


def decode_header(serialize_type: int, header: bytes | memoryview) -> RemotingCommand:
    """Decode one header (without frame prefix or body); raises RemoteProtocolError."""
    mv = memoryview(header)
    if serialize_type == _JSON:
        cmd = _decode_json(mv)
    elif serialize_type == _ROCKETMQ:
        cmd = _decode_binary(mv, 0, len(mv))
    else:
        raise RemoteProtocolError(f"unknown serialize type {serialize_type}")
    cmd.serialize_type = serialize_type
    cmd.body = None
    return cmd


class FrameDecoder:
    """Bytes in, commands out.

    ``feed`` returns every complete frame and keeps the partial tail. A malformed
    or oversized frame raises :class:`RemoteProtocolError` (carrying the frames
    decoded before it in ``.frames``) and the decoder stays broken: every later
    ``feed`` raises too, so the connection cannot be reused.

    A frame whose framing is sound but whose header text is not UTF-8 does not break
    the stream: it is left out of ``feed``'s result and appended to ``rejected`` as a
    :class:`HeaderTextError` whose ``command`` carries code, opaque and flag, so the
    caller can answer that request alone (the caller empties the list).
    """

    __slots__ = ("_buf", "_max", "_error", "rejected")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE):
        self._buf = bytearray()
        self._max = max_frame_size
        self._error: str | None = None
        self.rejected: list[HeaderTextError] = []

    @property
    def buffered(self) -> int:
        """Bytes held back as an incomplete frame."""
        return len(self._buf)

    @property
    def broken(self) -> bool:
        return self._error is not None

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        """Consume ``data``; return all commands completed by it (possibly none)."""
        if self._error is not None:
            raise RemoteProtocolError(f"connection already failed: {self._error}")
        buf = self._buf
        if buf:
            buf += data
            src = buf
        else:
            src = data
        out: list[RemotingCommand] = []
        mv = memoryview(src)
        n = len(mv)
        pos = 0
        try:
            while n - pos >= 4:
                (length,) = _LEN.unpack_from(mv, pos)
                if length < 4 or length > self._max - 4:
                    raise RemoteProtocolError(f"bad frame length {length} (max {self._max - 4})")
                end = pos + 4 + length
                if end > n:
                    if n - pos >= 8:
                        self._check_word(mv, pos, length)
                    break
                try:
                    out.append(self._decode_frame(mv, pos + 4, end))
                except HeaderTextError as e:
                    if e.command is None:
                        raise
                    e.command.serialize_type = word_type(mv, pos)
                    # kept past this call: drop the frames (and their views of the buffer) it references
                    e.__traceback__ = e.__context__ = None
                    self.rejected.append(e)
                pos = end
        except RemoteProtocolError as e:
            del mv
            self._error = str(e)
            self._buf = bytearray()
            e.frames = out
            raise
        except Exception as e:  # any other parsing surprise is the peer's fault too
            del mv
            self._error = f"{type(e).__name__}: {e}"
            self._buf = bytearray()
            raise RemoteProtocolError(f"undecodable frame: {self._error}", out) from e
        del mv
        if src is buf:
            if pos:
                del buf[:pos]
        elif pos < n:
            buf += memoryview(src)[pos:]
        return out

    @staticmethod
    def _check_word(mv: memoryview, pos: int, length: int) -> None:
        # Reject a bad header word early, before waiting for a body that may never come.
        (word,) = _WORD.unpack_from(mv, pos + 4)
        stype = word >> 24
        if stype != _JSON and stype != _ROCKETMQ:
            raise RemoteProtocolError(f"unknown serialize type {stype}")
        if (word & 0xFFFFFF) > length - 4:
            raise RemoteProtocolError(f"header length {word & 0xFFFFFF} exceeds frame length {length}")

    @staticmethod
    def _decode_frame(mv: memoryview, start: int, end: int) -> RemotingCommand:
        (word,) = _WORD.unpack_from(mv, start)
        stype = word >> 24
        hstart = start + 4
        hend = hstart + (word & 0xFFFFFF)
        if hend > end:
            raise RemoteProtocolError(f"header length {word & 0xFFFFFF} exceeds frame length {end - start}")
        if stype == _JSON:
            cmd = _decode_json(mv[hstart:hend])
        elif stype == _ROCKETMQ:
            cmd = _decode_binary(mv, hstart, hend)
        else:
            raise RemoteProtocolError(f"unknown serialize type {stype}")
        cmd.serialize_type = stype
        cmd.body = mv[hend:end].tobytes() if end > hend else None
        return cmd


def word_type(mv: memoryview, pos: int) -> int:
    """The serialize type of the frame at ``pos``."""
    return _WORD.unpack_from(mv, pos + 4)[0] >> 24


# -- encoding ------------------------------------------------------------------------


def _java_str(v: Any) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    return str(v)


def _clean_ext(ext: dict) -> dict[str, str]:
    for k, v in ext.items():
        if type(v) is not str or type(k) is not str:
            break
    else:
        return ext
    out = {}
    for k, v in ext.items():
        if v is None or k is None:
            continue  # Java skips null entries
        if not isinstance(k, str):
            raise LocalProtocolError(f"extFields key is not a string: {k!r}")
        out[k] = v if type(v) is str else _java_str(v)
    return out


def _encode_json(cmd: RemotingCommand) -> bytes:
    # Keys in fastjson's (alphabetical) order; null values omitted. Dict displays (one
    # constant-key map build each) rather than item by item: this runs once per response.
    ext = cmd.ext_fields
    lang = _LANG_NAMES.get(cmd.language, "OTHER")
    remark = cmd.remark
    if ext is not None:
        ext = _clean_ext(ext)
        if remark is None:
            d = {"code": cmd.code, "extFields": ext, "flag": cmd.flag, "language": lang, "opaque": cmd.opaque,
                 "serializeTypeCurrentRPC": "JSON", "version": cmd.version}
        else:
            d = {"code": cmd.code, "extFields": ext, "flag": cmd.flag, "language": lang, "opaque": cmd.opaque,
                 "remark": remark, "serializeTypeCurrentRPC": "JSON", "version": cmd.version}
    elif remark is None:
        d = {"code": cmd.code, "flag": cmd.flag, "language": lang, "opaque": cmd.opaque,
             "serializeTypeCurrentRPC": "JSON", "version": cmd.version}
    else:
        d = {"code": cmd.code, "flag": cmd.flag, "language": lang, "opaque": cmd.opaque, "remark": remark,
             "serializeTypeCurrentRPC": "JSON", "version": cmd.version}
    try:
        return _dumps(d)
    except TypeError as e:
        raise LocalProtocolError(f"cannot encode JSON header: {e}") from None


def _encode_binary(cmd: RemotingCommand) -> bytes:
    try:
        fixed = _BIN_FIXED.pack(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag)
    except struct.error as e:
        raise LocalProtocolError(f"command does not fit the binary header: {e}") from None
    remark = cmd.remark.encode("utf-8") if cmd.remark else b""
    ext = bytearray()
    if cmd.ext_fields:
        for k, v in _clean_ext(cmd.ext_fields).items():
            kb = k.encode("utf-8")
            vb = v.encode("utf-8")
            if len(kb) > 0x7FFF:
                raise LocalProtocolError(f"extFields key too long for the binary header: {len(kb)} bytes")
            ext += _I16.pack(len(kb))
            ext += kb
            ext += _I32.pack(len(vb))
            ext += vb
    return b"".join((fixed, _I32.pack(len(remark)), remark, _I32.pack(len(ext)), ext))


def encode_header(cmd: RemotingCommand) -> bytes:
    """The header bytes alone, in the command's serialize type."""
    st = cmd.serialize_type
    if st == _JSON:
        return _encode_json(cmd)
    if st == _ROCKETMQ:
        return _encode_binary(cmd)
    raise LocalProtocolError(f"unknown serialize type {st!r}")


def encode(cmd: RemotingCommand) -> list[bytes | bytearray | memoryview]:
    """Frame chunks for ``transport.writelines``: ``[prefix+header]`` or ``[prefix+header, body]``.

    The body object itself is the second chunk (never copied).
    """
    st = cmd.serialize_type
    body = cmd.body
    if st == _JSON:
        # the usual command in one compiled call (prefix and header); the general path for the rest
        head = _json_head(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields,
                          _LANG_NAMES, (body.nbytes if type(body) is memoryview else len(body)) if body else 0)
        if head is not None:
            return [head, body] if body else [head]
        h = _encode_json(cmd)
    elif st == _ROCKETMQ:
        h = _encode_binary(cmd)
    else:
        raise LocalProtocolError(f"unknown serialize type {st!r}")
    hlen = len(h)
    if hlen > 0xFFFFFF:
        raise LocalProtocolError(f"header too large: {hlen} bytes")
    if body:
        blen = body.nbytes if type(body) is memoryview else len(body)
        total = 4 + hlen + blen
        if total > 0x7FFFFFFF:
            raise LocalProtocolError(f"frame too large: {total} bytes")
        return [_PREFIX.pack(total, (st << 24) | hlen) + h, body]
    return [_PREFIX.pack(4 + hlen, (st << 24) | hlen) + h]


def response_frame(code: int, opaque: int, ext_fields: dict[str, str]) -> bytes | None:
    """The whole frame of a body-less JSON response of ours (language JAVA, ``CURRENT_VERSION``, no
    remark), what :func:`encode` gives for that command, made without one; None when the fields are
    not all plain strings (encode the command then)."""
    return _json_head(code, _LANG_JAVA, CURRENT_VERSION, opaque, RPC_TYPE_RESPONSE, None, ext_fields, _LANG_NAMES, 0)


def encode_bytes(cmd: RemotingCommand) -> bytes:
    """The whole frame as one bytes object (copies the body)."""
    return b"".join(encode(cmd))

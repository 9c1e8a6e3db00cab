"""ACL 1.0 request signature (RocketMQ AclUtils.combineRequestContent + AclSigner), shared by client and broker.

The signed content is the values of the request's extFields (without ``Signature``), in
Java ``String.compareTo`` order of their keys, concatenated without separators and UTF-8
encoded, followed by the raw body; the signature is Base64(HmacSHA1(secretKey, content)).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterable, Mapping

from common import speedups

__all__ = [
    "ACCESS_KEY",
    "SECRET_KEY",
    "SIGNATURE",
    "SECURITY_TOKEN",
    "UNIQUE_MSG_QUERY_FLAG",
    "SKIP_BROKER",
    "combine_request_content",
    "cal_signature",
    "request_signature",
    "verify_signature",
    "verify_keyed",
    "keyed_states",
    "sign_fields",
]

ACCESS_KEY = "AccessKey"
SECRET_KEY = "SecretKey"
SIGNATURE = "Signature"
SECURITY_TOKEN = "SecurityToken"
#: extField the broker leaves out of the content (see acl.md §6 step 4)
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"

_SKIP_SIGNATURE = frozenset((SIGNATURE,))
#: what the broker leaves out when it recomputes a signature
SKIP_BROKER = frozenset((SIGNATURE, UNIQUE_MSG_QUERY_FLAG))


def _java_order(keys: Iterable[str]) -> list[str]:
    keys = sorted(keys)
    if "".join(keys).isascii():
        return keys
    # Java compares UTF-16 code units; big-endian UTF-16 bytes sort the same way.
    return sorted(keys, key=lambda k: k.encode("utf-16-be", "surrogatepass"))


# For each key sequence seen, per skip set: the signed keys in Java order and the keys left out
# (sorted once per shape), and the shape last used per skip set. One client sends one header class
# again and again, so a request is usually checked against that last shape alone: acl_mac (compiled
# where built) compares its key set and signs in one call, with no per-request key tuple or sort.
_Shape = tuple[tuple[str, ...], tuple[str, ...]]
_SHAPES: dict[frozenset[str], dict[tuple[str, ...], _Shape]] = {}
_LAST: dict[frozenset[str], _Shape] = {}
_EMPTY: _Shape = ((), ())


def _shape_for(ext: Mapping[str, str | None], skip: frozenset[str]) -> _Shape:
    keys = tuple(ext)
    shapes = _SHAPES.setdefault(skip, {})
    shape = shapes.get(keys)
    if shape is None:
        shape = (tuple(k for k in _java_order(keys) if k not in skip), tuple(k for k in keys if k in skip))
        if len(shapes) > 4096:  # bounded: shapes come from the wire
            shapes.clear()
        shapes[keys] = shape
    _LAST[skip] = shape
    return shape


def combine_request_content(
    ext_fields: Mapping[str, str | None] | None,
    body: bytes | bytearray | memoryview | None,
    skip: frozenset[str] = _SKIP_SIGNATURE,
) -> bytes:
    """The bytes that are signed: sorted extField values (keys in ``skip`` left out) + body."""
    order = _shape_for(ext_fields, skip)[0] if ext_fields else ()
    text = "".join("null" if v is None else v for v in (ext_fields[k] for k in order))  # type: ignore[index]
    head = text.encode("utf-8", "surrogatepass")  # Java's getBytes keeps a lone surrogate: no error
    if body:
        return head + bytes(body)
    return head


def _mac(ext_fields: Mapping[str, str | None] | None, body: bytes | bytearray | memoryview | None,
         secret_key: str, skip: frozenset[str]) -> bytes:
    """Base64(HmacSHA1(secret_key, content)) as bytes, the body hashed where it lies (not copied)."""
    pads = _PADS.get(secret_key)
    if pads is None:
        pads = _pads(secret_key)
    ext = ext_fields if type(ext_fields) is dict else dict(ext_fields or ())
    shape = _LAST.get(skip, _EMPTY)
    mac = _acl_mac(pads, ext, shape[0], shape[1], body)
    if mac is None:  # another shape than the last one
        shape = _shape_for(ext, skip) if ext else _EMPTY
        mac = _acl_mac(pads, ext, shape[0], shape[1], body)
    return mac


def request_signature(
    ext_fields: Mapping[str, str | None] | None,
    body: bytes | bytearray | memoryview | None,
    secret_key: str,
    skip: frozenset[str] = _SKIP_SIGNATURE,
) -> str:
    """:func:`cal_signature` of :func:`combine_request_content`, without copying the body."""
    return _mac(ext_fields, body, secret_key, skip).decode("ascii")


def verify_signature(
    ext_fields: Mapping[str, str | None] | None,
    body: bytes | bytearray | memoryview | None,
    secret_key: str,
    signature: str | None,
    skip: frozenset[str] = SKIP_BROKER,
) -> bool:
    """True when ``signature`` is :func:`request_signature` of the request (what a broker checks).

    Compared in constant time (Java's String.equals is not: it leaks how long a prefix matched).
    """
    pads = _PADS.get(secret_key)
    if pads is None:
        pads = _pads(secret_key)
    if type(ext_fields) is not dict:
        ext_fields = dict(ext_fields or ())
    return verify_keyed(pads, ext_fields, body, signature, skip)


def verify_keyed(pads: tuple | bytes, ext_fields: dict, body: bytes | bytearray | memoryview | None,
                 signature: str | None, skip: frozenset[str] = SKIP_BROKER) -> bool:
    """:func:`verify_signature` with the secret's keyed states (:func:`keyed_states`): the broker's hot path."""
    if type(signature) is not str:
        return False
    shape = _LAST.get(skip, _EMPTY)
    ok = _acl_mac(pads, ext_fields, shape[0], shape[1], body, signature)  # compared in constant time
    if ok is None:  # another shape than the last one
        shape = _shape_for(ext_fields, skip) if ext_fields else _EMPTY
        ok = _acl_mac(pads, ext_fields, shape[0], shape[1], body, signature)
    return ok


def keyed_states(secret_key: str) -> tuple | bytes:
    """The HMAC states :func:`verify_keyed` takes for ``secret_key`` (computed once per secret)."""
    pads = _PADS.get(secret_key)
    return _pads(secret_key) if pads is None else pads


# HMAC (RFC 2104) with the keyed inner and outer SHA-1 states computed once per secret: a request then
# costs two state copies instead of building an HMAC object (a broker verifies every request).
_PADS: dict[str, tuple | bytes] = {}
_acl_mac = speedups.acl_mac


def _pads(secret_key: str) -> tuple | bytes:
    key = secret_key.encode("utf-8")
    if len(key) > 64:
        key = hashlib.sha1(key).digest()
    key = key.ljust(64, b"\0")
    # raw SHA-1 states where the compiled twin has libcrypto: no hashlib object per request
    pads = speedups.acl_pads(key) or hashlib_pads(key)
    if len(_PADS) > 4096:  # bounded: keys come from config, but do not grow without limit
        _PADS.clear()
    _PADS[secret_key] = pads
    return pads


def hashlib_pads(key_block: bytes) -> tuple:
    """HMAC's keyed inner and outer SHA-1 states as hashlib objects (what every twin of acl_mac takes)."""
    return hashlib.sha1(bytes(b ^ 0x36 for b in key_block)), hashlib.sha1(bytes(b ^ 0x5C for b in key_block))


def cal_signature(content: bytes, secret_key: str) -> str:
    """Base64(HmacSHA1(secret_key, content)) as text."""
    mac = hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()
    return base64.b64encode(mac).decode("ascii")


def sign_fields(
    ext_fields: dict[str, str],
    body: bytes | bytearray | memoryview | None,
    access_key: str,
    secret_key: str,
    security_token: str | None = None,
) -> None:
    """Add ``AccessKey`` (and ``SecurityToken``) and the matching ``Signature`` to ``ext_fields`` in place.

    ``_UNIQUE_KEY_QUERY`` is left out of the content as the broker leaves it out (the Java client
    includes it, which makes its unique-key queries fail against an ACL broker).
    """
    ext_fields[ACCESS_KEY] = access_key
    if security_token is not None:
        ext_fields[SECURITY_TOKEN] = security_token
    ext_fields[SIGNATURE] = request_signature(ext_fields, body, secret_key, SKIP_BROKER)

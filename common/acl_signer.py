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


# The signed key order for each key sequence seen (one client sends one header class in one key order
# again and again): sorting is then done once per shape, not per request.
_ORDERS: dict[tuple, list[str]] = {}


def _order_for(shape: tuple) -> list[str]:
    keys, skip = shape
    order = [k for k in _java_order(keys) if k not in skip]
    if len(_ORDERS) > 4096:  # bounded: shapes come from the wire
        _ORDERS.clear()
    _ORDERS[shape] = order
    return order


def _content_head(ext_fields: Mapping[str, str | None] | None, skip: frozenset[str]) -> bytes:
    if not ext_fields:
        return b""
    shape = (tuple(ext_fields), skip)
    order = _ORDERS.get(shape)
    if order is None:
        order = _order_for(shape)
    values = [ext_fields[k] for k in order]
    try:
        text = "".join(values)
    except TypeError:  # a null value: StringBuilder.append(null) writes "null"
        text = "".join("null" if v is None else v for v in values)
    return text.encode("utf-8", "surrogatepass")


def combine_request_content(
    ext_fields: Mapping[str, str | None] | None,
    body: bytes | bytearray | memoryview | None,
    skip: frozenset[str] = _SKIP_SIGNATURE,
) -> bytes:
    """The bytes that are signed: sorted extField values (keys in ``skip`` left out) + body."""
    head = _content_head(ext_fields, skip)
    if body:
        return head + bytes(body)
    return head


def request_signature(
    ext_fields: Mapping[str, str | None] | None,
    body: bytes | bytearray | memoryview | None,
    secret_key: str,
    skip: frozenset[str] = _SKIP_SIGNATURE,
) -> str:
    """:func:`cal_signature` of :func:`combine_request_content`, without copying the body."""
    pads = _PADS.get(secret_key)
    if pads is None:
        pads = _pads(secret_key)
    inner = pads[0].copy()
    inner.update(_content_head(ext_fields, skip))
    if body:
        inner.update(body)
    outer = pads[1].copy()
    outer.update(inner.digest())
    return _b64(outer.digest()).decode("ascii")


# HMAC (RFC 2104) with the keyed inner and outer SHA-1 states computed once per secret: a request then
# costs two state copies instead of building an HMAC object (a broker verifies every request).
_PADS: dict[str, tuple] = {}
_b64 = base64.b64encode


def _pads(secret_key: str) -> tuple:
    key = secret_key.encode("utf-8")
    if len(key) > 64:
        key = hashlib.sha1(key).digest()
    key = key.ljust(64, b"\0")
    pads = (hashlib.sha1(bytes(b ^ 0x36 for b in key)), hashlib.sha1(bytes(b ^ 0x5C for b in key)))
    if len(_PADS) > 4096:  # bounded: keys come from config, but do not grow without limit
        _PADS.clear()
    _PADS[secret_key] = pads
    return pads


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

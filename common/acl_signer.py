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
    keys = list(keys)
    if all(k.isascii() for k in keys):
        return sorted(keys)
    # Java compares UTF-16 code units; big-endian UTF-16 bytes sort the same way.
    return sorted(keys, key=lambda k: k.encode("utf-16-be", "surrogatepass"))


def _content_head(ext_fields: Mapping[str, str | None] | None, skip: frozenset[str]) -> bytes:
    if not ext_fields:
        return b""
    parts: list[str] = []
    for k in _java_order(ext_fields):
        if k not in skip:
            v = ext_fields[k]
            parts.append("null" if v is None else v)  # StringBuilder.append(null)
    return "".join(parts).encode("utf-8", "surrogatepass")


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
    mac = hmac.new(secret_key.encode("utf-8"), _content_head(ext_fields, skip), hashlib.sha1)
    if body:
        mac.update(body)
    return base64.b64encode(mac.digest()).decode("ascii")


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

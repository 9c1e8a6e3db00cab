"""Pure twin of the ACL 1.0 signature primitives of :mod:`common.speedups` (``acl_mac``,
``acl_pads``; see common.acl_signer): the reference the compiled twin is tested against. Callers
use them through ``common.speedups``, which picks the twin."""

from __future__ import annotations

import binascii
import hmac

__all__ = ["acl_mac", "acl_pads"]


def acl_pads(key_block: bytes) -> None:
    """No raw SHA-1 states in the pure twin: the signer keeps hashlib objects instead."""
    return None


def acl_mac(pads: tuple, ext: dict, order: tuple[str, ...], others: tuple[str, ...], body,
           expect: str | None = None) -> bytes | bool | None:
    """An ACL 1.0 request signature over the ordered header values and the body (None when the
    fields do not match), or, with ``expect``, whether it equals that signature."""
    if len(ext) != len(order) + len(others):
        return None
    get = ext.__getitem__
    try:
        for k in others:
            get(k)
        try:
            text = "".join(map(get, order))
        except TypeError:  # a null value: StringBuilder.append(null) writes "null"
            text = "".join("null" if v is None else v for v in map(get, order))
    except KeyError:
        return None
    try:
        head = text.encode()
    except UnicodeEncodeError:  # a lone surrogate: Java's getBytes keeps it
        head = text.encode("utf-8", "surrogatepass")
    inner = pads[0].copy()
    inner.update(head)
    if body:
        inner.update(body)
    outer = pads[1].copy()
    outer.update(inner.digest())
    mac = binascii.b2a_base64(outer.digest(), newline=False)
    if expect is None:
        return mac
    return type(expect) is str and expect.isascii() and hmac.compare_digest(mac, expect.encode())

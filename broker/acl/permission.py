"""ACL permission bits, their text form and the admin-only request codes (RocketMQ Permission)."""

from __future__ import annotations

from broker.acl.acl_exception import AclException
from common.mixall import get_retry_topic
from remoting.codes import RequestCode

__all__ = [
    "DENY", "ANY", "PUB", "SUB", "ADMIN_CODES",
    "parse_perm", "check_permission", "parse_resource_perms", "need_admin_perm",
]

DENY = 1
ANY = 1 << 1
PUB = 1 << 2
SUB = 1 << 3

_BY_NAME = {"PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB, "DENY": DENY}

ADMIN_CODES = frozenset(int(c) for c in (
    RequestCode.UPDATE_AND_CREATE_TOPIC,
    RequestCode.UPDATE_BROKER_CONFIG,
    RequestCode.DELETE_TOPIC_IN_BROKER,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    RequestCode.DELETE_SUBSCRIPTIONGROUP,
))


def parse_perm(text: object) -> int:
    """``DENY``/``PUB``/``SUB``/``PUB|SUB``/``SUB|PUB`` (trimmed); anything else, or None, is DENY."""
    if text is None:
        return DENY
    return _BY_NAME.get(str(text).strip(), DENY)


def check_permission(needed: int, owned: int) -> bool:
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def need_admin_perm(code: int) -> bool:
    return code in ADMIN_CODES


def parse_resource_perms(entries: list | None, is_topic: bool) -> dict[str, int]:
    """``["name=PERM", ...]`` to {resource: perm}; groups become ``%RETRY%<group>``."""
    out: dict[str, int] = {}
    if not entries:
        return out
    for entry in entries:
        items = str(entry).split("=")
        if len(items) != 2:
            raise AclException(f"Parse resource permission failed for {'topic' if is_topic else 'group'}:{entry}")
        name = items[0].strip()
        out[name if is_topic else get_retry_topic(name)] = parse_perm(items[1])
    return out

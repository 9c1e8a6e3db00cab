"""White-address patterns of plain_acl.yml (RocketMQ RemoteAddressStrategyFactory); see acl.md §6.

A strategy is a predicate on the client's IP text. Invalid patterns raise AclException
(the file then fails to load).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from broker.acl.acl_exception import AclException

__all__ = ["RemoteAddressStrategy", "get_remote_address_strategy", "expand_ipv6"]

RemoteAddressStrategy = Callable[[str], bool]


def _never(_addr: str) -> bool:
    return False


def _always(_addr: str) -> bool:
    return True


def _parses_as(s: str, address_cls: type[ipaddress.IPv4Address] | type[ipaddress.IPv6Address]) -> bool:
    try:
        address_cls(s)
        return True
    except ValueError:
        return False


def _is_ipv4(s: str) -> bool:
    return _parses_as(s, ipaddress.IPv4Address)


def _is_ipv6(s: str) -> bool:
    return _parses_as(s, ipaddress.IPv6Address)


def expand_ipv6(s: str) -> str:
    """Full eight-group lower-case form of an IPv6 address (input returned unchanged when not IPv6)."""
    try:
        return ipaddress.IPv6Address(s).exploded
    except ValueError:
        return s


def _normalise(addr: str) -> str:
    return expand_ipv6(addr) if ":" in addr else addr


def _multiple(addrs: list[str]) -> RemoteAddressStrategy:
    allowed = set()
    for a in addrs:
        a = a.strip()
        if not (_is_ipv4(a) or _is_ipv6(a)):
            raise AclException(f"Netaddress examine Exception netaddress is {a}")
        allowed.add(_normalise(a))
    frozen = frozenset(allowed)
    return lambda addr: _normalise(addr) in frozen


def _one(pattern: str) -> RemoteAddressStrategy:
    want = _normalise(pattern.strip())
    return lambda addr: _normalise(addr) == want


def _braces(pattern: str, sep: str) -> RemoteAddressStrategy:
    head, _, last = pattern.rpartition(sep)
    if not last.startswith("{") or not head:
        raise AclException(f"MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress {pattern}")
    if sep == "." and len(pattern.split(".")) < 4:
        raise AclException(f"MultipleRemoteAddressStrategy has got a wrong netaddress:{pattern}")
    return _multiple([f"{head}{sep}{x}" for x in last[1:-1].split(",")])


def _range(pattern: str) -> RemoteAddressStrategy:
    v6 = ":" in pattern
    sep, nseg, top, base = (":", 8, 0xFFFF, 16) if v6 else (".", 4, 255, 10)
    segs = [s.strip() for s in pattern.split(sep)]
    if len(segs) != nseg:
        raise AclException(f"Netaddress examine scope Exception netaddress is {pattern}")
    index = -1
    start = end = 0
    for i in range(1, nseg):
        s = segs[i]
        if s == "*":
            index, start, end = i, 0, top
            break
        if "-" in s:
            lo, _, hi = s.partition("-")
            try:
                start, end = int(lo, base), int(hi, base)
            except ValueError:
                raise AclException(f"Netaddress examine scope Exception netaddress is {pattern}") from None
            if not 0 <= start <= end <= top:
                raise AclException(f"Netaddress examine scope Exception netaddress is {pattern}")
            index = i
            break
    if index < 0:
        raise AclException(f"Netaddress examine scope Exception netaddress is {pattern}")
    head = segs[:index]
    for s in head:
        try:
            if not 0 <= int(s, base) <= top:
                raise ValueError
        except ValueError:
            raise AclException(f"Netaddress examine scope Exception netaddress is {pattern}") from None
    head_norm = [int(s, base) for s in head]

    def match(addr: str) -> bool:
        if v6:
            if not _is_ipv6(addr):
                return False
            parts = expand_ipv6(addr).split(":")
        else:
            parts = addr.split(".")
            if len(parts) != 4:
                return False
        try:
            if [int(p, base) for p in parts[:index]] != head_norm:
                return False
            return start <= int(parts[index], base) <= end
        except ValueError:
            return False

    return match


def get_remote_address_strategy(pattern: str | None) -> RemoteAddressStrategy:
    """The matcher for one ``whiteRemoteAddress`` / ``globalWhiteRemoteAddresses`` pattern."""
    if pattern is None or not str(pattern).strip():
        return _never
    pattern = str(pattern).strip()
    if pattern in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return _always
    if pattern.endswith("}"):
        return _braces(pattern, ":" if ":" in pattern else ".")
    if "," in pattern:
        return _multiple(pattern.split(","))
    if "*" in pattern or "-" in pattern:
        return _range(pattern)
    if not (_is_ipv4(pattern) or _is_ipv6(pattern)):
        raise AclException(f"Netaddress examine Exception netaddress is {pattern}")
    return _one(pattern)

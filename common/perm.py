"""Topic and broker permission bits (RocketMQ's PermName)."""

from __future__ import annotations

__all__ = [
    "PERM_PRIORITY",
    "PERM_READ",
    "PERM_WRITE",
    "PERM_INHERIT",
    "PermName",
    "is_readable",
    "is_writeable",
    "is_inherited",
    "is_priority",
    "perm2string",
]

PERM_PRIORITY = 0x1 << 3
PERM_READ = 0x1 << 2
PERM_WRITE = 0x1 << 1
PERM_INHERIT = 0x1 << 0


def is_readable(perm: int) -> bool:
    """Consumers may pull."""
    return (perm & PERM_READ) == PERM_READ


def is_writeable(perm: int) -> bool:
    """Producers may send."""
    return (perm & PERM_WRITE) == PERM_WRITE


def is_inherited(perm: int) -> bool:
    """The topic may serve as a template for auto-creation."""
    return (perm & PERM_INHERIT) == PERM_INHERIT


def is_priority(perm: int) -> bool:
    """Legacy priority bit."""
    return (perm & PERM_PRIORITY) == PERM_PRIORITY


def perm2string(perm: int) -> str:
    """``RWX``-style text as mqadmin prints it, e.g. 6 -> ``RW-``."""
    return (
        ("R" if is_readable(perm) else "-")
        + ("W" if is_writeable(perm) else "-")
        + ("X" if is_inherited(perm) else "-")
    )


class PermName:
    """Namespace mirroring Java's ``PermName`` for code ported by name."""

    PERM_PRIORITY = PERM_PRIORITY
    PERM_READ = PERM_READ
    PERM_WRITE = PERM_WRITE
    PERM_INHERIT = PERM_INHERIT
    is_readable = staticmethod(is_readable)
    is_writeable = staticmethod(is_writeable)
    is_inherited = staticmethod(is_inherited)
    is_priority = staticmethod(is_priority)
    perm2string = staticmethod(perm2string)

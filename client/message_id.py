"""UNIQ_KEY message ids exactly in the Java client's format (MessageClientIDSetter).

16 bytes for an IPv4 client: ip(4) | pid(int16) | class-loader hash(int32) |
ms since the start of the current month, local time (int32) | counter(int16),
rendered as upper-case hex (spec message-and-store-format.md §5.2).
"""

from __future__ import annotations

import datetime
import itertools
import os
import random
import socket
import struct
import threading
import time

__all__ = ["MessageClientIDSetter", "create_uniq_id", "get_ip_from_id", "get_near_time_from_id", "local_ip"]


def local_ip() -> str:
    """This host's outward IPv4 address (no packet is sent), 127.0.0.1 when there is none."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def _month_start_ms(now_ms: int) -> tuple[int, int]:
    """(start of this month, start of next month) in epoch ms, local time zone."""
    dt = datetime.datetime.fromtimestamp(now_ms / 1000)
    start = dt.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    nxt = start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
    return int(start.timestamp() * 1000), int(nxt.timestamp() * 1000)


class MessageClientIDSetter:
    """Per-process generator of unique message ids."""

    def __init__(self, ip: str | None = None, pid: int | None = None, loader_hash: int | None = None):
        ip = ip or local_ip()
        try:
            ip_bytes = socket.inet_pton(socket.AF_INET6, ip) if ":" in ip else socket.inet_aton(ip)
        except OSError:
            ip_bytes = struct.pack(">i", int(time.time() * 1000) & 0x7FFFFFFF)  # Java's fake ip
        pid = os.getpid() if pid is None else pid
        loader_hash = random.getrandbits(31) if loader_hash is None else loader_hash
        self._prefix = (ip_bytes + struct.pack(">hi", _to_int16(pid), loader_hash)).hex().upper()
        self._counter = itertools.count(random.getrandbits(15))
        self._lock = threading.Lock()
        self._start, self._next_start = _month_start_ms(int(time.time() * 1000))

    def create_uniq_id(self) -> str:
        """A fresh id."""
        now = int(time.time() * 1000)
        with self._lock:
            if now >= self._next_start:
                self._start, self._next_start = _month_start_ms(now)
            n = next(self._counter)
            start = self._start
        return self._prefix + struct.pack(">ih", _to_int32(now - start), _to_int16(n)).hex().upper()


def _to_int16(v: int) -> int:
    v &= 0xFFFF
    return v - 0x10000 if v >= 0x8000 else v


def _to_int32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v >= 0x80000000 else v


_default: MessageClientIDSetter | None = None


def create_uniq_id() -> str:
    """A fresh id from the process-wide generator."""
    global _default
    if _default is None:
        _default = MessageClientIDSetter()
    return _default.create_uniq_id()


def get_ip_from_id(msg_id: str) -> str:
    """The client IP encoded in a UNIQ_KEY id."""
    raw = bytes.fromhex(msg_id)
    ip = raw[:16] if len(raw) == 28 else raw[:4]
    return socket.inet_ntop(socket.AF_INET6 if len(ip) == 16 else socket.AF_INET, ip)


def get_near_time_from_id(msg_id: str) -> int:
    """Approximate epoch ms at which the id was created (month inferred from now)."""
    raw = bytes.fromhex(msg_id)
    delta = struct.unpack_from(">i", raw, len(raw) - 6)[0]
    start, _ = _month_start_ms(int(time.time() * 1000))
    return start + delta

"""CommitLogScanner: the records of one CommitLog file, read offline (never written to).

Works on the store of this broker or of a Java RocketMQ 4.9 broker, whatever
its ``mappedFileSizeCommitLog`` (a file's name is the physical offset of its
first byte; its length is the mapped size). The scan stops at the BLANK
record that pads a file's end, or at the first bytes that do not make a
complete record: a running broker's tail (preallocated zeros, a record being
written) is simply not there yet. Compressed bodies are inflated (zlib;
LZ4 and ZSTD when the ``lz4`` / ``zstandard`` packages are installed).
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from common.message import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MessageDecodeError,
    MessageExt,
    MessageSysFlag,
    body_crc,
    decode_message,
)

__all__ = ["CommitLogFile", "list_commit_log_files", "scan_file", "inflate"]

_HEAD = struct.Struct(">ii")


@dataclass(frozen=True, slots=True)
class CommitLogFile:
    path: str
    from_offset: int
    size: int


def list_commit_log_files(root: str, commit_log_dir: str | None = None) -> list[CommitLogFile]:
    """The CommitLog files of the store at ``root`` (``root/commitlog`` unless given), in offset order."""
    d = commit_log_dir or os.path.join(root, "commitlog")
    if not os.path.isdir(d):
        raise FileNotFoundError(f"no CommitLog directory at {d}")
    out = []
    for name in os.listdir(d):
        if len(name) == 20 and name.isdigit():
            p = os.path.join(d, name)
            out.append(CommitLogFile(p, int(name), os.path.getsize(p)))
    return sorted(out, key=lambda f: f.from_offset)


def inflate(body: bytes, sys_flag: int) -> tuple[bytes, bool]:
    """(body, inflated?) for a COMPRESSED record; left as stored when it cannot be inflated."""
    ctype = sys_flag & MessageSysFlag.COMPRESSION_TYPE_MASK
    try:
        if ctype in (0, MessageSysFlag.COMPRESSION_ZLIB):
            return zlib.decompress(body), True
        if ctype == MessageSysFlag.COMPRESSION_LZ4:
            import lz4.frame

            return lz4.frame.decompress(body), True
        if ctype == MessageSysFlag.COMPRESSION_ZSTD:
            import zstandard

            return zstandard.ZstdDecompressor().decompressobj().decompress(body), True
    except ImportError:
        return body, False
    except Exception:  # noqa: BLE001 - a corrupt body is reported through crcOk, not by failing the scan
        return body, False
    return body, False


def scan_file(f: CommitLogFile, from_offset: int = 0, to_offset: int | None = None,
              topics: frozenset[str] | None = None) -> Iterator[tuple[MessageExt, bool, int]]:
    """(message with inflated body, crc ok, stored crc) for each complete record of ``f`` in the offset bounds."""
    end_phys = f.from_offset + f.size
    if end_phys <= from_offset or (to_offset is not None and f.from_offset >= to_offset) or f.size == 0:
        return
    with open(f.path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        n = len(mm)
        pos = 0
        while pos + 8 <= n:
            total, magic = _HEAD.unpack_from(mm, pos)
            if magic == BLANK_MAGIC_CODE or total <= 0 or pos + total > n:
                break
            if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
                break
            phys = f.from_offset + pos
            if to_offset is not None and phys >= to_offset:
                break
            if phys >= from_offset:
                try:
                    m = decode_message(mm, pos)
                except MessageDecodeError:
                    break  # a record still being written: the readable part ends here
                if topics is None or m.topic in topics:
                    stored = m.body_crc
                    ok = body_crc(m.body) == stored
                    if m.sys_flag & MessageSysFlag.COMPRESSED:
                        m.body, _ = inflate(m.body, m.sys_flag)
                    m.commit_log_offset = phys
                    yield m, ok, stored
            pos += total
    finally:
        mm.close()

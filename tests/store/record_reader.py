"""An independent CommitLog reader written from the spec (plain struct), to check files our store writes.

Deliberately shares no code with common.message / store.commit_log.
"""

from __future__ import annotations

import socket
import struct
import zlib

MAGIC_V1 = -626843481
BLANK = -875286124


def _host(buf: bytes, p: int, v6: bool) -> tuple[str, int, int]:
    if v6:
        addr = socket.inet_ntop(socket.AF_INET6, buf[p : p + 16])
        p += 16
    else:
        addr = socket.inet_ntoa(buf[p : p + 4])
        p += 4
    (port,) = struct.unpack_from(">i", buf, p)
    return addr, port, p + 4


def read_record(buf: bytes, pos: int, file_from: int) -> dict:
    """Parse the v1 record at ``pos`` field by field (spec §2)."""
    (total, magic, crc, qid, flag, qoff, phys, sysflag, born_ts) = struct.unpack_from(">iiiiiqqiq", buf, pos)
    assert magic == MAGIC_V1, f"magic {magic} at {pos}"
    p = pos + 48
    born_addr, born_port, p = _host(buf, p, bool(sysflag & 0x10))
    (store_ts,) = struct.unpack_from(">q", buf, p)
    p += 8
    store_addr, store_port, p = _host(buf, p, bool(sysflag & 0x20))
    reconsume, prepared, blen = struct.unpack_from(">iqi", buf, p)
    p += 16
    body = buf[p : p + blen]
    p += blen
    tlen = buf[p]
    p += 1
    topic = buf[p : p + tlen].decode()
    p += tlen
    (plen,) = struct.unpack_from(">H", buf, p)
    p += 2
    props = buf[p : p + plen].decode()
    p += plen
    assert p - pos == total, "lengths do not add up"
    assert crc == zlib.crc32(body) & 0x7FFFFFFF, "body crc"
    assert phys == file_from + pos, "physical offset"
    return dict(totalSize=total, bodyCRC=crc, queueId=qid, flag=flag, queueOffset=qoff, physicalOffset=phys,
                sysFlag=sysflag, bornTimestamp=born_ts, bornHost=(born_addr, born_port), storeTimestamp=store_ts,
                storeHost=(store_addr, store_port), reconsumeTimes=reconsume, preparedTransactionOffset=prepared,
                body=body, topic=topic, properties=props)


def read_records(buf: bytes, file_from: int) -> list[dict]:
    """Every record of one file, stopping at a BLANK record or at zeros."""
    out = []
    pos = 0
    while pos + 8 <= len(buf):
        total, magic = struct.unpack_from(">ii", buf, pos)
        if magic == BLANK:
            assert total == len(buf) - pos, "blank record must cover the rest of the file"
            break
        if magic != MAGIC_V1:
            break
        out.append(read_record(buf, pos, file_from))
        pos += total
    return out

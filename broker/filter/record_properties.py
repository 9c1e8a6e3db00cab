"""Read only the properties of a CommitLog record (MessageDecoder.decodeProperties).

SQL92 filtering needs the properties of records the consume queue could not
rule out; decoding a whole message for that would copy the body. This jumps
straight to the properties with the record's fixed layout
(message-and-store-format.md §2): body length at 84 (+12 per IPv6 host),
then body, topic length (1 byte in v1, 2 bytes in 5.x v2), topic, int16
properties length, properties.
"""

from __future__ import annotations

import struct

from common.errors import RecordDecodeError
from common.message import MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, MessageSysFlag

__all__ = ["RecordDecodeError", "decode_record_properties", "parse_properties_string"]

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">H")
_SYSFLAG_POS = 36
_BODY_LEN_POS_V4 = 84  # both hosts IPv4




def decode_record_properties(buf, offset: int = 0) -> dict[str, str]:
    """Properties of the CommitLog record starting at ``offset`` of ``buf`` (bytes/bytearray/memoryview/mmap)."""
    try:
        total, magic = struct.unpack_from(">ii", buf, offset)
        if magic != MESSAGE_MAGIC_CODE and magic != MESSAGE_MAGIC_CODE_V2:
            raise RecordDecodeError(f"bad magic {magic & 0xFFFFFFFF:#x} at {offset}")
        end = offset + total
        if total < 91 or end > len(buf):
            raise RecordDecodeError(f"bad total size {total} at {offset}")
        sys_flag = _I32.unpack_from(buf, offset + _SYSFLAG_POS)[0]
        p = offset + _BODY_LEN_POS_V4
        if sys_flag & MessageSysFlag.BORNHOST_V6:
            p += 12
        if sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6:
            p += 12
        body_len = _I32.unpack_from(buf, p)[0]
        if body_len < 0:
            raise RecordDecodeError(f"bad body length {body_len} at {offset}")
        p += 4 + body_len
        if magic == MESSAGE_MAGIC_CODE:
            topic_len = buf[p]
            p += 1
        else:
            topic_len = _I16.unpack_from(buf, p)[0]
            p += 2
        p += topic_len
        props_len = _I16.unpack_from(buf, p)[0]
        p += 2
        if p + props_len > end:
            raise RecordDecodeError(f"record lengths do not add up at {offset}")
        if props_len == 0:
            return {}
        text = str(memoryview(buf)[p : p + props_len], "utf-8", "replace")
    except (struct.error, IndexError, TypeError) as e:
        raise RecordDecodeError(f"malformed record at {offset}: {e}") from None
    return parse_properties_string(text)


def parse_properties_string(text: str) -> dict[str, str]:
    """MessageDecoder.string2messageProperties: ``k\x01v`` entries split by ``\x02``.

    An entry is kept only with a non-empty key and a non-empty value (its
    first ``\x01`` neither first nor last); later duplicates win. Same rules
    as common.message.string_to_properties, written for the filter hot path.
    """
    out: dict[str, str] = {}
    for item in text.split("\x02"):
        k, _sep, v = item.partition("\x01")
        if k and v:
            out[k] = v
    return out

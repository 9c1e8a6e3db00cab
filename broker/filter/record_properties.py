"""Read only the properties of a CommitLog record (MessageDecoder.decodeProperties).

SQL92 filtering needs the properties of records the consume queue could not
rule out; decoding a whole message for that would copy the body. The record
parser of :mod:`common.speedups` (compiled, or common.record_codec's pure twin)
finds where the properties are without copying anything.
"""

from __future__ import annotations

from common import record_codec, speedups
from common.errors import RecordDecodeError
from common.record_codec import BLANK_MAGIC_CODE

__all__ = ["RecordDecodeError", "decode_record_properties", "parse_properties_string"]

_parse_record = speedups.parse_record

#: MessageDecoder.string2messageProperties: ``k\x01v`` entries split by ``\x02``, kept only with
#: a non-empty key and value; later duplicates win.
parse_properties_string = record_codec.parse_properties


def decode_record_properties(buf, offset: int = 0) -> dict[str, str]:
    """Properties of the CommitLog record starting at ``offset`` of ``buf`` (bytes/bytearray/memoryview/mmap)."""
    try:
        f = _parse_record(buf, offset)
    except (IndexError, TypeError) as e:
        raise RecordDecodeError(f"malformed record at {offset}: {e}") from None
    if f is None or f[1] == BLANK_MAGIC_CODE:
        raise RecordDecodeError(f"{_why(buf, offset)} at {offset}")
    plen = f[15]
    if not plen:
        return {}
    start = f[14]
    return parse_properties_string(str(memoryview(buf)[start : start + plen], "utf-8", "replace"))


def _why(buf, offset: int) -> str:
    """What is wrong with a record the parser refused (the error path only)."""
    try:
        record_codec.decode_record(buf, offset)
    except RecordDecodeError as e:
        return str(e)
    return "malformed record"

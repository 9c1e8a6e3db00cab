"""EntryBatcher: encoded entries (one queue's or topic's, in row order) cut into SEND_BATCH_MESSAGE bodies.

A batch takes entries while its body stays within ``max_bytes`` (the exact
encoded size: the broker refuses a body over its maxMessageSize) and
``max_count`` entries. An entry bigger than ``max_bytes`` on its own goes out
alone, unless it is bigger than ``max_message_size``: then the task fails
naming the row, before anything of it is sent. Rows left over at the end of a
chunk wait for the next chunk's rows, so batches do not shrink at chunk
boundaries. The cut points are found by bisecting the entries' Arrow offsets,
and a batch body is a memoryview of the entries' data buffer (no copy) unless
it spans two chunks.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from connectors.spark.errors import ConnectorError
from remoting import ResponseCode

__all__ = ["EntryBatcher", "SinkBatch"]


@dataclass(slots=True)
class SinkBatch:
    """One SEND_BATCH_MESSAGE body: ``count`` entries of rows ``first_row`` .. ``last_row`` (task positions)."""

    body: bytes | memoryview
    uniq_keys: list[str]
    first_row: int
    last_row: int

    @property
    def count(self) -> int:
        return len(self.uniq_keys)

    def rows(self) -> str:
        return f"row {self.first_row}" if self.first_row == self.last_row else \
            f"rows {self.first_row}-{self.last_row}"


class EntryBatcher:
    """Cuts entries into batches; feed :meth:`add` in row order, then :meth:`flush`."""

    def __init__(self, max_bytes: int, max_count: int, max_message_size: int):
        self.max_bytes = min(max_bytes, max_message_size)
        self.max_count = max_count
        self.max_message_size = max_message_size
        self._parts: list[memoryview] = []
        self._uniq: list[str] = []
        self._size = 0
        self._first = -1
        self._last = -1

    def add(self, entries, uniq, rows: Sequence[int]) -> Iterator[SinkBatch]:
        """The full batches once ``entries`` (a pyarrow large_binary array) are added; ``uniq`` (a string
        array) and ``rows`` (task row positions) run alongside it."""
        n = len(entries)
        if not n:
            return
        bufs = entries.buffers()
        base = entries.offset
        offs = memoryview(bufs[1]).cast("B")[base * 8:(base + n + 1) * 8].cast("q")
        data = memoryview(bufs[2]).cast("B")
        i = 0
        while i < n:
            room = self.max_bytes - self._size
            hi = min(n, i + self.max_count - len(self._uniq))
            j = bisect_right(offs, offs[i] + room, i + 1, hi + 1) - 1
            if j > i:
                self._take(data, offs, uniq, rows, i, j)
                i = j
                if i < n:  # the next entry does not fit (or the count is reached)
                    yield self._emit()
            elif self._uniq:
                yield self._emit()
            else:  # one entry bigger than max_bytes: alone, if the broker can take it at all
                size = offs[i + 1] - offs[i]
                if size > self.max_message_size:
                    raise ConnectorError(f"row {rows[i]}: its message takes {size} bytes encoded, more than "
                                         f"maxMessageSize {self.max_message_size}", ResponseCode.MESSAGE_ILLEGAL)
                self._take(data, offs, uniq, rows, i, i + 1)
                i += 1
                yield self._emit()

    def flush(self) -> SinkBatch | None:
        """The last, partial batch (None when nothing is left)."""
        return self._emit() if self._uniq else None

    def _take(self, data: memoryview, offs, uniq, rows: Sequence[int], i: int, j: int) -> None:
        a, b = offs[i], offs[j]
        self._parts.append(data[a:b])
        self._size += b - a
        self._uniq.extend(uniq.slice(i, j - i).to_pylist())
        if self._first < 0:
            self._first = rows[i]
        self._last = rows[j - 1]

    def _emit(self) -> SinkBatch:
        parts = self._parts
        body = parts[0] if len(parts) == 1 else b"".join(parts)
        batch = SinkBatch(body, self._uniq, self._first, self._last)
        self._parts, self._uniq, self._size, self._first, self._last = [], [], 0, -1, -1
        return batch

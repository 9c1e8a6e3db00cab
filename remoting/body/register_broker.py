"""RegisterBrokerBody: the REGISTER_BROKER request body, as JSON or compressed.

Compressed form (header ``compressed=true``): a zlib stream (Java's Deflater at
best compression) of ``int32 len + DataVersion JSON``, ``int32 topicCount``,
``topicCount x (int32 len + TopicConfig line)``, ``int32 len + filterServerList
JSON array``; integers big-endian. The line carries only name, queue counts,
perm and filter type (topicSysFlag and order are lost, as in RocketMQ).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from remoting import fastjson
from remoting.body import BodyError, JsonBody, as_dict, as_list, as_str
from remoting.body.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper

__all__ = ["RegisterBrokerBody", "LazyTopicConfigTable"]

_I32 = struct.Struct(">i")
# A register body is at most a few MiB even for tens of thousands of topics;
# cap inflation so a zlib bomb cannot exhaust memory.
MAX_INFLATED = 64 * 1024 * 1024


class LazyTopicConfigTable(Mapping[str, TopicConfig]):
    """A ``topicConfigTable`` decoded on first read (all entries at once, so errors surface together).

    A broker re-registers its whole table every 30 s; when its DataVersion is
    unchanged the NameServer never reads the table, so building thousands of
    TopicConfig objects would be wasted work.
    """

    __slots__ = ("_raw", "_table")

    def __init__(self, raw: dict):
        self._raw = raw
        self._table: dict[str, TopicConfig] | None = None

    def _decoded(self) -> dict[str, TopicConfig]:
        if self._table is None:
            self._table = {
                str.__str__(k): TopicConfig.from_obj(v, str.__str__(k)) for k, v in self._raw.items()
            }
            self._raw = {}
        return self._table

    def __getitem__(self, key: str) -> TopicConfig:
        return self._decoded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._table) if self._table is not None else len(self._raw)


@dataclass(slots=True)
class RegisterBrokerBody(JsonBody):
    """``{"filterServerList":[s],"topicConfigSerializeWrapper":TopicConfigSerializeWrapper}``."""

    topicConfigSerializeWrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    filterServerList: list[str] = field(default_factory=list)

    def encode(self, compress: bool = False) -> bytes:
        """The wire body: JSON, or the compressed binary form when ``compress``."""
        if not compress:
            return self.to_json()
        parts = []
        dv = self.topicConfigSerializeWrapper.dataVersion.to_json()
        parts += [_I32.pack(len(dv)), dv]
        table = self.topicConfigSerializeWrapper.topicConfigTable
        parts.append(_I32.pack(len(table)))
        for tc in table.values():
            line = tc.encode_line().encode("utf-8")
            parts += [_I32.pack(len(line)), line]
        fs = fastjson.dumps(list(self.filterServerList))
        parts += [_I32.pack(len(fs)), fs]
        return zlib.compress(b"".join(parts), 9)

    @classmethod
    def decode(
        cls, data: bytes | bytearray | memoryview, compressed: bool = False, *, lazy: bool = False
    ) -> RegisterBrokerBody:
        """Decode either form; raises :class:`BodyError` on any malformation.

        With ``lazy`` (JSON form only) the topic table is a :class:`LazyTopicConfigTable`
        whose entries are decoded, and checked, when first read.
        """
        if not compressed:
            if not lazy:
                return cls.from_json(data)
            if data is None or len(data) == 0:
                raise BodyError("RegisterBrokerBody body is empty")
            try:
                tree = as_dict(fastjson.loads(data), "registerBrokerBody")
            except fastjson.JSONDecodeError as e:
                raise BodyError(f"RegisterBrokerBody body is not JSON: {e}") from None
            tcw = as_dict(tree.get("topicConfigSerializeWrapper"), "topicConfigSerializeWrapper")
            dv = tcw.get("dataVersion")
            wrapper = TopicConfigSerializeWrapper(
                LazyTopicConfigTable(as_dict(tcw.get("topicConfigTable"), "topicConfigTable")),  # type: ignore[arg-type]
                DataVersion.from_obj(dv) if dv is not None else DataVersion(),
            )
            fsl = [as_str(s, "") for s in as_list(tree.get("filterServerList"), "filterServerList")]
            return cls(wrapper, fsl)
        d = zlib.decompressobj()
        try:
            raw = d.decompress(bytes(data), MAX_INFLATED)
        except zlib.error as e:
            raise BodyError(f"compressed register body does not inflate: {e}") from None
        if d.unconsumed_tail:
            raise BodyError("compressed register body inflates beyond the size limit")
        pos = 0

        def take(n: int) -> bytes:
            nonlocal pos
            if n < 0 or pos + n > len(raw):
                raise BodyError("compressed register body is truncated")
            b = raw[pos : pos + n]
            pos += n
            return b

        def take_int() -> int:
            return _I32.unpack(take(4))[0]

        dv = DataVersion.from_json(take(take_int()))
        count = take_int()
        if count < 0:
            raise BodyError("compressed register body has a negative topic count")
        table: dict[str, TopicConfig] = {}
        for _ in range(count):
            try:
                line = take(take_int()).decode("utf-8")
            except UnicodeDecodeError:
                raise BodyError("topic config line is not UTF-8") from None
            tc = TopicConfig.decode_line(line)
            table[tc.topicName] = tc
        fs_raw = take(take_int())
        try:
            fs = fastjson.loads(fs_raw)
        except fastjson.JSONDecodeError as e:
            raise BodyError(f"filterServerList is not JSON: {e}") from None
        # 5.x appends topic-queue mappings after this; they are not needed here.
        return cls(
            TopicConfigSerializeWrapper(topicConfigTable=table, dataVersion=dv),
            [as_str(s, "") for s in as_list(fs, "filterServerList")],
        )

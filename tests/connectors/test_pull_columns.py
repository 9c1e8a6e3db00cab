"""PullColumns' properties column, without a broker: Arrow's split gives what the client's parser gives."""

from __future__ import annotations

import pytest

pytest.importorskip("pyarrow", reason="pyarrow is not installed")
pytest.importorskip("pyspark", reason="pyspark is not installed")

from common.record_codec import parse_properties  # noqa: E402
from connectors.spark.pull_columns import PullColumns  # noqa: E402

WELL_FORMED = [b"UNIQ_KEY\x01AB12\x02TAGS\x01TagA", b"k\x01v\x01w", "s\x01\xc3\xa9t\xc3\xa9".encode("latin-1")]


@pytest.mark.parametrize("raw", [
    WELL_FORMED,
    [*WELL_FORMED, b""],  # no properties at all
    [*WELL_FORMED, b"a\x01b\x02\x02c\x01d"],  # an empty item
    [*WELL_FORMED, b"a\x01b\x02novalue\x01"],  # an item without a value
    [*WELL_FORMED, b"\x01x"],  # nor a key
    [*WELL_FORMED, b"k\x01\xff\xfe"],  # not UTF-8
], ids=["well-formed", "empty", "empty-item", "no-value", "no-key", "not-utf8"])
def test_the_properties_map_equals_the_clients_parse(raw):
    pc = PullColumns("b", "T/b/0", None)
    got = [dict(m) for m in pc._props_map(raw).to_pylist()]
    assert got == [parse_properties(str(r, "utf-8", "replace")) for r in raw]

"""Offsets and options of the Spark connector, without Spark (pure functions)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from connectors.spark.errors import ConnectorError
from connectors.spark.offsets import OffsetRange, cap_by_total, flatten, nest, parse_offsets, split_ranges
from connectors.spark.options import SinkOptions, SourceOptions, StoreOptions
from tests.support import ROOT


def test_offsets_json_round_trip_and_specials():
    spec = parse_offsets("startingOffsets", '{"T": {"b1": {"0": 5, "3": -2}, "b2": {"1": -1}}}')
    assert spec == {("T", "b1", 0): 5, ("T", "b1", 3): -2, ("T", "b2", 1): -1}
    assert flatten(nest(spec)) == spec
    assert nest(spec) == {"T": {"b1": {"0": 5, "3": -2}, "b2": {"1": -1}}}
    assert parse_offsets("startingOffsets", " Earliest ") == "earliest"


@pytest.mark.parametrize("text, words", [
    ('{"T": {', "malformed JSON"),
    ('{"T": {"b": {"x": 1}}}', "queue id 'x'"),
    ('{"T": {"b": {"0": -3}}}', "must be an int >= -2"),
    ('{"T": {"b": {"0": true}}}', "must be an int >= -2"),
    ('[1]', "expected 'earliest', 'latest'"),
])
def test_bad_offsets_name_the_option(text, words):
    with pytest.raises(ConnectorError, match="option endingOffsets") as ei:
        parse_offsets("endingOffsets", text)
    assert words in str(ei.value)


def test_cap_by_total_shares_the_budget_by_lag():
    start = {("T", "b", 0): 0, ("T", "b", 1): 10, ("T", "b", 2): 5}
    latest = {("T", "b", 0): 100, ("T", "b", 1): 20, ("T", "b", 2): 5}
    end = cap_by_total(start, latest, 22)
    moved = {k: end[k] - start[k] for k in start}
    assert sum(moved.values()) == 22 and moved[("T", "b", 2)] == 0
    assert moved[("T", "b", 0)] > moved[("T", "b", 1)] >= 1
    assert cap_by_total(start, latest, 1000) == latest


def test_split_ranges_reaches_min_partitions_and_covers_each_offset_once():
    rs = [OffsetRange("T", "b", 0, 0, 100), OffsetRange("T", "b", 1, 50, 53), OffsetRange("T", "b", 2, 7, 7)]
    parts = split_ranges(rs, 10)
    assert len(parts) >= 10
    covered = sorted((p.queue_id, o) for p in parts for o in range(p.start, p.end))
    assert covered == [(0, o) for o in range(100)] + [(1, o) for o in range(50, 53)]


@pytest.mark.parametrize("opts, words", [
    ({"subscribe": "T"}, "option nameServer is required"),
    ({"nameServer": "localhost"}, "option nameServer: 'localhost' is not host:port"),
    ({"nameServer": "h:1"}, "got none"),
    ({"nameServer": "h:1", "subscribe": "T", "assign": '{"T":{"b":[0]}}'}, "got subscribe and assign"),
    ({"nameServer": "h:1", "subscribePattern": "(["}, "option subscribePattern"),
    ({"nameServer": "h:1", "subscribe": "T", "maxOffsetsPerTrigger": "0"}, "option maxOffsetsPerTrigger"),
    ({"nameServer": "h:1", "subscribe": "T", "failOnDataLoss": "maybe"}, "option failOnDataLoss"),
    ({"nameServer": "h:1", "subscribe": "T", "startingTimestamp": "5", "startingOffsets": "latest"},
     "startingTimestamp and startingOffsets"),
    ({"nameServer": "h:1", "assign": '{"T":{"b":[-1]}}'}, "option assign"),
    ({"nameServer": "h:1", "subscribe": "bad topic!"}, "option subscribe"),
])
def test_bad_source_options(opts, words):
    with pytest.raises(ConnectorError) as ei:
        SourceOptions.parse(opts)
    assert words in str(ei.value)


def test_source_defaults_follow_the_kafka_source():
    o = SourceOptions.parse({"NAMESERVER": "h:1", "subscribe": "A, B"})
    assert o.subscribe == ("A", "B") and o.starting == "earliest" and o.ending == "latest"
    assert o.fail_on_data_loss and o.sub_expression == "*" and o.pull_batch_size == 32
    assert SourceOptions.parse({"nameServer": "h:1", "subscribe": "A"}, streaming=True).starting == "latest"
    with pytest.raises(ConnectorError, match="endingOffsets is for batch"):
        SourceOptions.parse({"nameServer": "h:1", "subscribe": "A", "endingOffsets": "latest"}, streaming=True)


def test_sink_and_store_options():
    assert SinkOptions.parse({"nameServer": "h:1"}).topic is None
    with pytest.raises(ConnectorError, match="option topic"):
        SinkOptions.parse({"nameServer": "h:1", "topic": "a b"})
    with pytest.raises(ConnectorError, match="store root is required"):
        StoreOptions.parse({})
    with pytest.raises(ConnectorError, match="option toOffset"):
        StoreOptions.parse({"path": "/x", "fromOffset": "10", "toOffset": "5"})


def test_importing_the_package_does_not_import_pyspark():
    code = "import sys, connectors.spark, connectors.spark.options; assert 'pyspark' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)

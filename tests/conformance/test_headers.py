"""Header dataclasses match the spec's request/response tables field by field (§12-§16)."""

from __future__ import annotations

import importlib

import pytest

from remoting.codes import RequestCode, ResponseCode
from remoting.header import HeaderError
from tests.conformance.spec_tables import (
    GLOBAL_OPTIONAL,
    REQUEST_CODES,
    REQUEST_HEADERS,
    RESPONSE_CODES,
    RESPONSE_HEADERS,
)

_PY = {"String": str, "Integer": int, "Long": int, "boolean": bool}


def _cls(path: str):
    mod, _, name = path.rpartition(".")
    return getattr(importlib.import_module(mod), name)


def _check(section: str, path: str, table: dict) -> None:
    cls = _cls(path)
    ours = {name: (typ, req) for name, typ, req in cls._spec}
    missing = set(table) - set(ours)
    assert not missing, f"{section} {path}: fields missing {sorted(missing)}"
    extra = set(ours) - set(table) - GLOBAL_OPTIONAL
    assert not extra, f"{section} {path}: fields not in the spec {sorted(extra)}"
    for name in set(ours) & GLOBAL_OPTIONAL - set(table):
        assert ours[name] == (str, False), f"{section} {path}: {name} must be an optional String"
    for name, (jtype, req) in table.items():
        typ, required = ours[name]
        assert typ is _PY[jtype], f"{section} {path}.{name}: {typ.__name__}, spec says {jtype}"
        if req == "R":
            assert required, f"{section} {path}.{name} is required in the spec"
        elif req == "O":
            assert not required, f"{section} {path}.{name} is optional in the spec"


@pytest.mark.parametrize("code", sorted(REQUEST_HEADERS))
def test_request_header_fields(code):
    section, path, table = REQUEST_HEADERS[code]
    _check(section, path, table)


@pytest.mark.parametrize("code", sorted(RESPONSE_HEADERS))
def test_response_header_fields(code):
    section, path, table = RESPONSE_HEADERS[code]
    _check(section, path, table)


@pytest.mark.parametrize("code", sorted(REQUEST_HEADERS))
def test_required_fields_are_enforced_and_round_trip(code):
    """A header built from the spec's sample values round-trips; dropping an R field is refused."""
    section, path, table = REQUEST_HEADERS[code]
    cls = _cls(path)
    sample = {"String": "x", "Integer": "7", "Long": "1690000000000", "boolean": "true"}
    ext = {name: sample[jtype] for name, (jtype, _req) in table.items()}
    h = cls.from_ext_fields(ext)
    assert h.to_ext_fields() == ext
    for name, (_jtype, req) in table.items():
        if req == "R":
            partial = {k: v for k, v in ext.items() if k != name}
            with pytest.raises(HeaderError, match=name):
                cls.from_ext_fields(partial)


def test_headers_written_like_java_to_string():
    """§8: ints in decimal, booleans "true"/"false", null fields not written."""
    from remoting.header.broker import CreateTopicRequestHeader

    h = CreateTopicRequestHeader(topic="T", defaultTopic="TBW102", readQueueNums=8, writeQueueNums=8, perm=6,
                                 topicFilterType="SINGLE_TAG")
    assert h.to_ext_fields() == {
        "topic": "T", "defaultTopic": "TBW102", "readQueueNums": "8", "writeQueueNums": "8", "perm": "6",
        "topicFilterType": "SINGLE_TAG", "order": "false",
    }


def test_booleans_parsed_like_java_parse_boolean():
    """§8: anything but "true" (case-insensitive) is false; extra keys are allowed."""
    from remoting.header.namesrv import GetRouteInfoRequestHeader

    for raw, want in (("TRUE", True), ("True", True), ("yes", False), ("1", False), ("false", False)):
        h = GetRouteInfoRequestHeader.from_ext_fields({"topic": "T", "acceptStandardJsonOnly": raw,
                                                      "AccessKey": "k", "Signature": "s"})
        assert h.acceptStandardJsonOnly is want, raw


def test_request_codes_match_spec():
    ours = {c.name: int(c) for c in RequestCode}
    assert ours == REQUEST_CODES


def test_response_codes_match_spec():
    ours = {c.name: int(c) for c in ResponseCode}
    assert ours == RESPONSE_CODES


def test_language_codes_match_spec():
    """§6 LanguageCode table; §7 the version we send (V4_9_7 ordinal, >= 401 for standard-JSON routes)."""
    from remoting.codes import CURRENT_VERSION, LanguageCode

    assert {c.name: int(c) for c in LanguageCode} == {
        "JAVA": 0, "CPP": 1, "DOTNET": 2, "PYTHON": 3, "DELPHI": 4, "ERLANG": 5, "RUBY": 6, "OTHER": 7, "HTTP": 8,
        "GO": 9, "PHP": 10, "OMS": 11, "RUST": 12}
    assert CURRENT_VERSION == 407


def test_producer_retry_codes_and_degraded_statuses():
    """§10 producer retry policy: retry on 17, 14, 1, 16, 204, 205; 10/12/11 are stored with a degraded status."""
    from client.exceptions import RETRIABLE_BROKER_CODES, MQBrokerError
    from client.producer import _STATUS_BY_CODE

    assert {int(c) for c in RETRIABLE_BROKER_CODES} == {17, 14, 1, 16, 204, 205}
    assert all(MQBrokerError(c, "x").retriable for c in (17, 14, 1, 16, 204, 205))
    assert not any(MQBrokerError(c, "x").retriable for c in (2, 13, 10, 23, 215))
    assert {int(c): s.name for c, s in _STATUS_BY_CODE.items()} == {
        0: "SEND_OK", 10: "FLUSH_DISK_TIMEOUT", 12: "FLUSH_SLAVE_TIMEOUT", 11: "SLAVE_NOT_AVAILABLE"}

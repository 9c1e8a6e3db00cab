"""common.speedups.send_header_v2: both twins give the same answer (None included) for any extFields, and
where they answer, the send processor's general V2 parse reads the same header."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.processor.send_message_header import SendHeader, _parse_v2_general, parse_send_header
from common import speedups

TWINS = [pytest.param(speedups.pure, id="pure")]
if speedups.compiled is not None:
    TWINS.append(pytest.param(speedups.compiled, id="compiled"))
USUAL = {"a": "pg", "b": "TopicA", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1764000000000", "h": "0",
         "i": "UNIQ_KEY\x01x"}


def fields(h: SendHeader | None) -> tuple | None:
    return None if h is None else tuple(getattr(h, k) for k in SendHeader.__slots__)


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("ext", [
    USUAL, {**USUAL, "j": "3", "k": "true", "l": "16", "m": "false", "AccessKey": "x"},
    {k: v for k, v in USUAL.items() if k != "i"}, {**USUAL, "g": "-9223372036854775808", "e": "-2147483648"},
    {**USUAL, "g": "9223372036854775807", "d": "2147483647", "h": "0000000000000000007"},
])
def test_usual_headers(twin, ext):
    got = twin.send_header_v2(ext)
    assert got is not None and got == fields(_parse_v2_general(ext)) == fields(parse_send_header(ext, True))


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("change", [
    {"a": None}, {"b": 1}, {"d": " 4"}, {"d": "+4"}, {"d": "4_0"}, {"d": "2147483648"}, {"e": 1}, {"g": "1.0"},
    {"g": "9223372036854775808"}, {"g": "12345678901234567890"}, {"h": ""}, {"h": "-"}, {"i": 5}, {"j": "x"},
    {"k": "TRUE"}, {"m": "yes"}, {"l": "2147483648"}, {"f": "\u0663"},
])
def test_other_headers_go_the_general_way(twin, change):
    ext = {**USUAL, **{k: v for k, v in change.items() if v is not None}}
    for k, v in change.items():
        if v is None:
            del ext[k]
    assert twin.send_header_v2(ext) is None


def test_not_a_dict_is_refused():
    for twin in (speedups.pure, speedups.compiled):
        if twin is not None:
            with pytest.raises(TypeError):
                twin.send_header_v2([("a", "b")])


numbers = st.integers(-(2**64), 2**64).map(str) | st.from_regex(r"\A[-+ 0-9_]{0,22}\Z") | st.integers(-5, 5)
values = st.none() | numbers | st.sampled_from(["true", "false", "TRUE", "True", ""]) | st.text(max_size=6)


@settings(max_examples=500, deadline=None)
@given(changes=st.dictionaries(st.sampled_from("abcdefghijklm"), values, max_size=4))
def test_twins_agree_and_match_the_general_parse(changes):
    ext = {k: v for k, v in {**USUAL, **changes}.items() if v is not None}  # None: the field left out
    want = speedups.pure.send_header_v2(ext)
    if speedups.compiled is not None:
        assert speedups.compiled.send_header_v2(ext) == want
    if want is not None:
        assert want == fields(_parse_v2_general(ext))

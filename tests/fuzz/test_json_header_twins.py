"""common.speedups.json_header: both twins give the same answer (None included) for any header text,
and where they answer, the remoting codec's general JSON path decodes the same command."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import remoting.codec as codec
from common import speedups
from remoting.codes import LanguageCode, ResponseCode
from remoting.command import RemotingCommand

LANGS = codec._LANG_BY_NAME
TWINS = [pytest.param(speedups.pure, id="pure")]
if speedups.compiled is not None:
    TWINS.append(pytest.param(speedups.compiled, id="compiled"))

V2_SEND = {"code": 310, "extFields": {"a": "pg", "b": "TopicA", "c": "TBW102", "d": "4", "e": "1", "f": "0",
                                      "g": "1764000000000", "h": "0", "i": "UNIQ_KEY\x01x\x02TAGS\x01t"},
           "flag": 0, "language": "JAVA", "opaque": 42, "serializeTypeCurrentRPC": "JSON", "version": 401}


def general_path(raw: bytes, monkeypatch) -> tuple | None:
    """The fields the codec decodes without the compiled call (None: it refuses the header)."""
    with monkeypatch.context() as m:
        m.setattr(codec, "_json_header", lambda raw, languages: None)
        try:
            cmd = codec.decode_header(0, raw)
        except Exception:  # noqa: BLE001 - refused: the twins must not answer either
            return None
    return cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("raw", [
    orjson.dumps(V2_SEND),
    json.dumps(V2_SEND).encode(),  # ", " and ": " separators, \u escapes
    json.dumps(V2_SEND, indent=2, ensure_ascii=False).encode(),
    orjson.dumps({**V2_SEND, "remark": "é\u2603\U0001F600 \"q\" \\ / \b\f\n\r\t", "language": "GO"}),
    json.dumps({**V2_SEND, "remark": "\U0001F600\u0000", "extFields": {}}).encode(),
    b'{"language":"CPP","extFields":null,"remark":null}',
    b' {"language":9, "code":-2147483648, "flag":2147483647, "opaque":-0} ',
])
def test_usual_headers(twin, raw, monkeypatch):
    got = twin.json_header(raw, LANGS)
    assert got is not None and got == general_path(raw, monkeypatch)
    assert twin.json_header(memoryview(raw), LANGS) == got


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("raw", [
    b"", b"{}", b"[]", b"null", b'{"language":"JAVA"} x', b'{"language":"JAVA",}', b'\xef\xbb\xbf{"language":"JAVA"}',
    b'{"language":"KLINGON"}', b'{"language":null}', b'{"language":"JAVA","code":"310"}',
    b'{"language":"JAVA","code":310.0}', b'{"language":"JAVA","code":1e2}', b'{"language":"JAVA","code":01}',
    b'{"language":"JAVA","code":2147483648}', b'{"language":"JAVA","code":true}', b'{"language":"JAVA","x":1}',
    b'{"language":"JAVA","remark":1}', b'{"language":"JAVA","extFields":{"a":1}}',
    b'{"language":"JAVA","extFields":{"a":null}}', b'{"language":"JAVA","extFields":[]}',
    b'{"language":"JAVA","serializeTypeCurrentRPC":null}', b'{"language":"JAVA","remark":"\\ud800"}',
    b'{"language":"JAVA","remark":"\\udc00\\ud800"}', b'{"language":"JAVA","remark":"\\x"}',
    b'{"language":"JAVA","remark":"\x01"}', b'{"language":"JAVA","remark":"\xff"}', b'{"language":"JAVA"',
])
def test_other_headers_go_the_general_way(twin, raw):
    assert twin.json_header(raw, LANGS) is None


def test_a_bad_languages_table_is_refused():
    for twin in (speedups.pure, speedups.compiled):
        if twin is not None:
            with pytest.raises(TypeError):
                twin.json_header(b"{}", None)


text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
ints = st.integers(-(2**31) - 2, 2**31 + 1) | st.sampled_from([0, -1, 2**40])
scalar = st.none() | st.booleans() | ints | st.floats(allow_nan=False, allow_infinity=False) | text
keys = st.sampled_from(["code", "language", "version", "opaque", "flag", "remark", "extFields",
                        "serializeTypeCurrentRPC", "other", ""])
values = (scalar | st.sampled_from(["JAVA", "GO", "PYTHON", "NOPE"]) | st.sampled_from(list(LanguageCode)).map(int)
          | st.dictionaries(text, text | scalar, max_size=4) | st.lists(scalar, max_size=2))
headers = st.dictionaries(keys, values, max_size=8)


def dumps(d: dict, style: int) -> bytes:
    if style == 0:
        return orjson.dumps(d)
    return json.dumps(d, ensure_ascii=style == 1, indent=None if style < 3 else 1).encode()


@settings(max_examples=400, deadline=None)
@given(d=headers, style=st.integers(0, 3))
def test_twins_agree_on_generated_headers(d, style):
    raw = dumps(d, style)
    want = speedups.pure.json_header(raw, LANGS)
    if speedups.compiled is not None:
        assert speedups.compiled.json_header(raw, LANGS) == want


@settings(max_examples=300, deadline=None)
@given(d=headers, style=st.integers(0, 3))
def test_an_answer_is_what_the_general_path_decodes(d, style):
    raw = dumps(d, style)
    want = speedups.pure.json_header(raw, LANGS)
    if want is not None:
        with pytest.MonkeyPatch.context() as m:
            assert want == general_path(raw, m)


@settings(max_examples=400, deadline=None)
@given(cut=st.integers(0, 400), byte=st.integers(0, 255), style=st.integers(0, 3))
def test_twins_agree_on_damaged_headers(cut, byte, style):
    raw = bytearray(dumps({**V2_SEND, "remark": "é\U0001F600"}, style))
    pos = cut % len(raw)
    raw[pos] = byte
    for sample in (bytes(raw), bytes(raw[:pos])):
        want = speedups.pure.json_header(sample, LANGS)
        if speedups.compiled is not None:
            assert speedups.compiled.json_header(sample, LANGS) == want


# -- json_head: the encoding side ----------------------------------------------------------------

NAMES = codec._LANG_NAMES


def general_head(cmd, body_len: int) -> bytes | None:
    """Prefix and header as the codec's general path writes them (None: it refuses the command)."""
    try:
        h = codec._encode_json(cmd)
    except Exception:  # noqa: BLE001
        return None
    if len(h) > 0xFFFFFF:
        return None
    return codec._PREFIX.pack(4 + len(h) + body_len, len(h)) + h


def command(code=0, language=LanguageCode.JAVA, version=401, opaque=7, flag=1, remark=None, ext=None):
    cmd = RemotingCommand(code, flag=flag, remark=remark, ext_fields=ext)
    cmd.language, cmd.version, cmd.opaque = language, version, opaque
    return cmd


def fields_of(cmd) -> tuple:
    return cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, cmd.remark, cmd.ext_fields


SEND_RESPONSE = {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true", "msgId": "7F0000010000" + "0" * 20,
                 "queueId": "3", "queueOffset": "12"}


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("cmd", [
    command(ext=SEND_RESPONSE), command(), command(remark="é\"\\/\x00\x1f\x7f\U0001F600\b\f\n\r\t", ext={}),
    command(code=ResponseCode.SYSTEM_ERROR, language=99, opaque=-(2**63), version=2**63 - 1, ext={"é": "\x01"}),
])
def test_usual_commands_encode_as_the_general_path(twin, cmd):
    for body_len in (0, 1024):
        got = twin.json_head(*fields_of(cmd), NAMES, body_len)
        assert got is not None and got == general_head(cmd, body_len)


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("cmd", [
    command(code=True), command(code="1"), command(opaque=2**63), command(version=1.0), command(remark=1),
    command(remark="\ud800"), command(ext={"a": 1}), command(ext={"a": None}), command(ext={1: "a"}),
    command(ext={"a": "\udc00"}), command(ext=[("a", "b")]), command(ext={str(i): "v" for i in range(65)}),
    command(language=[1]), command(remark="x" * 0x1000000),
])
def test_other_commands_go_the_general_way(twin, cmd):
    assert twin.json_head(*fields_of(cmd), NAMES, 0) is None


text_s = st.text(max_size=8)  # lone surrogates included
fields = st.none() | st.booleans() | ints | text_s | st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=400, deadline=None)
@given(code=ints | fields, language=st.sampled_from([*LanguageCode, 3, 200, "JAVA"]), version=ints, opaque=ints,
       flag=ints | fields, remark=st.none() | text_s | ints,
       ext=st.none() | st.dictionaries(text_s, text_s | fields, max_size=5), body_len=st.integers(0, 2**31))
def test_twins_agree_on_generated_commands(code, language, version, opaque, flag, remark, ext, body_len):
    cmd = command(code, language, version, opaque, flag, remark, ext)
    want = speedups.pure.json_head(*fields_of(cmd), NAMES, body_len)
    if speedups.compiled is not None:
        assert speedups.compiled.json_head(*fields_of(cmd), NAMES, body_len) == want
    if want is not None:
        assert want == general_head(cmd, body_len)

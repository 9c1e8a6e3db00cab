"""remoting.fastjson against fastjson's real output (golden files written by RocketMQ 4.9.7)."""

from __future__ import annotations

import orjson
import pytest

from remoting import fastjson
from remoting.fastjson import JSONDecodeError, ObjectKey
from tests.support import GOLDEN_STORE

GOLDEN = GOLDEN_STORE / "store" / "config"


@pytest.mark.skipif(not (GOLDEN / "consumerOffset.json").exists(), reason="golden store not available")
def test_reads_fastjson_bare_numeric_keys_from_a_real_broker_file():
    tree = fastjson.loads((GOLDEN / "consumerOffset.json").read_bytes())
    table = tree["offsetTable"]["GoldenEvents@golden-retry-group"]
    assert table == {"0": 85, "1": 37, "2": 37, "3": 36}


def test_bare_keys_and_object_keys():
    data = b'{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"x":{-1:true}}'
    assert fastjson.loads(data) == {
        "brokerAddrs": {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"},
        "x": {"-1": True},
    }
    data = b'{"offsetTable":{{"topic":"T","queueId":0,"brokerName":"b1"}:{"brokerOffset":10}}}'
    tree = fastjson.loads(data)
    (key,) = tree["offsetTable"]
    assert isinstance(key, ObjectKey)
    assert fastjson.loads(key) == {"brokerName": "b1", "queueId": 0, "topic": "T"}
    # The standard form (object key as a string of its JSON) decodes to the same key.
    std = b'{"offsetTable":{"{\\"brokerName\\":\\"b1\\",\\"queueId\\":0,\\"topic\\":\\"T\\"}":{"brokerOffset":10}}}'
    assert fastjson.loads(std) == tree


def test_tolerates_whitespace_tabs_single_quotes_and_trailing_commas():
    data = '{\n\t\'a\':[1,2,],\n\t0 : {"k" : "v",},\n}'
    assert fastjson.loads(data) == {"a": [1, 2], "0": {"k": "v"}}


@pytest.mark.parametrize(
    "bad", [b"", b"{", b'{"a":}', b"{0 1}", b"[1,2", b'{"a":1} x', b"\xff\xfe", b"{a b:1}", b"nul"]
)
def test_rejects_garbage_with_a_clear_error(bad):
    with pytest.raises(JSONDecodeError):
        fastjson.loads(bad)


def test_deep_nesting_is_refused_not_a_crash():
    with pytest.raises(JSONDecodeError):
        fastjson.loads("{0:" * 2000 + "1" + "}" * 2000)


def test_fastjson_style_writes_int_keys_bare_and_drops_nulls():
    obj = {"brokerAddrs": {0: "a:1", 1: "b:2"}, "brokerName": "b", "cluster": None, "list": [1, None, "x"]}
    assert fastjson.dumps(obj) == b'{"brokerAddrs":{0:"a:1",1:"b:2"},"brokerName":"b","list":[1,null,"x"]}'


def test_fastjson_style_keeps_non_ascii_as_utf8_and_writes_object_keys_raw():
    key = fastjson.object_key({"topic": "T", "queueId": 1, "brokerName": "b"})
    out = fastjson.dumps({"t": "主题", "m": {key: 5}})
    assert out == '{"t":"主题","m":{{"brokerName":"b","queueId":1,"topic":"T"}:5}}'.encode()
    assert fastjson.loads(out)["m"] == {key: 5}


def test_standard_style_quotes_sorts_and_escapes():
    obj = {"z": 1, "brokerAddrs": {10: "ten", 2: "two", 0: "zero"}, "name": "主题😀", "a": None}
    out = fastjson.dumps(obj, standard=True)
    assert out.isascii()
    # map keys sorted like Java's TreeMap<Long>: numerically, then quoted
    assert out == (
        b'{"brokerAddrs":{"0":"zero","2":"two","10":"ten"},"name":"\\u4E3B\\u9898\\uD83D\\uDE00","z":1}'
    )
    assert orjson.loads(out)["name"] == "主题😀"


def test_standard_style_object_keys_become_strings():
    key = fastjson.object_key({"topic": "T", "queueId": 1, "brokerName": "b"})
    out = fastjson.dumps({"m": {key: 5}}, standard=True)
    assert orjson.loads(out) == {"m": {'{"brokerName":"b","queueId":1,"topic":"T"}': 5}}


def test_roundtrip_both_styles():
    obj = {"a": [1, 2.5, True, False, 'q"\\\n'], "b": {"c": {}}, "d": []}
    for standard in (False, True):
        assert fastjson.loads(fastjson.dumps(obj, standard=standard)) == obj

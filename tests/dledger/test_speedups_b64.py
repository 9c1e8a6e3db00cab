"""common.speedups.b64encode / b64decode (DLedger PUSH bodies): both twins agree with binascii."""

from __future__ import annotations

import base64
import binascii
import random

import pytest

from common import speedups
from dledger.entry import DLedgerEntry

TWINS = [pytest.param(speedups.pure, id="pure")]
if speedups.compiled is not None:
    TWINS.append(pytest.param(speedups.compiled, id="compiled"))


@pytest.mark.parametrize("twin", TWINS)
def test_round_trip_every_length(twin):
    rnd = random.Random(7)
    for n in list(range(0, 70)) + [1023, 1024, 1025, 4096]:
        data = rnd.randbytes(n)
        text = twin.b64encode(data)
        assert text == base64.b64encode(data).decode("ascii")
        assert twin.b64decode(text) == data
        assert twin.b64decode(text.encode("ascii")) == data
        assert twin.b64decode(memoryview(text.encode("ascii"))) == data
        assert twin.b64encode(bytearray(data)) == text


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("text", [
    "a", "ab", "abc", "abcde", "=", "==", "===", "====", "a===", "ab=c", "a=bc", "=abc", "abc=d===",
    "ab==ab==", "YWJj ZA==", "YWJjZA==\n", "YWJj\nZA==", "YWJjZA=", "YWJjZ===", "YW-_", "YWJjZ\u00e9==",
    "YWJjZA==YWJj", "\x00\x00\x00\x00",
])
def test_non_canonical_text_gives_none(twin, text):
    assert twin.b64decode(text) is None


def test_twins_agree_on_random_text():
    if speedups.compiled is None:
        pytest.skip("common._speedups not built")
    rnd = random.Random(11)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n"
    for _ in range(20000):
        n = rnd.choice([0, 4, 8, 12, rnd.randrange(0, 17)])
        text = "".join(rnd.choice(alphabet) for _ in range(n))
        got = speedups.compiled.b64decode(text)
        assert got == speedups.pure.b64decode(text), text
        if got is not None:
            assert got == binascii.a2b_base64(text)


def test_entry_json_round_trip_and_lenient_fallback():
    e = DLedgerEntry(5, 2, bytes(range(256)) * 5, 4096)
    j = e.to_json()
    assert j["body"] == base64.b64encode(e.body).decode("ascii")
    assert DLedgerEntry.from_json(j) == e
    # a body only the lenient decoder accepts (line breaks) still decodes as before
    d = dict(j, body=base64.encodebytes(e.body).decode("ascii"))
    assert DLedgerEntry.from_json(d).body == e.body
    with pytest.raises(binascii.Error):
        DLedgerEntry.from_json(dict(j, body="YWJjZA"))  # missing padding: refused, as before

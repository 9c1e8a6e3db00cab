"""common.speedups.acl_mac: both twins give RocketMQ's ACL signature (checked against hmac), and the same
answer, None included, for any header: values with nulls and lone surrogates, keys the shape does not know."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common import speedups
from common.acl_signer import _pads

TWINS = [pytest.param(speedups.pure, id="pure")]
if speedups.compiled is not None:
    TWINS.append(pytest.param(speedups.compiled, id="compiled"))

PADS = _pads("secret-key-1")
keys = st.text(min_size=1, max_size=6)
values = st.none() | st.text(max_size=12)  # text() includes lone surrogates


def reference(ext: dict, order: tuple, body: bytes) -> bytes:
    text = "".join("null" if ext[k] is None else ext[k] for k in order)
    mac = hmac.new(b"secret-key-1", text.encode("utf-8", "surrogatepass") + body, hashlib.sha1).digest()
    return base64.b64encode(mac)


@pytest.mark.parametrize("twin", TWINS)
@settings(max_examples=300, deadline=None)
@given(ext=st.dictionaries(keys, values, max_size=8), data=st.data(), body=st.binary(max_size=64))
def test_signature_of_the_named_fields(twin, ext, data, body):
    names = list(ext)
    order = tuple(data.draw(st.permutations(names)))
    cut = data.draw(st.integers(0, len(order)))
    signed, others = order[:cut], order[cut:]
    assert twin.acl_mac(PADS, ext, signed, others, body) == reference(ext, signed, body)
    assert twin.acl_mac(PADS, ext, signed, others, memoryview(body)) == reference(ext, signed, body)


@pytest.mark.parametrize("twin", TWINS)
@settings(max_examples=300, deadline=None)
@given(ext=st.dictionaries(keys, values, max_size=8), order=st.lists(keys, max_size=8, unique=True),
       others=st.lists(keys, max_size=3, unique=True))
def test_twins_agree_on_any_shape(twin, ext, order, others):
    order, others = tuple(order), tuple(k for k in others if k not in order)  # disjoint, as shapes are
    want = speedups.pure.acl_mac(PADS, ext, order, others, b"B")
    assert twin.acl_mac(PADS, ext, order, others, b"B") == want
    exact = set(ext) == set(order) | set(others) and len(ext) == len(order) + len(others)
    assert (want is not None) == exact


@pytest.mark.parametrize("twin", TWINS)
def test_a_key_swapped_for_an_unknown_one_is_not_this_shape(twin):
    # the shape leaves _UNIQUE_KEY_QUERY out of the content: another key in its place must not pass unsigned
    ext = {"a": "1", "b": "2", "Signature": "s", "X": "injected"}
    assert twin.acl_mac(PADS, ext, ("a", "b"), ("Signature", "_UNIQUE_KEY_QUERY"), b"") is None
    assert twin.acl_mac(PADS, {"a": "1"}, ("a", "b"), (), b"") is None
    with pytest.raises(TypeError):
        twin.acl_mac(PADS, {"a": 1}, ("a",), (), b"")

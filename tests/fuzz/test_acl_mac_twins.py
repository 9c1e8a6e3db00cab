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
from common.acl_signer import SKIP_BROKER, hashlib_pads, request_signature

KEY_BLOCK = b"secret-key-1".ljust(64, b"\0")
HASHLIB_PADS = hashlib_pads(KEY_BLOCK)
# each twin with each form of keyed states it takes: hashlib objects, and the compiled twin's raw
# libcrypto states where it was built with them
TWINS = [pytest.param((speedups.pure, HASHLIB_PADS), id="pure")]
if speedups.compiled is not None:
    TWINS.append(pytest.param((speedups.compiled, HASHLIB_PADS), id="compiled-hashlib"))
    if speedups.compiled.acl_pads(KEY_BLOCK) is not None:
        TWINS.append(pytest.param((speedups.compiled, speedups.compiled.acl_pads(KEY_BLOCK)), id="compiled-raw"))
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
    twin, pads = twin
    names = list(ext)
    order = tuple(data.draw(st.permutations(names)))
    cut = data.draw(st.integers(0, len(order)))
    signed, others = order[:cut], order[cut:]
    assert twin.acl_mac(pads, ext, signed, others, body) == reference(ext, signed, body)
    assert twin.acl_mac(pads, ext, signed, others, memoryview(body)) == reference(ext, signed, body)


@pytest.mark.parametrize("twin", TWINS)
@settings(max_examples=300, deadline=None)
@given(ext=st.dictionaries(keys, values, max_size=8), order=st.lists(keys, max_size=8, unique=True),
       others=st.lists(keys, max_size=3, unique=True))
def test_twins_agree_on_any_shape(twin, ext, order, others):
    twin, pads = twin
    order, others = tuple(order), tuple(k for k in others if k not in order)  # disjoint, as shapes are
    want = speedups.pure.acl_mac(HASHLIB_PADS, ext, order, others, b"B")
    assert twin.acl_mac(pads, ext, order, others, b"B") == want
    exact = set(ext) == set(order) | set(others) and len(ext) == len(order) + len(others)
    assert (want is not None) == exact


@pytest.mark.parametrize("twin", TWINS)
def test_a_key_swapped_for_an_unknown_one_is_not_this_shape(twin):
    twin, pads = twin
    # the shape leaves _UNIQUE_KEY_QUERY out of the content: another key in its place must not pass unsigned
    ext = {"a": "1", "b": "2", "Signature": "s", "X": "injected"}
    assert twin.acl_mac(pads, ext, ("a", "b"), ("Signature", "_UNIQUE_KEY_QUERY"), b"") is None
    assert twin.acl_mac(pads, {"a": "1"}, ("a", "b"), (), b"") is None
    with pytest.raises(TypeError):
        twin.acl_mac(pads, {"a": 1}, ("a",), (), b"")


@pytest.mark.parametrize("secret", ["secret-key-1", "k" * 64, "long-" * 40, "s\u00e9cr\u00e8t-cl\u00e9"])
def test_the_signer_keys_any_secret_as_hmac_does(secret):
    # the states acl_signer keeps per secret (raw where compiled with libcrypto): keys longer than a
    # SHA-1 block are hashed first, as HMAC does, and non-ASCII secrets are UTF-8
    ext = {"topic": "T", "AccessKey": "ak", "Signature": "x"}
    body = b"body" * 100
    want = base64.b64encode(hmac.new(secret.encode(), b"akT" + body, hashlib.sha1).digest()).decode()
    assert request_signature(ext, body, secret, SKIP_BROKER) == want
    assert request_signature(ext, memoryview(body), secret, SKIP_BROKER) == want


@pytest.mark.skipif(speedups.compiled is None, reason="the compiled twin is not built")
def test_raw_states_want_the_64_byte_key_block():
    with pytest.raises(ValueError):
        speedups.compiled.acl_pads(b"short")
    raw = speedups.compiled.acl_pads(KEY_BLOCK)
    assert raw is None or isinstance(raw, bytes)


@pytest.mark.parametrize("twin", TWINS)
@settings(max_examples=200, deadline=None)
@given(ext=st.dictionaries(keys, values, max_size=6), body=st.binary(max_size=32), other=st.text(max_size=30))
def test_the_expected_signature_is_compared_not_returned(twin, ext, body, other):
    twin, pads = twin
    order = tuple(ext)
    mac = twin.acl_mac(pads, ext, order, (), body)
    assert twin.acl_mac(pads, ext, order, (), body, mac.decode()) is True
    assert twin.acl_mac(pads, ext, order, (), body, other) is (other == mac.decode())
    assert twin.acl_mac(pads, ext, order, (), body, mac.decode()[:-1] + "\u00e9") is False  # not ASCII
    assert twin.acl_mac(pads, {**ext, "longer-than-any-key": "v"}, order, (), body, mac.decode()) is None  # not this shape

"""@header: dataclass behaviour (init, defaults, repr, eq, slots) and the codec spec, without dataclasses."""

from __future__ import annotations

import pytest

from remoting.header import CommandHeader, HeaderError, header


@header
class H(CommandHeader):
    """A header with required, typed and optional fields."""

    topic: str
    queueId: int
    order: bool = False
    remark: str | None = None


def test_init_defaults_repr_eq_and_slots():
    h = H("T", 3)
    assert (h.topic, h.queueId, h.order, h.remark) == ("T", 3, False, None)
    assert H(topic="T", queueId=3) == h and H("T", 4) != h and h != ("T", 3)
    assert repr(h) == "H(topic='T', queueId=3, order=False, remark=None)"
    assert H.__slots__ == ("topic", "queueId", "order", "remark") and H.__doc__.startswith("A header")
    assert H.__hash__ is None  # mutable, like a dataclass with eq
    with pytest.raises(TypeError):
        H("T")  # queueId missing
    with pytest.raises(TypeError):
        H("T", 1, False, None, "extra")


def test_spec_and_ext_fields_round_trip():
    assert H._spec == (("topic", str, True), ("queueId", int, True), ("order", bool, False), ("remark", str, False))
    h = H.from_ext_fields({"topic": "T", "queueId": "7", "order": "TRUE"})
    assert h == H("T", 7, True) and h.to_ext_fields() == {"topic": "T", "queueId": "7", "order": "true"}
    with pytest.raises(HeaderError, match="<queueId>"):
        H.from_ext_fields({"topic": "T"})


def test_default_before_required_is_refused():
    with pytest.raises(TypeError):

        @header
        class Bad(CommandHeader):
            a: int = 1
            b: str


def test_unusual_annotations_are_evaluated():
    from typing import Optional  # noqa: UP035 - the decorator must read this spelling too

    @header
    class U(CommandHeader):
        n: Optional[int] = None  # noqa: UP045
        f: float = 0.5

    assert U._spec == (("n", int, False), ("f", float, False))
    assert U.from_ext_fields({"n": "5", "f": "1.5"}) == U(5, 1.5)

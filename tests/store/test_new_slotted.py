"""common.speedups.new_slotted: a slotted object built without its __init__, both twins.

Checked against the class's own constructor (a slotted dataclass given every field) and
against setting the slots one by one; the classes and counts it must refuse are refused by
both twins alike.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from broker.processor.send_message_header import SendHeader
from common import speedups
from common.message import MessageExtBrokerInner

TWINS = [pytest.param(speedups.pure, id="pure")] + (
    [pytest.param(speedups.compiled, id="compiled")] if speedups.compiled is not None else [])


def random_inner(rnd: random.Random) -> tuple:
    return ("T" * rnd.randrange(1, 9), rnd.randrange(8), rnd.randrange(-5, 5), rnd.randbytes(rnd.randrange(40)),
            {"TAGS": "a"}, "TAGS\x01a", rnd.randrange(1 << 31), rnd.randrange(64), rnd.randrange(1 << 45),
            ("127.0.0.1", rnd.randrange(65536)), ("10.0.0.1", 10911), rnd.randrange(16), 0, 0, 0, 0, -1)


@pytest.mark.parametrize("twin", TWINS)
def test_equals_the_dataclass_given_every_field(twin):
    rnd = random.Random(5)
    assert len(dataclasses.fields(MessageExtBrokerInner)) == 17
    for _ in range(200):
        values = random_inner(rnd)
        got = twin.new_slotted(MessageExtBrokerInner, values)
        assert type(got) is MessageExtBrokerInner
        assert got == MessageExtBrokerInner(*values)
        assert got.properties is values[4]  # the objects themselves, not copies


@pytest.mark.parametrize("twin", TWINS)
def test_send_header_slots_in_declaration_order(twin):
    values = ("pg", "T", "TBW102", 4, 3, 0, 1_700_000_000_000, 0, "TAGS\x01a", 0, False, 16, False)
    h = twin.new_slotted(SendHeader, values)
    assert [getattr(h, name) for name in SendHeader.__slots__] == list(values)


class Plain:
    pass


class Slotted:
    __slots__ = ("x", "y")


class WithWeakref:
    __slots__ = ("x", "__weakref__")


class Sub(Slotted):
    __slots__ = ("z",)


@pytest.mark.parametrize("twin", TWINS)
def test_refusals(twin):
    o = twin.new_slotted(WithWeakref, (7,))
    assert o.x == 7
    o = twin.new_slotted(Slotted, (1, [2]))
    assert (o.x, o.y) == (1, [2])
    for cls, values in ((Plain, ()), (Sub, (1, 2, 3)), (Slotted, (1,)), (Slotted, (1, 2, 3)), (Slotted, [1, 2]),
                        (int, (1,))):
        with pytest.raises(TypeError):
            twin.new_slotted(cls, values)

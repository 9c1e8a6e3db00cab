"""The total-queue checker on hand-made histories (quick, not soak: the checker guards every soak)."""

from __future__ import annotations

from tests.soak.checker import History, Read, body_for, check, key_of

Q0, Q1 = ("T", 0), ("T", 1)


def _sent(n: int, producer: str = "p0", acked: bool = True) -> tuple[History, list[str]]:
    h = History()
    keys = []
    for i in range(n):
        k, _b = h.attempt(producer, i)
        h.ack(k, 0 if acked else 10)
        keys.append(k)
    return h, keys


def test_clean_history_is_ok():
    h, keys = _sent(5)
    reads = [Read(Q0, i, body_for(k)) for i, k in enumerate(keys)]
    rep = check(h, reads + reads[:2])  # reading a slot again is not a duplicate
    assert rep.ok, rep.detail()
    assert (rep.attempted, rep.acked, rep.read) == (5, 5, 5)


def test_lost_is_acked_and_never_read_only():
    h, keys = _sent(4)
    k_unacked, _ = h.attempt("p0", 4)
    h.ack(k_unacked, 11)  # FLUSH_DISK_TIMEOUT: maybe stored, not acknowledged
    rep = check(h, [Read(Q0, 0, body_for(keys[0])), Read(Q0, 1, body_for(keys[2]))])
    assert rep.lost == [keys[1], keys[3]]
    assert not rep.unexpected and not rep.duplicated and not rep.order


def test_unexpected_duplicated_corrupt():
    h, keys = _sent(3)
    torn = body_for(keys[2])[:-5] + b"\0" * 5
    rep = check(h, [Read(Q0, 0, body_for(keys[0])), Read(Q0, 1, body_for(keys[1])), Read(Q1, 0, body_for(keys[1])),
                    Read(Q0, 2, torn), Read(Q0, 3, body_for("stranger-000000001")), Read(Q0, 4, b"\0" * 16)])
    assert rep.duplicated == [keys[1]]
    assert rep.corrupt == [keys[2]]
    assert len(rep.unexpected) == 2
    assert not rep.ok


def test_order_per_producer_and_queue():
    h, a = _sent(3, "a")
    for i in range(2):
        k, _ = h.attempt("b", i)
        h.ack(k, 0)
    b = [History.key("b", i) for i in range(2)]
    # interleaving producers is fine; a's seq 2 before seq 1 in the same queue is not
    reads = [Read(Q0, 0, body_for(a[0])), Read(Q0, 1, body_for(b[0])), Read(Q0, 2, body_for(a[2])),
             Read(Q0, 3, body_for(a[1])), Read(Q1, 0, body_for(b[1]))]
    rep = check(h, reads)
    assert rep.order == [("a", Q0, 1, 2)]
    assert not rep.lost and not rep.duplicated


def test_inconsistent_slot():
    h, keys = _sent(2)
    rep = check(h, [Read(Q0, 0, body_for(keys[0])), Read(Q0, 0, body_for(keys[1])), Read(Q0, 1, body_for(keys[1]))])
    assert rep.inconsistent == [(Q0, 0)]
    assert not rep.duplicated  # the second reading of slot 0 is discarded, keys[1] sits at one slot


def test_keys_are_unique_and_bodies_carry_them():
    h = History()
    k, body = h.attempt("p7", 42, size=200)
    assert key_of(body) == k and len(body) == 200
    try:
        h.attempt("p7", 42)
    except ValueError:
        pass
    else:
        raise AssertionError("a key attempted twice must be refused")

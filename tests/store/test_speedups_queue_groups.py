"""common.speedups.queue_groups: the consume-queue dispatcher's grouping of a run of records, both twins,
against a reference that spells the rule out (one queue at a time, over the whole run)."""

from __future__ import annotations

import random

import pytest

from store.dispatch import CommitLogDispatcherBuildConsumeQueue, DispatchRequest
from tests.store.test_speedups import TWINS


def ref_groups(requests) -> list[tuple[str, int, list[int]]]:
    """For each queue, by its first request: the positions of its requests that get a unit."""
    gets_unit = [i for i, r in enumerate(requests) if r.sys_flag & 0xC in (0x0, 0x8)]
    queues: list[tuple[str, int]] = []
    for i in gets_unit:
        if (requests[i].topic, requests[i].queue_id) not in queues:
            queues.append((requests[i].topic, requests[i].queue_id))
    return [(t, q, [i for i in gets_unit if (requests[i].topic, requests[i].queue_id) == (t, q)]) for t, q in queues]


def positions(requests, groups) -> list[tuple[str, int, list[int]]]:
    ids = {id(r): i for i, r in enumerate(requests)}
    return [(t, q, [ids[id(r)] for r in g]) for t, q, g in groups]


@pytest.mark.parametrize("twin", TWINS)
def test_groups_by_queue_in_order_without_prepared_and_rollback(twin):
    rs = [DispatchRequest("a", 1, sys_flag=0), DispatchRequest("a", 1, sys_flag=0x4), DispatchRequest("b", 1),
          DispatchRequest("a", 1, sys_flag=0x8), DispatchRequest("a", 2), DispatchRequest("a", 1, sys_flag=0xC),
          DispatchRequest("a", 1, sys_flag=0x10 | 0x20)]
    assert positions(rs, twin.queue_groups(rs)) == [("a", 1, [0, 3, 6]), ("b", 1, [2]), ("a", 2, [4])]
    assert twin.queue_groups([]) == []
    assert twin.queue_groups([DispatchRequest("a", 1, sys_flag=0x4)]) == []


@pytest.mark.parametrize("twin", TWINS)
def test_random_runs_match_the_reference(twin):
    rnd = random.Random(5)
    for _ in range(200):
        # runs of one queue (batches) mixed with single records, equal topics as distinct str objects
        rs = []
        for _ in range(rnd.randint(0, 12)):
            topic = "".join(rnd.choice("ab") for _ in range(2))
            qid, flag = rnd.randint(0, 3), rnd.choice([0, 0, 0, 0x4, 0x8, 0xC])
            rs += [DispatchRequest(topic, qid, sys_flag=flag) for _ in range(rnd.choice([1, 1, 16]))]
        assert positions(rs, twin.queue_groups(rs)) == ref_groups(rs)


def test_dispatcher_writes_each_queue_once_in_order():
    """The consume-queue dispatcher hands each queue its requests in one call, in record order."""
    calls = []

    class Queue:
        def __init__(self, key):
            self.key = key

        def put_requests(self, g):
            calls.append((self.key, [r.commit_log_offset for r in g]))

    d = CommitLogDispatcherBuildConsumeQueue(lambda r: None, lambda t, q: Queue((t, q)))
    rs = [DispatchRequest("t", i % 2, commit_log_offset=i) for i in range(6)] + [DispatchRequest("t", 0, 6, sys_flag=4)]
    d.dispatch_many(rs)
    assert calls == [(("t", 0), [0, 2, 4]), (("t", 1), [1, 3, 5])]

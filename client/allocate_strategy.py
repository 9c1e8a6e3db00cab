"""Queue allocation strategies, computing exactly what the Java client computes.

Every member of a consumer group runs the same function over the same sorted
queue list and sorted client-id list, so the assignments never overlap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from remoting.body.consumer import MessageQueue

__all__ = ["AllocateStrategy", "allocate_averagely", "allocate_averagely_by_circle", "STRATEGIES"]

AllocateStrategy = Callable[[str, str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]


def _check(current_cid: str, mq_all: Sequence, cid_all: Sequence[str]) -> bool:
    if not current_cid:
        raise ValueError("currentCID is empty")
    if not mq_all:
        return False
    if not cid_all:
        raise ValueError("cidAll is null or cidAll empty")
    return current_cid in cid_all


def allocate_averagely(group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                       cid_all: Sequence[str]) -> list[MessageQueue]:
    """AllocateMessageQueueAveragely: contiguous blocks, the first ``n % c`` clients get one more.

    ``mq_all`` and ``cid_all`` must already be sorted as Java sorts them.
    """
    if not _check(current_cid, mq_all, cid_all):
        return []
    n, c = len(mq_all), len(cid_all)
    index = list(cid_all).index(current_cid)
    mod = n % c
    if n <= c:
        average = 1
    elif mod > 0 and index < mod:
        average = n // c + 1
    else:
        average = n // c
    start = index * average if (mod > 0 and index < mod) else index * average + mod
    rng = min(average, n - start)
    return [mq_all[(start + i) % n] for i in range(rng)]


def allocate_averagely_by_circle(group: str, current_cid: str, mq_all: Sequence[MessageQueue],
                                 cid_all: Sequence[str]) -> list[MessageQueue]:
    """AllocateMessageQueueAveragelyByCircle: queue i goes to client ``i % c``."""
    if not _check(current_cid, mq_all, cid_all):
        return []
    index = list(cid_all).index(current_cid)
    return [mq for i, mq in enumerate(mq_all) if i % len(cid_all) == index]


STRATEGIES: dict[str, AllocateStrategy] = {"AVG": allocate_averagely, "AVG_BY_CIRCLE": allocate_averagely_by_circle}

"""SourcePlanner: the driver's side of the "rocketmq" source (which queues, from where, to where).

Resolves the subscription (``subscribe`` / ``subscribePattern`` / ``assign``)
to queues, ``earliest`` / ``latest`` / JSON / ``startingTimestamp`` to
offsets, checks the planned starts against what retention left
(``failOnDataLoss``) and cuts the result into :class:`OffsetRange`\\ s.
"""

from __future__ import annotations

import logging

from connectors.spark.errors import ConnectorError
from connectors.spark.offsets import EARLIEST, LATEST, OffsetRange, QueueKey, split_ranges
from connectors.spark.options import SourceOptions
from connectors.spark.range_puller import RangePuller
from connectors.spark.topic_metadata import TopicMetadata

__all__ = ["SourcePlanner", "queue_name"]

log = logging.getLogger("connectors.spark")


def queue_name(k: QueueKey) -> str:
    return f"{k[0]}/{k[1]}/{k[2]}"


class SourcePlanner:
    """Plans reads for one :class:`SourceOptions` against the cluster behind ``meta``."""

    def __init__(self, opts: SourceOptions, meta: TopicMetadata):
        self.opts = opts
        self.meta = meta

    # -- which queues -----------------------------------------------------------------------

    def queues(self, *, first: bool = True) -> dict[QueueKey, str]:
        """Subscribed queues and their master addresses; on the first call an unknown topic is an error."""
        o = self.opts
        out: dict[QueueKey, str] = {}
        if o.subscribe is not None:
            for t in o.subscribe:
                out.update(self.meta.queues(t, option="subscribe", missing_ok=not first))
        elif o.subscribe_pattern is not None:
            for t in self.meta.topics_matching(o.subscribe_pattern):
                out.update(self.meta.queues(t, option="subscribePattern", missing_ok=True))
        else:
            for t, brokers in o.assign.items():
                routed = dict(self.meta.queues(t, option="assign", missing_ok=not first))
                for b, qids in brokers.items():
                    for q in qids:
                        addr = routed.get((t, b, q))
                        if addr is None:
                            if first:
                                raise ConnectorError(f"option assign: queue {t}/{b}/{q} is not in the topic's route "
                                                     f"(queues: {sorted(queue_name(k) for k in routed)})")
                            continue
                        out[(t, b, q)] = addr
        return out

    # -- offsets -----------------------------------------------------------------------------

    def _resolve(self, option: str, spec, keys: list[QueueKey], default: int) -> dict[QueueKey, int]:
        if spec == "earliest":
            return self.meta.min_offsets(keys)
        if spec == "latest":
            return self.meta.max_offsets(keys)
        unknown = sorted(set(spec) - set(keys))
        if unknown:
            raise ConnectorError(f"option {option}: {', '.join(queue_name(k) for k in unknown)} not among the "
                                 "subscribed queues")
        wanted = {k: spec.get(k, default) for k in keys}
        need_min = [k for k, v in wanted.items() if v == EARLIEST]
        need_max = [k for k, v in wanted.items() if v == LATEST]
        mins = self.meta.min_offsets(need_min) if need_min else {}
        maxs = self.meta.max_offsets(need_max) if need_max else {}
        return {k: mins.get(k, maxs.get(k, v)) for k, v in wanted.items()}

    def starting(self, keys: list[QueueKey]) -> dict[QueueKey, int]:
        o = self.opts
        if o.starting_timestamp is not None:
            return self._first_at_or_after(keys, o.starting_timestamp)
        return self._resolve("startingOffsets", o.starting, keys, EARLIEST)

    def _first_at_or_after(self, keys: list[QueueKey], ts: int) -> dict[QueueKey, int]:
        """Per queue the first offset stored at or after ``ts`` (Kafka's startingTimestamp).

        SEARCH_OFFSET_BY_TIMESTAMP answers the offset whose store time is *closest* to ``ts``
        (RocketMQ 4.9's binary search), which may be the last one before it: that one is stepped over.
        """
        found = self.meta.offsets_for_time(keys, ts)
        maxs = self.meta.max_offsets(keys)
        out = {}
        for k, off in found.items():
            while off < maxs[k]:
                addr = self.meta.broker_addr(k[1])
                puller = RangePuller(self.meta.name_server, addr, k[0], k[1], k[2], off, off + 1,
                                     group=self.opts.pull_group, timeout=self.opts.timeout)
                first = next(iter(puller.messages()), None)
                if first is None or first.store_timestamp >= ts:
                    break
                off += 1
            out[k] = off
        return out

    def ending(self, keys: list[QueueKey]) -> dict[QueueKey, int]:
        return self._resolve("endingOffsets", self.opts.ending, keys, LATEST)

    def check_data_loss(self, start: dict[QueueKey, int], mins: dict[QueueKey, int]) -> dict[QueueKey, int]:
        """Starts that retention removed: an error (failOnDataLoss=true) or moved to the min offset."""
        out = dict(start)
        for k, s in start.items():
            m = mins.get(k)
            if m is not None and s < m:
                text = (f"queue {queue_name(k)}: planned start offset {s} is below the queue's min offset {m} "
                        f"(messages {s}..{m - 1} were removed by retention)")
                if self.opts.fail_on_data_loss:
                    raise ConnectorError(text + "; set failOnDataLoss=false to skip to the min offset")
                log.warning("%s; skipping to %d (failOnDataLoss=false)", text, m)
                out[k] = m
        return out

    def ranges(self, start: dict[QueueKey, int], end: dict[QueueKey, int]) -> list[OffsetRange]:
        rs = []
        for k, e in sorted(end.items()):
            s = start.get(k, e)
            if e > s:
                rs.append(OffsetRange(k[0], k[1], k[2], s, e))
        return split_ranges(rs, self.opts.min_partitions)

    def plan_batch(self) -> tuple[list[OffsetRange], dict[QueueKey, str]]:
        """The ranges of a batch query, with each broker's address."""
        queues = self.queues()
        keys = sorted(queues)
        start = self.starting(keys)
        end = self.ending(keys)
        for k in keys:
            if end[k] < start[k]:
                raise ConnectorError(f"option endingOffsets: end {end[k]} of queue {queue_name(k)} is before its "
                                     f"start {start[k]}")
        if self.opts.starting != "earliest" or self.opts.starting_timestamp is not None:
            start = self.check_data_loss(start, self.meta.min_offsets(keys))
        return self.ranges(start, end), queues

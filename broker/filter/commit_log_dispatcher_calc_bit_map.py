"""CommitLogDispatcherCalcBitMap: SQL92 bloom bitmap of each dispatched message.

With ``enableCalcFilterBitMap`` on, for every record of a topic that has SQL92
consumers, each consumer whose expression matches the message sets its bloom
bits; the bitmap goes into the record's consume-queue ext unit
(``request.bit_map``) so later pulls can skip messages without reading the
commit log. Must run before the consume-queue dispatcher.
"""

from __future__ import annotations

import logging

from broker.filter.consumer_filter_manager import ConsumerFilterManager
from store.dispatch import DispatcherBase, DispatchRequest

__all__ = ["CommitLogDispatcherCalcBitMap"]

log = logging.getLogger("rocketmq.filter")


class CommitLogDispatcherCalcBitMap(DispatcherBase):
    """A store CommitLogDispatcher (``dispatch(request)``) filling ``request.bit_map``."""

    __slots__ = ("_enabled", "_manager")

    def __init__(self, enable_calc_filter_bit_map: bool, consumer_filter_manager: ConsumerFilterManager):
        self._enabled = enable_calc_filter_bit_map
        self._manager = consumer_filter_manager

    def dispatch(self, request: DispatchRequest) -> None:
        if not self._enabled:
            return
        datas = self._manager.get_by_topic(request.topic)
        if not datas:
            return
        bloom = self._manager.bloom_filter
        bitmap = bloom.new_bitmap()
        properties = request.properties
        for data in datas:
            if data.compiledExpression is None or data.bloomFilterData is None:
                continue
            if data.compiledExpression.evaluate(properties):
                try:
                    bloom.hash_to(data.bloomFilterData, bitmap)
                except ValueError as e:
                    log.error("cannot set bloom bits of %s: %s", data.consumerGroup, e)
        request.bit_map = bytes(bitmap)

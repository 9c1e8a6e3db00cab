"""Consume-queue diagnostics: QUERY_CONSUME_QUEUE (321, mqadmin queryCq) and QUERY_CORRECTION_OFFSET (308).

Both only read: the consume queue through the store's read API, the committed offsets
through ConsumerOffsetManager.
"""

from __future__ import annotations

import json
import struct
from typing import Any

from broker.consumer_manager import ConsumerManager
from broker.consumer_offset_manager import TOPIC_GROUP_SEPARATOR, ConsumerOffsetManager
from broker.filter import ConsumerFilterManager
from remoting.codes import ResponseCode
from remoting.command import RemotingCommand
from remoting.connection import Connection
from remoting.header.admin_extra import QueryConsumeQueueRequestHeader, QueryCorrectionOffsetHeader
from store.consume_queue import CQ_STORE_UNIT_SIZE
from store.message_store import MessageStore

__all__ = ["ConsumeQueueAdminProcessor", "fastjson_pretty", "LONG_MAX", "MAX_EXT_ADDR"]

LONG_MAX = 2**63 - 1
#: tagsCode values at or below this are consume-queue extension addresses (ConsumeQueueExt.MAX_ADDR).
MAX_EXT_ADDR = -(2**31) - 1

_UNIT = struct.Struct(">qiq")  # commitLogOffset, size, tagsCode


def fastjson_pretty(obj: Any, level: int = 0) -> str:
    """``JSON.toJSONString(bean, true)``: objects one key per line, tab-indented, no space after the colon;
    arrays (ConsumerFilterData's ``int[] bitPos``) stay on one line, as fastjson writes primitive arrays."""
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        inner = "\t" * (level + 1)
        items = [f"{inner}{json.dumps(str(k), ensure_ascii=False)}:{fastjson_pretty(v, level + 1)}"
                 for k, v in obj.items() if v is not None]
        return "{\n" + ",\n".join(items) + "\n" + "\t" * level + "}"
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class ConsumeQueueAdminProcessor:
    """Reads consume-queue units and per-queue minimum committed offsets for admin tools."""

    def __init__(self, store: MessageStore, consumer_manager: ConsumerManager, consumer_offset_manager: ConsumerOffsetManager,
                 consumer_filter_manager: ConsumerFilterManager | None = None):
        self.store = store
        self.consumers = consumer_manager
        self.offsets = consumer_offset_manager
        self.filters = consumer_filter_manager

    # -- QUERY_CONSUME_QUEUE -------------------------------------------------------------

    def query_consume_queue(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Up to ``count`` units of a queue from unit ``index`` (never past the end of that unit's file).

        An unknown queue is SYSTEM_ERROR "<queueId>@<topic> is not exist!". An index outside the
        queue answers SUCCESS without a body and the remark "Index <i> of <queueId>@<topic> is not
        exist!", as RocketMQ does.
        """
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.admin_extra import ConsumeQueueData, QueryConsumeQueueResponseBody

        h = req.decode_header(QueryConsumeQueueRequestHeader)
        # a plain table lookup: a name from the wire never reaches the file system here
        cq = self.store.consume_queues.find(h.topic, h.queueId)
        if cq is None:
            return req.response_to(ResponseCode.SYSTEM_ERROR, f"{h.queueId}@{h.topic} is not exist!")
        body = QueryConsumeQueueResponseBody(maxQueueIndex=cq.get_max_offset_in_queue(),
                                             minQueueIndex=cq.get_min_offset_in_queue())
        if h.consumerGroup is not None:
            sd = self.consumers.find_subscription_data(h.consumerGroup, h.topic)
            body.subscriptionData = sd
            if sd is None:
                body.filterData = f"{h.consumerGroup}@{h.topic} is not online!"
            else:
                body.filterData = self._filter_data_json(h.topic, h.consumerGroup)
        got = cq.get_index_buffer(h.index)
        if got is None:
            return req.response_to(ResponseCode.SUCCESS, f"Index {h.index} of {h.queueId}@{h.topic} is not exist!")
        units = got[0]
        try:
            limit = min(len(units), max(h.count, 0) * CQ_STORE_UNIT_SIZE)
            out = []
            for pos in range(0, limit - CQ_STORE_UNIT_SIZE + 1, CQ_STORE_UNIT_SIZE):
                phy, size, tags_code = _UNIT.unpack_from(units, pos)
                one = ConsumeQueueData(physicOffset=phy, physicSize=size, tagsCode=tags_code)
                if tags_code <= MAX_EXT_ADDR:
                    # an extension address, but this store keeps no consume-queue extension
                    one.msg = f"Cq extend not exist!addr: {tags_code}"
                out.append(one)
        finally:
            units.release()
        body.queueData = out
        return req.response_to(ResponseCode.SUCCESS, body=body.to_json())

    def _filter_data_json(self, topic: str, group: str) -> str:
        """The group's registered SQL92 filter as pretty JSON, "null" when it has none (TAG subscriptions)."""
        data = None if self.filters is None else self.filters.get(topic, group)
        if data is None:
            return "null"
        return fastjson_pretty(data.to_dict())

    # -- QUERY_CORRECTION_OFFSET ----------------------------------------------------------

    def query_correction_offset(self, req: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Per queue of ``topic``: the smallest committed offset of every group except ``filterGroups``
        (offsets below the queue's min offset are ignored); a queue where ``compareGroup`` is behind
        that minimum gets Long.MAX_VALUE (nothing to correct)."""
        # imported on first use: not loaded at broker start-up (start-up time)
        from remoting.body.admin_extra import QueryCorrectionOffsetBody

        h = req.decode_header(QueryCorrectionOffsetHeader)
        table = self.query_min_offset_in_all_group(h.topic, h.filterGroups)
        for qid, off in self.offsets.query_offsets(h.compareGroup, h.topic).items():
            current = table.get(qid)
            if current is not None:
                table[qid] = LONG_MAX if current > off else current
        return req.response_to(ResponseCode.SUCCESS, body=QueryCorrectionOffsetBody(table).to_json())

    def query_min_offset_in_all_group(self, topic: str, filter_groups: str | None) -> dict[int, int]:
        """ConsumerOffsetManager.queryMinOffsetInAllGroup, without its side effect: RocketMQ deletes the
        filtered groups' offsets from the table while leaving them out; here they are only skipped."""
        skip = {g for g in filter_groups.split(",")} if filter_groups and filter_groups.strip() else set()
        out: dict[int, int] = {}
        for key, offsets in list(self.offsets.table.items()):
            t, _, g = key.rpartition(TOPIC_GROUP_SEPARATOR)
            if t != topic or g in skip:
                continue
            for qid, off in offsets.items():
                if off >= self.store.get_min_offset_in_queue(topic, qid):
                    prev = out.get(qid)
                    out[qid] = off if prev is None else min(prev, off)
        return out

"""Delayed delivery when the store refuses the put: a real store in tmp_path, the real service.

The store is made unwriteable (what a full disk does): due messages are not delivered,
the level's offset stays where it is, and once the store takes writes again every
message is delivered exactly once, in windows of concurrent puts.
"""

from __future__ import annotations

import logging

from broker.schedule_message_service import PUT_WINDOW, ScheduleMessageService
from common.message import MessageExtBrokerInner, decode_message
from common.util import now_ms
from store.config import MessageStoreConfig
from store.default_message_store import DefaultMessageStore
from store.message_store import GetMessageStatus
from tests.support import async_wait_until

N = PUT_WINDOW + 8  # more than one window


class Clock:
    def __init__(self, t: int):
        self.t = t

    def __call__(self) -> int:
        return self.t


def real_topic_keys(store: DefaultMessageStore) -> list[str]:
    out, offset = [], 0
    while True:
        r = store.get_message("g", "RealDelayT", 0, offset, 32)
        if r.status is not GetMessageStatus.FOUND:
            return out
        out.extend(decode_message(b).properties["UNIQ_KEY"] for b in r.buffers)
        r.release()
        offset = r.next_begin_offset


async def test_refused_puts_keep_the_offset_then_deliver_once(tmp_path, caplog):
    sc = MessageStoreConfig(storePathRootDir=str(tmp_path / "store"), mappedFileSizeCommitLog=1 << 20,
                            mappedFileSizeConsumeQueue=6000, messageDelayLevel="1s 2s")
    store = DefaultMessageStore(sc, store_host=("127.0.0.1", 10911))
    assert store.load()
    store.start()
    clock = Clock(now_ms())
    svc = ScheduleMessageService(store, sc.delay_levels_ms(), str(tmp_path / "delayOffset.json"), clock=clock)
    try:
        keys = [f"K{i:03d}" for i in range(N)]
        for k in keys:
            props = {"DELAY": "1", "UNIQ_KEY": k, "WAIT": "true"}
            msg = MessageExtBrokerInner(topic="RealDelayT", queue_id=0, body=k.encode(), properties=props,
                                        born_host=("127.0.0.1", 5000), store_host=("127.0.0.1", 10911))
            assert store.put_message(svc.rewrite(msg)).is_ok()
        store.dispatch_pending()
        store.set_writeable(False)  # e.g. the disk filled up
        clock.t += 5_000  # everything is due
        with caplog.at_level(logging.WARNING, logger="broker.schedule_message_service"):
            svc.start()
            await async_wait_until(lambda: "delivering delayed message of level 1 failed" in caplog.text, 10,
                                   what="a refused delivery")
            assert svc.offset_table.get(1, 0) == 0 and real_topic_keys(store) == []
        store.set_writeable(True)
        await async_wait_until(lambda: svc.offset_table.get(1, 0) == N, 10, what="the level's offset at the end")
        store.dispatch_pending()
        assert sorted(real_topic_keys(store)) == keys  # each once
        assert svc.delivered == N
    finally:
        await svc.stop()
        await store.shutdown()

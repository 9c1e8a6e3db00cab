"""Child process for the crash tests: appends messages forever and prints one line per acknowledged put.

usage: crash_writer.py STORE_DIR SEED WRITERS FLUSH_TYPE

Each acknowledgement line is ``A <commitLogOffset> <queueId> <key> <bodyLen>``; the body is
derived from the key (see :func:`body_for`), so the parent can verify it after SIGKILL.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from common.config import apply_properties  # noqa: E402
from common.message import MessageExtBrokerInner, properties_to_string  # noqa: E402
from store.config import MessageStoreConfig  # noqa: E402
from store.default_message_store import DefaultMessageStore  # noqa: E402

TOPIC = "CrashTopic"
QUEUES = 4


def crash_config(store_dir: str, flush_type: str = "SYNC_FLUSH") -> MessageStoreConfig:
    cfg = MessageStoreConfig(storePathRootDir=store_dir)
    apply_properties(cfg, {
        "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
        "mappedFileSizeConsumeQueue": "2000",
        "maxIndexNum": "4000",
        "maxHashSlotNum": "1000",
        "flushDiskType": flush_type,
    })
    return cfg


def body_for(key: str, length: int) -> bytes:
    seed = hashlib.sha256(key.encode()).digest()
    return (seed * (length // 32 + 1))[:length]


async def writer(store: DefaultMessageStore, rng: random.Random, prefix: str, out) -> None:
    seq = 0
    while True:
        seq += 1
        key = f"{prefix}-{seq}"
        length = rng.choice((1, 50, 300, 2000, 9000, 20000, 300_000, 1_000_000))
        qid = rng.randrange(QUEUES)
        props = {"KEYS": key, "TAGS": f"tag{qid}"}
        msg = MessageExtBrokerInner(topic=TOPIC, queue_id=qid, body=body_for(key, length), properties=props,
                                    properties_string=properties_to_string(props), born_timestamp=1,
                                    born_host=("127.0.0.1", 1000 + qid))
        r = await store.put_message_async(msg)
        if r.is_ok():
            out.write(f"A {r.append_result.wrote_offset} {qid} {key} {length}\n")
            out.flush()


async def main() -> None:
    store_dir, seed, writers, flush_type = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    store = DefaultMessageStore(crash_config(store_dir, flush_type))
    if not store.load():
        print("LOAD FAILED", flush=True)
        sys.exit(2)
    store.start()
    out = os.fdopen(1, "w", buffering=1)
    out.write("READY\n")
    out.flush()
    rng = random.Random(seed)
    await asyncio.gather(*(writer(store, random.Random(rng.random()), f"s{seed}w{w}", out) for w in range(writers)))


if __name__ == "__main__":
    asyncio.run(main())

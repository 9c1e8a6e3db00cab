"""The SYNC_FLUSH group-commit worker (common/fsync_worker.py and its compiled twin common/_fsync_worker.c).

Both twins run the same checks on real files in tmp_path: rounds reach the asked
offset, a new file queues behind the current one, a failing fdatasync is reported
and retried without advancing, and a held worker does not sync. The store-level
test drives SYNC_FLUSH with many writers across CommitLog roll-overs.
"""

from __future__ import annotations

import asyncio
import errno
import os
import select
import time

import pytest

import store.flush_service as flush_service
from common import fsync_worker
from store.config import FlushDiskType
from store.message_store import PutMessageStatus
from tests.store.store_helpers import make_msg, open_store, small_config

TWINS = [pytest.param(fsync_worker.PureFsyncWorker, id="pure")]
if fsync_worker.IS_COMPILED:
    TWINS.append(pytest.param(fsync_worker.FsyncWorker, id="compiled"))


def wait_for(worker, pred, timeout: float = 10.0) -> None:
    """Wait on the worker's eventfd (a round ended) until ``pred()`` holds, with a deadline."""
    deadline = time.monotonic() + timeout
    while not pred():
        left = deadline - time.monotonic()
        assert left > 0, "the worker did not get there in time"
        r, _, _ = select.select([worker.fileno()], [], [], left)
        if r:
            try:
                os.eventfd_read(worker.fileno())
            except BlockingIOError:
                pass


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(params=TWINS)
def worker_cls(request):
    return request.param


def data_file(tmp_path, name: str, data: bytes) -> int:
    path = tmp_path / name
    path.write_bytes(data)
    return os.open(path, os.O_RDONLY)


def test_rounds_reach_the_asked_offset(tmp_path, worker_cls):
    w = worker_cls()
    fd = data_file(tmp_path, "a", b"x" * 4096)
    try:
        assert (w.done, w.rounds, w.error) == (0, 0, 0)
        w.ask(fd, 1000)
        w.ask(fd, 4096)  # the same file: the segment grows
        wait_for(w, lambda: w.done == 4096)
        assert w.rounds >= 1 and w.error == 0
        rounds = w.rounds
        w.ask(fd, 100)  # already covered: no new round
        w.ask(fd, 4096)
        assert w.done == 4096
        assert w.rounds == rounds
    finally:
        w.close()
        os.close(fd)


def test_new_file_queues_behind_the_current_one_and_is_released(tmp_path, worker_cls):
    before = open_fds()
    w = worker_cls()
    fd1 = data_file(tmp_path, "00000000000000000000", b"a" * 100)
    fd2 = data_file(tmp_path, "00000000000000000100", b"b" * 50)
    try:
        w.hold(True)  # both asks queue before any round
        w.ask(fd1, 100)
        w.ask(fd2, 150)
        os.close(fd1)  # the worker keeps its own descriptor of the first file
        w.hold(False)
        wait_for(w, lambda: w.done == 150)
        assert w.error == 0
        assert w.rounds >= 2  # one round per file
    finally:
        w.close()
        os.close(fd2)
    assert open_fds() == before  # the eventfd and every duplicate are closed


def test_failing_fdatasync_is_reported_and_does_not_advance(tmp_path, worker_cls):
    w = worker_cls()
    r, wfd = os.pipe()  # fdatasync on a pipe fails with EINVAL
    try:
        w.ask(r, 10)
        wait_for(w, lambda: w.rounds >= 2)  # retried
        assert w.error == errno.EINVAL
        assert w.done == 0
    finally:
        w.close()  # returns although the round keeps failing
        os.close(r)
        os.close(wfd)


def test_held_worker_does_not_sync_until_released(tmp_path, worker_cls):
    w = worker_cls()
    fd = data_file(tmp_path, "a", b"x" * 10)
    try:
        w.hold(True)
        w.ask(fd, 10)
        ready, _, _ = select.select([w.fileno()], [], [], 0.05)
        assert not ready and w.done == 0 and w.rounds == 0
        w.hold(False)
        wait_for(w, lambda: w.done == 10)
    finally:
        w.close()
        os.close(fd)


def test_closed_worker_refuses_asks(tmp_path, worker_cls):
    w = worker_cls()
    w.close()
    w.close()  # twice is fine
    fd = data_file(tmp_path, "a", b"x")
    try:
        with pytest.raises(RuntimeError):
            w.ask(fd, 1)
    finally:
        os.close(fd)


async def test_sync_flush_across_roll_overs(tmp_path, monkeypatch, worker_cls):
    """64 writers over several 64 KiB CommitLog files: every put acknowledged only once durable,
    every full file marked flushed to its end, the checkpoint's physic time that of the last put."""
    monkeypatch.setattr(flush_service, "FsyncWorker", worker_cls)
    store = open_store(small_config(tmp_path, flushDiskType=FlushDiskType.SYNC_FLUSH))
    store.start()
    try:
        async def writer(w: int) -> list:
            out = []
            for i in range(12):
                r = await store.put_message_async(make_msg("R", w % 4, os.urandom(400) + b"%d-%d" % (w, i)))
                assert r.status is PutMessageStatus.PUT_OK
                # acknowledged: the data covering it is durable
                assert store.commit_log.flushed_where >= r.append_result.wrote_offset + r.append_result.wrote_bytes
                out.append(r)
            return out

        results = [r for rs in await asyncio.gather(*(writer(w) for w in range(64))) for r in rs]
        files = store.commit_log.mapped_file_queue.mapped_files
        assert len(files) >= 5  # 768 puts of ~500 B crossed several roll-overs
        for mf in files[:-1]:
            assert mf.flushed_position == mf.file_size
        gc = store.group_commit
        assert 1 <= gc.fsync_count < len(results)
        last = max(results, key=lambda r: r.append_result.wrote_offset)
        await store.group_commit._round()
        assert store.checkpoint.physic_msg_timestamp >= last.append_result.store_timestamp
    finally:
        await store.shutdown()


def test_pages_ahead_are_cached_without_writing_anything(tmp_path, worker_cls):
    """``ahead`` asks the kernel to cache the pages past the durable end: the file's content and its
    allocated blocks do not change (a hole stays a hole), and the syncs still reach their ends."""
    path = tmp_path / "00000000000000001000"
    size = 8 << 20
    with open(path, "wb") as f:
        f.truncate(size)
    fd = os.open(path, os.O_RDWR)
    w = worker_cls(ahead=4 << 20)
    try:
        os.pwrite(fd, b"r" * 5000, 0)
        blocks = os.fstat(fd).st_blocks
        w.ask(fd, 1000 + 5000, 1000)  # the file holds the global offsets 1000..
        wait_for(w, lambda: w.done == 6000)
        os.pwrite(fd, b"s" * 3000, 5000)
        w.ask(fd, 1000 + 8000, 1000)
        wait_for(w, lambda: w.done == 9000)
        assert os.pread(fd, 8000, 0) == b"r" * 5000 + b"s" * 3000
        assert os.pread(fd, 1 << 20, 8000) == bytes(1 << 20)
        # only the written bytes took blocks: nothing ahead was written
        assert os.fstat(fd).st_blocks <= blocks + 8
    finally:
        w.close()
        os.close(fd)


def test_both_twins_cap_the_files_waiting_at_the_same_number(tmp_path, worker_cls):
    w = worker_cls()
    fds = [data_file(tmp_path, f"f{i}", b"x") for i in range(fsync_worker.MAX_SEGMENTS + 1)]
    try:
        w.hold(True)  # nothing is synced, so every file keeps waiting
        for fd in fds[:-1]:
            w.ask(fd, 1)
        with pytest.raises(RuntimeError, match="too many files"):
            w.ask(fds[-1], 1)
        w.ask(fds[-2], 1)  # the last file queued still takes asks
    finally:
        w.close()
        for fd in fds:
            os.close(fd)

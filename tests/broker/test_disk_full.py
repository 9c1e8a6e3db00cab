"""A full disk under a real broker (issue #17, defect 3): the store lives on a small tmpfs.

The broker must stay up, refuse every send it cannot keep with SERVICE_NOT_AVAILABLE and
RocketMQ's disk-full remark, keep serving pulls, lose no acknowledged message, and take
writes again by itself once space comes back. Mounting needs root; otherwise the tests skip.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from common.message import decode_messages
from remoting.client import RemotingClient
from remoting.codes import ResponseCode
from tests.broker.helpers import BrokerProc, pull, send, wait_max_offset
from tests.support import async_wait_until, free_port, wait_until
from tests.tmpfs import MiB, SmallDisks, fill

DISK_FULL_REMARK = "the broker's disk is full"
TOPIC = "DiskFullT"
QUEUES = 4
BODY = 16 * 1024


@pytest.fixture
def small_disk(tmp_path, procs):
    """``small_disk(size_mib) -> Path``: a tmpfs; at teardown the processes stop first, then it is unmounted."""
    disks = SmallDisks(tmp_path)
    yield disks.mount
    for p in reversed(procs):  # before the unmount: a broker shutting down still writes its store
        p.stop()
    disks.unmount_all()


def _body(i: int) -> bytes:
    head = b"msg-%08d|" % i
    return head + bytes([i % 251]) * (BODY - len(head))


def _broker(tmp_path: Path, procs, store_root: Path, dledger: bool = False) -> BrokerProc:
    # consume-queue files of 40 units: they are created often, so a full disk meets them too
    extra = {"enableDLegerCommitLog": "true", "dLegerGroup": "full", "dLegerSelfId": "n0",
             "dLegerPeers": f"n0-127.0.0.1:{free_port()}"} if dledger else {}
    return BrokerProc(tmp_path, "full", start_proc=procs.start, storePathRootDir=str(store_root),
                      mappedFileSizeConsumeQueue=800, maxHashSlotNum=1000, maxIndexNum=4000,
                      autoCreateTopicEnable="true", **extra)


async def _writable(c: RemotingClient, b: BrokerProc) -> None:
    """Until the broker stores a message (a one-node DLedger group elects itself first)."""
    async def stored():
        r = await send(c, b.addr, "WarmT", b"warm", timeout=5.0)
        return r.code == ResponseCode.SUCCESS

    await async_wait_until(stored, 15, interval=0.1, what="the broker stores a first message")


async def _send_one(c: RemotingClient, b: BrokerProc, i: int):
    r = await send(c, b.addr, TOPIC, _body(i), {"KEYS": f"k{i}"}, queue_id=i % QUEUES, queue_nums=QUEUES,
                   timeout=10.0)
    return r.code, r.remark or ""


def _assert_refusal(code: int, remark: str) -> None:
    assert code == ResponseCode.SERVICE_NOT_AVAILABLE, (code, remark)
    assert DISK_FULL_REMARK in remark, remark


async def _pull_all(c: RemotingClient, b: BrokerProc) -> dict[int, bytes]:
    got: dict[int, bytes] = {}
    for q in range(QUEUES):
        offset = 0
        while True:
            r = await pull(c, b.addr, "gDiskFull", TOPIC, q, offset, max_nums=32)
            # a full disk must not fail a pull (its group's config file, say, cannot be persisted)
            assert r.code in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND,
                              ResponseCode.PULL_RETRY_IMMEDIATELY), (r.code, r.remark)
            if r.code != ResponseCode.SUCCESS:
                break
            msgs = decode_messages(r.body)
            if not msgs:
                break
            for m in msgs:
                i = int(m.body[4:12])
                assert i not in got, f"message {i} read twice"
                got[i] = m.body
            offset = int(r.ext_fields["nextBeginOffset"])
    return got


async def _wait_dispatched(c: RemotingClient, b: BrokerProc, acked: set[int]) -> None:
    for q in range(QUEUES):
        await wait_max_offset(c, b.addr, TOPIC, q, sum(1 for a in acked if a % QUEUES == q), timeout=10)


@pytest.mark.parametrize("log", ["commitlog", "dledger"])
@pytest.mark.parametrize("filled_by", ["broker", "outsider"])
async def test_full_disk_refuses_sends_keeps_acked_and_recovers(tmp_path, procs, small_disk, filled_by, log):
    """``broker``: the broker's own files fill the disk (12 MiB of 48 taken beforehand); ``outsider``:
    another writer takes every last block while sends go on, so even the consume queues find no room.
    ``log``: the classic CommitLog or a one-node DLedger group."""
    disk = small_disk(48)
    filler = disk / "filler"
    if filled_by == "broker":
        fill(filler, 12 * MiB)
    b = _broker(tmp_path, procs, disk / "store", dledger=log == "dledger").start()
    acked: set[int] = set()
    refused_ids: set[int] = set()
    next_id = 0
    async with RemotingClient() as c:
        await _writable(c, b)
        stop = asyncio.Event()

        async def sender():
            nonlocal next_id
            while not stop.is_set() and next_id < 20_000:  # ~3,000 fill the disk; bounded all the same
                i = next_id
                next_id += 1
                try:
                    code, remark = await _send_one(c, b, i)
                except Exception as e:
                    raise AssertionError(f"send {i} got no answer ({e}); broker exit code "
                                         f"{b.proc.popen.poll()}") from e
                if code == ResponseCode.SUCCESS:
                    acked.add(i)
                    if filled_by == "outsider" and len(acked) == 300:
                        fill(filler)  # every last block, while sends are in flight
                else:
                    _assert_refusal(code, remark)
                    refused_ids.add(i)
                    if len(refused_ids) >= 64:
                        stop.set()

        # 36-48 MiB free at 16 KiB a message: ~3,000 sends fill it; the bound keeps a broken broker finite
        workers = [asyncio.create_task(sender()) for _ in range(16)]
        await asyncio.wait(workers, timeout=60)
        stop.set()
        await asyncio.gather(*workers)
        assert b.proc.popen.poll() is None, f"broker died ({b.proc.popen.returncode}):\n{b.proc.output()[-3000:]}"
        assert len(refused_ids) >= 64 and acked, (len(refused_ids), len(acked))

        # pulls keep working while the disk is full; what they return is intact
        if filled_by == "broker":  # queue files still had room: everything acked is visible already
            await _wait_dispatched(c, b, acked)
        got = await _pull_all(c, b)
        assert got, "no message could be pulled while the disk was full"
        for i, body in got.items():
            assert body == _body(i), f"message {i} damaged"
            assert i in acked, f"message {i} was never acknowledged"
        if filled_by == "broker":
            assert acked <= got.keys(), sorted(acked - got.keys())[:5]

        # space comes back: the broker takes writes again by itself
        filler.unlink()
        i = next_id

        async def accepted():
            nonlocal i
            code, remark = await _send_one(c, b, i)
            if code == ResponseCode.SUCCESS:
                acked.add(i)
                return True
            _assert_refusal(code, remark)
            refused_ids.add(i)
            i += 1
            return False

        await async_wait_until(accepted, 15, interval=0.1, what="sends accepted after space was freed")
        for j in range(i + 1, i + 9):
            code, remark = await _send_one(c, b, j)
            assert code == ResponseCode.SUCCESS, (code, remark)
            acked.add(j)
        # every acknowledged message is in its queue, intact, once; no refused one is
        await _wait_dispatched(c, b, acked)
        got = await _pull_all(c, b)
        missing = acked - got.keys()
        assert not missing, f"{len(missing)} acked messages lost, e.g. {sorted(missing)[:5]}"
        assert not got.keys() & refused_ids, "a refused send was stored"
        for i, body in got.items():
            assert body == _body(i), f"message {i} damaged"
    assert b.proc.popen.poll() is None


async def test_broker_starts_on_a_full_disk_and_refuses_until_space_returns(tmp_path, procs, small_disk):
    disk = small_disk(16)
    filler = disk / "filler"
    fill(filler, 15 * MiB)
    b = _broker(tmp_path, procs, disk / "store").start()
    async with RemotingClient() as c:
        for i in range(4):
            code, remark = await _send_one(c, b, i)
            _assert_refusal(code, remark)
        filler.unlink()
        ok: list[int] = []

        async def accepted():
            i = 100 + len(ok)
            code, remark = await _send_one(c, b, i)
            if code == ResponseCode.SUCCESS:
                ok.append(i)
                return True
            _assert_refusal(code, remark)
            return False

        await async_wait_until(accepted, 15, interval=0.1, what="sends accepted after space was freed")
        await wait_max_offset(c, b.addr, TOPIC, ok[0] % QUEUES, 1, timeout=10)
    assert b.proc.popen.poll() is None


def test_a_new_store_on_a_disk_without_a_block_left_exits_with_a_clear_error(tmp_path, procs, small_disk):
    disk = small_disk(4)
    fill(disk / "filler")
    b = _broker(tmp_path, procs, disk / "store")
    p = procs.start("full-new", ["mqbroker", "-c", str(b.conf)])
    wait_until(lambda: p.popen.poll() is not None, 20, what="broker exit")
    out = p.output()
    assert p.popen.returncode == 1, out
    assert "no space left on device" in out and "could not be loaded" in out, out
    assert "Traceback" not in out, out

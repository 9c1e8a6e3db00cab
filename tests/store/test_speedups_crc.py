"""Record body CRC: both twins' ``crc32`` equal ``zlib.crc32`` (java.util.zip.CRC32), and so do the
CRCs the store writes into records.

The compiled twin folds with PCLMULQDQ where the CPU has it (``CRC_IMPL == "pclmul"``);
every check also runs in a child process with ``ROCKETMQ_PY_NO_PCLMUL=1``, where it falls
back to zlib (or its own tables), so both C paths are covered on a machine with PCLMUL.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import zlib

import pytest

from common import speedups
from tests.store.store_helpers import make_msg, open_store, small_config

TWINS = [pytest.param(speedups.pure, id="pure")]
if speedups.compiled is not None:
    TWINS.append(pytest.param(speedups.compiled, id="compiled"))

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("twin", TWINS)
def test_every_short_length_and_alignment(twin):
    rng = random.Random(1)
    data = bytes(rng.getrandbits(8) for _ in range(700))
    view = memoryview(data)
    for n in range(0, 601):
        assert twin.crc32(data[:n]) == zlib.crc32(data[:n]), n
    for start in range(64):  # the folding loads unaligned 16-byte lanes
        for n in (0, 15, 16, 63, 64, 65, 127, 128, 129, 300, 600):
            assert twin.crc32(view[start : start + n]) == zlib.crc32(view[start : start + n]), (start, n)


@pytest.mark.parametrize("twin", TWINS)
def test_long_random_lengths_chained_values_and_uniform_data(twin):
    rng = random.Random(2)
    big = rng.randbytes(1 << 20)
    for _ in range(40):
        n = rng.randint(0, len(big))
        s = rng.randint(0, len(big) - n)
        assert twin.crc32(big[s : s + n]) == zlib.crc32(big[s : s + n])
    for value in (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 123456789):
        for n in (0, 10, 64, 1000, 4099):
            assert twin.crc32(big[:n], value) == zlib.crc32(big[:n], value), (value, n)
    # chaining in pieces gives the CRC of the whole
    c = 0
    for i in range(0, 100_000, 777):
        c = twin.crc32(big[i : i + 777], c)
    assert c == zlib.crc32(big[: ((100_000 + 776) // 777) * 777])
    for fill in (b"\x00", b"\xff", b"\x5a"):
        for n in (64, 1024, 65536 + 48):
            assert twin.crc32(fill * n) == zlib.crc32(fill * n)


def test_compiled_twin_reports_its_crc_path():
    if speedups.compiled is None:
        pytest.skip("the compiled twin is not built here")
    assert speedups.compiled.CRC_IMPL in ("pclmul", "zlib", "table")
    if speedups.IS_COMPILED:
        assert speedups.CRC_IMPL == speedups.compiled.CRC_IMPL
    else:
        assert speedups.CRC_IMPL == "zlib"


def test_records_written_by_the_store_carry_zlib_crcs(tmp_path):
    rng = random.Random(3)
    s = open_store(small_config(tmp_path, mappedFileSizeCommitLog=1 << 20))
    try:
        bodies = [rng.randbytes(n) for n in (0, 1, 63, 64, 65, 1000, 4096 + 7, 20_000)]
        offsets = []
        for i, body in enumerate(bodies):
            r = s.put_message(make_msg("C", 0, body, keys=f"k{i}"))
            assert r.is_ok()
            offsets.append(r.append_result.wrote_offset)
        for off, body in zip(offsets, bodies, strict=True):
            m = s.look_message_by_offset(off)
            assert m.body == body
            assert m.body_crc == zlib.crc32(body) & 0x7FFFFFFF
    finally:
        s.shutdown_sync()


def test_without_pclmul_in_a_child_process():
    """The same checks with the folding switched off (the zlib/table path of the compiled twin)."""
    if speedups.compiled is None:
        pytest.skip("the compiled twin is not built here")
    code = (
        "import zlib, random\n"
        "from common import speedups\n"
        "c = speedups.compiled\n"
        "assert c.CRC_IMPL in ('zlib', 'table'), c.CRC_IMPL\n"
        "rng = random.Random(4)\n"
        "big = rng.randbytes(70000)\n"
        "for n in list(range(0, 300)) + [1024, 4099, 65536, 70000]:\n"
        "    for v in (0, 0xFFFFFFFF, 99):\n"
        "        assert c.crc32(big[:n], v) == zlib.crc32(big[:n], v), (n, v)\n"
        "print('ok')\n"
    )
    env = dict(os.environ, ROCKETMQ_PY_NO_PCLMUL="1")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr

"""The durable-length failpoint (quick, not soak): off by default, on with its environment variable."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import ROOT

SCRIPT = """
import sys
from common.mapped_file_queue import MappedFileQueue
q = MappedFileQueue(sys.argv[1], 4096 * 4)
mf = q.get_last_mapped_file_or_create(0)
mf.append(b"a" * 100)
q.flush(0)
mf.append(b"b" * 50)
q.mark_flushed(150)
mf.append(b"c" * 10)  # never synced: not in the log
import common.failpoint as f
print("on" if f.record_durable else "off")
"""


def _run(tmp_path, env_extra):
    env = {k: v for k, v in os.environ.items() if k != "ROCKETMQ_PY_FAILPOINT_DURABLE_LOG"} | env_extra
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "q")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_off_without_env(tmp_path):
    assert _run(tmp_path, {}) == "off"
    assert not list(tmp_path.glob("*.log"))


def test_records_each_durable_length(tmp_path):
    log = tmp_path / "durable.log"
    assert _run(tmp_path, {"ROCKETMQ_PY_FAILPOINT_DURABLE_LOG": str(log)}) == "on"
    path = str(tmp_path / "q" / f"{0:020d}")
    assert log.read_text().splitlines() == [f"100 {path}", f"150 {path}"]

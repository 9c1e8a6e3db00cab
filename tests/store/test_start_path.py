"""The broker's start path stays lean: importing it does not load construct (or pdb, which construct pulls in)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_broker_import_does_not_load_construct():
    code = ("import sys, broker.broker_controller, broker.broker_startup, store.commit_log; "
            "print(sorted(m for m in ('construct', 'pdb') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=True).stdout.strip()
    assert out == "[]"


def test_record_declarations_built_on_first_access():
    import store.commit_log as cl

    v1, v2 = cl.RECORD_V1, cl.RECORD_V2
    assert v1 is cl.RECORD_V1 and v1 is not v2  # built once
    rec = v1.build(dict(totalSize=0, magicCode=-626843481, bodyCRC=0, queueId=1, flag=0, queueOffset=2,
                        physicalOffset=3, sysFlag=0, bornTimestamp=4, bornHost=dict(address=bytes(4), port=5),
                        storeTimestamp=6, storeHost=dict(address=bytes(4), port=7), reconsumeTimes=0,
                        preparedTransactionOffset=0, body=b"abc", topic="T", properties=b""))
    assert len(rec) == cl.record_length(3, 1, 0)
    parsed = v1.parse(rec)
    assert (parsed.topic, parsed.body, parsed.queueOffset, parsed.storeHost.port) == ("T", b"abc", 2, 7)

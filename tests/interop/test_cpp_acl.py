"""Interop: the official C++ client with ACL session credentials against an ACL broker (aclEnable=true).

Send and consume pass where the account allows them and fail where it does not (wrong secret, a DENY
topic, a group without SUB). TLS: the binding exposes no TLS switch, so the C++ client is not run over TLS. The C++ client signs with its own hook (HmacSHA1 over the sorted extField
values, plus its ``OnsChannel`` field), which our broker must verify like 4.9.7.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest

pytest.importorskip("rocketmq.client", reason="official C++ client binding not installed")

from tests.interop.conftest import driver_cmd, driver_env  # noqa: E402

ACL = textwrap.dedent("""\
    accounts:
      - accessKey: cppclient
        secretKey: cppsecret
        defaultTopicPerm: DENY
        defaultGroupPerm: SUB
        topicPerms: [CppAcl=PUB|SUB, CppDenied=DENY]
        groupPerms: [deniedGroup=DENY]
    """)


def run(tmp_path, ak, sk, *args, timeout=90) -> dict:
    env = dict(driver_env(tmp_path), DRIVER_ACCESS_KEY=ak, DRIVER_SECRET_KEY=sk)
    proc = subprocess.run(driver_cmd(*args), capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"driver failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def acl_cluster(make_cluster, tmp_path):
    home = tmp_path / "rmqhome"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(ACL)
    os.environ.pop("ROCKETMQ_HOME", None)  # the broker takes rocketmqHome from its config
    return make_cluster(["aclEnable=true", f"rocketmqHome={home}"])


def send(tmp_path, ns, topic, ak="cppclient", sk="cppsecret", n=3):
    msgs = [{"topic": topic, "tags": "T", "keys": f"k{i}", "body": f"{topic}-{i}"} for i in range(n)]
    return run(tmp_path, ak, sk, "send", ns, json.dumps({"mode": "sync", "messages": msgs}))["results"]


def test_cpp_client_with_session_credentials(acl_cluster, tmp_path):
    ns = acl_cluster.namesrv
    ok = send(tmp_path, ns, "CppAcl")
    assert [r.get("status") for r in ok] == [0, 0, 0], ok
    # the C++ client retries and then reports its own "No route info" text, so the broker's refusal is
    # checked in the broker log
    log = acl_cluster.broker_proc
    bad_secret = send(tmp_path, ns, "CppAcl", sk="wrongsecret", n=1)
    assert "error" in bad_secret[0], bad_secret
    assert "ACL refused code 310 from 127.0.0.1" in log.output() and "Check signature failed" in log.output()
    denied = send(tmp_path, ns, "CppDenied", n=1)
    assert "error" in denied[0], denied
    assert "No default permission for topic:CppDenied" in log.output()

    got = run(tmp_path, "cppclient", "cppsecret", "consume", ns, "CppAcl", "cppGroup", "3", "40", timeout=80)
    assert got["complete"] and sorted(m["body"] for m in got["messages"]) == [f"CppAcl-{i}" for i in range(3)]
    # a group without SUB consumes nothing (its pulls and heartbeats are refused)
    got = run(tmp_path, "cppclient", "cppsecret", "consume", ns, "CppAcl", "deniedGroup", "3", "6", timeout=60)
    assert not got["complete"] and got["messages"] == []

"""Issue 17, defect 2 (broker side): UPDATE_BROKER_CONFIG changes only the runtime allow-list.

Where clients are sent (brokerIP1/2), where the broker registers (namesrvAddr), security switches
(aclEnable, auto-creation) and identity are fixed at start-up: refused with the key named, and
nothing of the request applied or persisted.
"""

from __future__ import annotations

import dataclasses

from broker.config import BrokerConfig
from broker.runtime_config import RUNTIME_UPDATABLE_KEYS
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from store.config import MessageStoreConfig
from tests.broker.helpers import call


def test_every_allow_listed_key_is_a_wire_settable_config_field():
    fields = {f.name: f for c in (BrokerConfig, MessageStoreConfig) for f in dataclasses.fields(c)}
    assert RUNTIME_UPDATABLE_KEYS <= set(fields)
    assert all(fields[k].metadata.get("wire", True) for k in RUNTIME_UPDATABLE_KEYS)


async def test_security_and_routing_keys_are_refused_by_name(shared_broker):
    addr = shared_broker.addr
    async with RemotingClient() as c:
        for key, value in (("brokerIP1", "10.9.9.9"), ("brokerIP2", "10.9.9.9"), ("namesrvAddr", "10.9.9.9:9876"),
                           ("aclEnable", "false"), ("autoCreateTopicEnable", "false"), ("brokerName", "other"),
                           ("brokerRole", "SLAVE"), ("mappedFileSizeCommitLog", "1024")):
            r = await call(c, addr, RequestCode.UPDATE_BROKER_CONFIG, body=f"fileReservedTime=1\n{key}={value}\n".encode())
            assert r.code == ResponseCode.NO_PERMISSION, key
            assert r.remark.startswith(f"Can not update config in black list: {key} "), r.remark
        r = await call(c, addr, RequestCode.GET_BROKER_CONFIG)
        text = r.body.decode()
        assert "brokerIP1=127.0.0.1\n" in text and "fileReservedTime=72\n" in text  # nothing applied
        # a line separator str.splitlines() honours would smuggle a key into the -c file too
        r = await call(c, addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"deleteWhen=04\\u2028brokerIP1=10.9.9.9\n")
        assert r.code == ResponseCode.SYSTEM_ERROR and "line break" in r.remark
        r = await call(c, addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"fileReservedTime=48\ndiskMaxUsedSpaceRatio=80\n")
        assert r.code == ResponseCode.SUCCESS, r.remark
    conf = shared_broker.conf.read_text()
    assert "fileReservedTime=48\n" in conf and "diskMaxUsedSpaceRatio=80\n" in conf
    assert "brokerIP1=127.0.0.1\n" in conf and "10.9.9.9" not in conf

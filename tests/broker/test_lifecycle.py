"""Broker process life cycle: CLI options, config errors, port in use, restart durability, golden config files."""

from __future__ import annotations

import shutil
import socket
import subprocess

import pytest

from remoting.body.subscription_group import SubscriptionGroupWrapper
from remoting.body.topic_config import TopicConfigSerializeWrapper
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from tests.broker.helpers import call, messages, pull, send, wait_max_offset
from tests.support import BIN, GOLDEN_STORE, ROOT

_GOLDEN_SET = GOLDEN_STORE
GOLDEN = _GOLDEN_SET / "store" / "config"
needs_golden = pytest.mark.skipif(not GOLDEN.exists(), reason="golden RocketMQ 4.9.7 store not available")


def run_cli(*args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "mqbroker"), *args], capture_output=True, text=True, timeout=timeout, cwd=str(ROOT))


def test_print_config_and_important_config(tmp_path):
    conf = tmp_path / "b.conf"
    conf.write_text("brokerName=pb\nlistenPort=12345\nstorePathRootDir=./rel/store\nbogusKey=1\n")
    r = run_cli("-c", str(conf), "-p", "-n", "10.0.0.1:9876;10.0.0.2:9876")
    assert r.returncode == 0, r.stderr
    assert "brokerName=pb\n" in r.stdout and "listenPort=12345\n" in r.stdout
    assert "namesrvAddr=10.0.0.1:9876;10.0.0.2:9876\n" in r.stdout
    assert f"storePathRootDir={ROOT / 'rel' / 'store'}\n" in r.stdout  # resolved against the current directory
    assert "flushDiskType=ASYNC_FLUSH\n" in r.stdout and "maxMessageSize=4194304\n" in r.stdout
    assert "unknown config key bogusKey" in r.stderr
    r = run_cli("-c", str(conf), "-m")
    assert r.returncode == 0 and "brokerName=pb\n" in r.stdout and "maxMessageSize" not in r.stdout
    r = run_cli("-h")
    assert r.returncode == 0 and "-c" in r.stdout


def test_bad_values_fail_with_the_key_named(tmp_path):
    for line, key in (("listenPort=abc", "listenPort"), ("autoCreateTopicEnable=maybe", "autoCreateTopicEnable"),
                      ("brokerRole=BOSS", "brokerRole"), ("namesrvAddr=nohostport", "namesrvAddr")):
        conf = tmp_path / "bad.conf"
        conf.write_text(line + "\n")
        r = run_cli("-c", str(conf), "-p")
        assert r.returncode != 0, line
        assert key in r.stderr, r.stderr
    r = run_cli("-c", str(tmp_path / "missing.conf"))
    assert r.returncode != 0 and "missing.conf" in r.stderr
    conf.write_text("brokerRole=SLAVE\nbrokerId=0\n")
    r = run_cli("-c", str(conf), "-p")
    assert r.returncode != 0 and "brokerId" in r.stderr


def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        conf = tmp_path / "b.conf"
        conf.write_text(f"listenPort={port}\nbrokerName=busy\nstorePathRootDir={tmp_path / 'store'}\n"
                        f"mappedFileSizeCommitLog=1048576\n")
        r = run_cli("-c", str(conf))
    assert r.returncode != 0
    assert f"cannot listen on port {port}" in r.stderr
    assert not (tmp_path / "store" / "abort").exists()


async def test_restart_keeps_topics_groups_offsets_and_messages(broker_factory):
    b = broker_factory("durable")
    addr = b.addr
    async with RemotingClient() as c:
        h = {"topic": "DurT", "defaultTopic": "TBW102", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6,
             "topicFilterType": "SINGLE_TAG", "order": "false"}
        assert (await call(c, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, h)).code == ResponseCode.SUCCESS
        from remoting.body.subscription_group import SubscriptionGroupConfig

        body = SubscriptionGroupConfig(groupName="gDur", retryMaxTimes=5).to_json()
        assert (await call(c, addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)).code == 0
        bodies = [b"m%d" % i for i in range(50)]
        for i, body_ in enumerate(bodies):
            r = await send(c, addr, "DurT", body_, {"KEYS": f"k{i}"}, queue_id=i % 2)
            assert r.code == ResponseCode.SUCCESS
        await send(c, addr, "AutoT", b"auto")
        await call(c, addr, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": "gDur", "topic": "DurT", "queueId": 1, "commitOffset": 17})
        await wait_max_offset(c, addr, "DurT", 1, 25)
    assert b.stop() == 0
    store = b.store
    assert not (store / "abort").exists()
    assert (store / "config" / "consumerOffset.json").read_text().find('"DurT@gDur":{1:17') >= 0
    b.start()
    async with RemotingClient() as c:
        r = await call(c, addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        table = TopicConfigSerializeWrapper.from_json(r.body).topicConfigTable
        assert table["DurT"].readQueueNums == 2 and "AutoT" in table
        r = await call(c, addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        assert SubscriptionGroupWrapper.from_json(r.body).subscriptionGroupTable["gDur"].retryMaxTimes == 5
        r = await call(c, addr, RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "gDur", "topic": "DurT", "queueId": 1})
        assert r.ext_fields["offset"] == "17"
        got = []
        for q in (0, 1):
            off = 0
            while True:
                p = await pull(c, addr, "gDur", "DurT", q, off)
                if p.code != ResponseCode.SUCCESS:
                    break
                got += [m.body for m in messages(p)]
                off = int(p.ext_fields["nextBeginOffset"])
        assert sorted(got) == sorted(bodies)
        # and the broker keeps appending after the recovered end
        r = await send(c, addr, "DurT", b"after", queue_id=0)
        assert r.ext_fields["queueOffset"] == "25"


@needs_golden
def test_managers_load_rocketmq_golden_config_files(tmp_path):
    """topics.json / subscriptionGroup.json / consumerOffset.json written by Java RocketMQ 4.9.7 load and
    are written back byte for byte."""
    from broker.config import BrokerConfig
    from broker.consumer_offset_manager import ConsumerOffsetManager
    from broker.subscription_group_manager import SubscriptionGroupManager
    from broker.topic_config_manager import TopicConfigManager

    cfg_dir = tmp_path / "config"
    shutil.copytree(GOLDEN, cfg_dir)
    bc = BrokerConfig(brokerClusterName="GoldenCluster", brokerName="golden-a")
    topics = TopicConfigManager(bc, str(cfg_dir / "topics.json"))
    groups = SubscriptionGroupManager(bc, str(cfg_dir / "subscriptionGroup.json"))
    offsets = ConsumerOffsetManager(str(cfg_dir / "consumerOffset.json"))
    assert topics.load() and groups.load() and offsets.load()
    assert topics.table["GoldenEvents"].readQueueNums == 4
    assert topics.data_version.counter == 7
    assert offsets.query_offset("golden-retry-group", "GoldenEvents", 3) == 36
    assert groups.table["golden-retry-group"].retryMaxTimes == 16
    for name, mgr in (("consumerOffset.json", offsets), ("subscriptionGroup.json", groups)):
        original = (GOLDEN / name).read_text()
        mgr.persist()
        assert (cfg_dir / name).read_text() == original, name
        assert (cfg_dir / (name + ".bak")).read_text() == original
    # Java's file already holds every system topic this broker creates: byte-identical too
    topics.persist()
    assert (cfg_dir / "topics.json").read_text() == (GOLDEN / "topics.json").read_text()


@needs_golden
def test_corrupt_config_file_falls_back_to_bak(tmp_path):
    from broker.config import BrokerConfig
    from broker.topic_config_manager import TopicConfigManager

    cfg_dir = tmp_path / "config"
    cfg_dir.mkdir()
    shutil.copy(GOLDEN / "topics.json", cfg_dir / "topics.json.bak")
    (cfg_dir / "topics.json").write_text('{"dataVersion":{')
    m = TopicConfigManager(BrokerConfig(brokerName="x"), str(cfg_dir / "topics.json"))
    assert m.load()
    assert "GoldenOrders" in m.table

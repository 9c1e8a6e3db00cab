"""RouteInfoManager: RocketMQ 4.9.7's register/unregister/expiry semantics, with an injected clock."""

from __future__ import annotations

from namesrv.route_info_manager import RouteInfoManager
from remoting.body.route import QueueData
from remoting.body.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper


class Clock:
    def __init__(self, t: int = 1_000_000):
        self.t = t

    def __call__(self) -> int:
        return self.t


def wrapper(*topics: tuple[str, int], dv: DataVersion | None = None) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        {name: TopicConfig(name, n, n, 6) for name, n in topics}, dv or DataVersion(1, 1)
    )


def reg(m, name="broker-a", bid=0, addr="10.0.0.1:10911", cluster="C1", ha="10.0.0.1:10912", w=None, ch=None):
    return m.register_broker(
        cluster, addr, name, bid, ha, w if w is not None else wrapper(("T1", 4)), None, ch
    )


def test_master_registration_builds_every_table():
    m = RouteInfoManager()
    res = reg(m, w=wrapper(("T1", 4), ("T2", 8)))
    assert res.master_addr is None and res.ha_server_addr is None
    assert m.cluster_addr_table == {"C1": {"broker-a": None}}
    assert m.broker_addr_table["broker-a"].brokerAddrs == {0: "10.0.0.1:10911"}
    assert m.topic_queue_table["T2"]["broker-a"] == QueueData("broker-a", 8, 8, 6, 0)
    route = m.pickup_topic_route_data("T1")
    assert [q.brokerName for q in route.queueDatas] == ["broker-a"]
    assert route.brokerDatas[0].brokerAddrs == {0: "10.0.0.1:10911"}
    assert m.pickup_topic_route_data("nope") is None


def test_slave_gets_master_ha_and_address_and_does_not_touch_topics():
    m = RouteInfoManager()
    reg(m, w=wrapper(("T1", 4)))
    res = reg(m, bid=1, addr="10.0.0.2:10911", ha="10.0.0.2:10912", w=wrapper(("T1", 99), ("SLAVE_ONLY", 1)))
    assert (res.master_addr, res.ha_server_addr) == ("10.0.0.1:10911", "10.0.0.1:10912")
    assert m.topic_queue_table["T1"]["broker-a"].readQueueNums == 4
    assert "SLAVE_ONLY" not in m.topic_queue_table
    # a slave without a live master learns nothing
    m2 = RouteInfoManager()
    res = reg(m2, bid=1, addr="10.0.0.2:10911")
    assert res.master_addr is None


def test_topic_data_only_replaced_when_data_version_changes():
    m = RouteInfoManager()
    reg(m, w=wrapper(("T1", 4), dv=DataVersion(5, 1)))
    reg(m, w=wrapper(("T1", 16), dv=DataVersion(5, 1)))  # same version: body ignored
    assert m.topic_queue_table["T1"]["broker-a"].readQueueNums == 4
    reg(m, w=wrapper(("T1", 16), dv=DataVersion(6, 2)))
    assert m.topic_queue_table["T1"]["broker-a"].readQueueNums == 16


def test_slave_switched_to_master_keeps_one_entry_per_address():
    m = RouteInfoManager()
    reg(m, bid=0, addr="A:1")
    reg(m, bid=1, addr="B:1")
    reg(m, bid=0, addr="B:1", w=wrapper(("T1", 4), dv=DataVersion(9, 9)))  # B becomes master
    assert m.broker_addr_table["broker-a"].brokerAddrs == {0: "B:1"}


def test_unregister_last_address_removes_broker_cluster_and_topics():
    m = RouteInfoManager()
    reg(m, w=wrapper(("T1", 4), ("SHARED", 4)))
    reg(m, name="broker-b", addr="10.0.0.3:10911", w=wrapper(("SHARED", 4)))
    reg(m, bid=1, addr="10.0.0.2:10911")
    m.unregister_broker("C1", "10.0.0.2:10911", "broker-a", 1)
    assert m.broker_addr_table["broker-a"].brokerAddrs == {0: "10.0.0.1:10911"}
    m.unregister_broker("C1", "10.0.0.1:10911", "broker-a", 0)
    assert "broker-a" not in m.broker_addr_table
    assert m.cluster_addr_table == {"C1": {"broker-b": None}}
    assert "T1" not in m.topic_queue_table
    assert list(m.topic_queue_table["SHARED"]) == ["broker-b"]
    assert "10.0.0.1:10911" not in m.broker_live_table


def test_scan_expires_silent_brokers_only():
    clock = Clock()
    m = RouteInfoManager(broker_channel_expired_time=1000, clock=clock)
    ch_a, ch_b = object(), object()
    reg(m, ch=ch_a)
    reg(m, name="broker-b", addr="B:1", w=wrapper(("TB", 1)), ch=ch_b)
    clock.t += 600
    reg(m, name="broker-b", addr="B:1", w=wrapper(("TB", 1)), ch=ch_b)  # b refreshes
    clock.t += 500  # a: 1100 ms silent, b: 500 ms
    expired = m.scan_not_active_broker()
    assert expired == [("10.0.0.1:10911", ch_a)]
    assert "broker-a" not in m.broker_addr_table and "T1" not in m.topic_queue_table
    assert m.pickup_topic_route_data("TB") is not None
    assert m.scan_not_active_broker() == []


def test_query_data_version_refresh_keeps_broker_alive():
    clock = Clock()
    m = RouteInfoManager(broker_channel_expired_time=1000, clock=clock)
    reg(m, w=wrapper(("T1", 4), dv=DataVersion(7, 7)))
    clock.t += 900
    assert not m.is_broker_topic_config_changed("10.0.0.1:10911", DataVersion(7, 7))
    assert m.is_broker_topic_config_changed("10.0.0.1:10911", DataVersion(7, 8))
    m.update_broker_info_update_timestamp("10.0.0.1:10911")
    clock.t += 900
    assert m.scan_not_active_broker() == []


def test_channel_destroy_removes_every_address_of_that_channel_at_once():
    m = RouteInfoManager()
    ch = object()
    reg(m, ch=ch)
    reg(m, bid=1, addr="10.0.0.2:10911", ch=object())
    assert m.on_channel_destroy("127.0.0.1:55555", ch) == ["10.0.0.1:10911"]
    assert m.broker_addr_table["broker-a"].brokerAddrs == {1: "10.0.0.2:10911"}
    # the topic stays while the group still has an address (as RocketMQ)
    assert "T1" in m.topic_queue_table
    # an unknown channel falls back to the remote address, which matches nothing here
    assert m.on_channel_destroy("127.0.0.1:1", object()) == []


def test_wipe_and_add_write_perm():
    m = RouteInfoManager()
    reg(m, w=wrapper(("T1", 4), ("T2", 4)))
    reg(m, name="broker-b", addr="B:1", w=wrapper(("T1", 4)))
    assert m.wipe_write_perm_of_broker("broker-a") == 2
    assert m.topic_queue_table["T1"]["broker-a"].perm == 4
    assert m.topic_queue_table["T1"]["broker-b"].perm == 6
    assert m.add_write_perm_of_broker("broker-a") == 2
    assert m.topic_queue_table["T2"]["broker-a"].perm == 6
    assert m.wipe_write_perm_of_broker("nobody") == 0


def test_delete_topic_all_or_per_cluster():
    m = RouteInfoManager()
    reg(m, w=wrapper(("T1", 4)))
    reg(m, name="broker-b", addr="B:1", cluster="C2", w=wrapper(("T1", 4)))
    m.delete_topic("T1", "C2")
    assert list(m.topic_queue_table["T1"]) == ["broker-a"]
    m.delete_topic("T1", "C1")
    assert "T1" not in m.topic_queue_table
    reg(m, w=wrapper(("T9", 1)), addr="10.0.0.1:10911")
    m.delete_topic("T9")
    assert "T9" not in m.topic_queue_table


def test_topic_lists():
    m = RouteInfoManager()
    w = wrapper(("T1", 4), ("UNIT", 1), ("UNITSUB", 1), ("BOTH", 1))
    w.topicConfigTable["UNIT"].topicSysFlag = 1
    w.topicConfigTable["UNITSUB"].topicSysFlag = 2
    w.topicConfigTable["BOTH"].topicSysFlag = 3
    reg(m, w=w)
    reg(m, name="broker-b", addr="B:1", cluster="C2", w=wrapper(("OTHER", 1)))
    assert sorted(m.get_all_topic_list().topicList) == ["BOTH", "OTHER", "T1", "UNIT", "UNITSUB"]
    assert sorted(m.get_topics_by_cluster("C2").topicList) == ["OTHER"]
    assert m.get_topics_by_cluster("nope").topicList == []
    sys_list = m.get_system_topic_list()
    assert sorted(sys_list.topicList) == ["C1", "C2", "broker-a", "broker-b"]
    assert sys_list.brokerAddr in ("10.0.0.1:10911", "B:1")
    assert sorted(m.get_unit_topics().topicList) == ["BOTH", "UNIT"]
    assert sorted(m.get_has_unit_sub_topic_list().topicList) == ["BOTH", "UNITSUB"]
    assert m.get_has_unit_sub_ununit_topic_list().topicList == ["UNITSUB"]
    ci = m.get_all_cluster_info()
    assert ci.clusterAddrTable == {"C1": ["broker-a"], "C2": ["broker-b"]}


def test_route_is_a_copy():
    m = RouteInfoManager()
    reg(m)
    r = m.pickup_topic_route_data("T1")
    r.queueDatas[0].perm = 0
    r.brokerDatas[0].brokerAddrs[5] = "x"
    assert m.topic_queue_table["T1"]["broker-a"].perm == 6
    assert 5 not in m.broker_addr_table["broker-a"].brokerAddrs


def test_filter_servers_in_route():
    m = RouteInfoManager()
    m.register_broker("C1", "A:1", "broker-a", 0, "A:2", wrapper(("T1", 1)), ["F:1"], None)
    assert m.pickup_topic_route_data("T1").filterServerTable == {"A:1": ["F:1"]}
    m.register_broker("C1", "A:1", "broker-a", 0, "A:2", wrapper(("T1", 1)), [], None)
    assert m.pickup_topic_route_data("T1").filterServerTable == {}


def test_register_topic_only_for_known_brokers():
    m = RouteInfoManager()
    reg(m)
    m.register_topic("NEW", [QueueData("broker-a", 2, 2, 6), QueueData("ghost", 1, 1, 6)])
    assert list(m.topic_queue_table["NEW"]) == ["broker-a"]


def test_closing_a_stale_channel_after_reconnect_keeps_the_broker():
    m = RouteInfoManager()
    old, new = object(), object()
    reg(m, ch=old)
    reg(m, ch=new)  # the broker reconnected and registered again
    assert m.on_channel_destroy("127.0.0.1:50000", old) == []
    assert m.pickup_topic_route_data("T1") is not None
    assert m.on_channel_destroy("127.0.0.1:50001", new) == ["10.0.0.1:10911"]
    assert m.pickup_topic_route_data("T1") is None

"""The BrokerFastFailure policy: which requests are shed, after how long, with which remark."""

from __future__ import annotations

from broker.broker_fast_failure import MAX_WAITING_PUTS, BrokerFastFailure
from broker.config import BrokerConfig
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand


class _Puts:
    def __init__(self, n: int) -> None:
        self.waiting_puts = n


def _req(code: int) -> RemotingCommand:
    r = RemotingCommand.request(code)
    r.opaque = 42
    return r


def test_limits_per_queue_and_remark():
    cfg = BrokerConfig()
    ff = BrokerFastFailure(cfg)
    send = _req(RequestCode.SEND_MESSAGE_V2)
    assert ff(send, 199.0, 10) is None
    r = ff(send, 250.7, 10)
    assert r.code == ResponseCode.SYSTEM_BUSY and r.opaque == 42
    assert r.remark == ("[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
                        "period in queue: 250ms, size of queue: 10")
    for code, limit in ((RequestCode.PULL_MESSAGE, 5000), (RequestCode.HEART_BEAT, 31000),
                        (RequestCode.END_TRANSACTION, 3000), (RequestCode.SEND_BATCH_MESSAGE, 200),
                        (RequestCode.CONSUMER_SEND_MSG_BACK, 200)):
        assert ff(_req(code), limit - 1, 1) is None
        assert ff(_req(code), limit, 1).code == ResponseCode.SYSTEM_BUSY
    # admin and other requests are never shed; the switch and the limits apply at once
    assert ff(_req(RequestCode.GET_BROKER_RUNTIME_INFO), 1e9, 1) is None
    cfg.waitTimeMillsInSendQueue = 1000
    assert ff(send, 250, 1) is None
    cfg.brokerFastFailureEnable = False
    assert ff(send, 1e9, 1) is None


def test_page_cache_busy_cleans_sends_and_the_gate_follows_waiting_puts():
    busy = [True]
    ff = BrokerFastFailure(BrokerConfig(), _Puts(0), os_page_cache_busy=lambda: busy[0])
    r = ff(_req(RequestCode.SEND_MESSAGE), 0.0, 3)
    assert r.code == ResponseCode.SYSTEM_BUSY and r.remark.startswith("[PCBUSY_CLEAN_QUEUE]broker busy")
    assert ff(_req(RequestCode.PULL_MESSAGE), 0.0, 3) is None
    puts = _Puts(MAX_WAITING_PUTS - 1)
    ff = BrokerFastFailure(BrokerConfig(), puts)
    assert ff.accepting()
    puts.waiting_puts = MAX_WAITING_PUTS
    assert not ff.accepting()
    assert BrokerFastFailure(BrokerConfig()).accepting()

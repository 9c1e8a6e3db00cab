"""Issue 17, defect 2 (NameServer side): UPDATE_NAMESRV_CONFIG cannot smuggle a key in a value.

``productEnvName=x\\nconfigStorePath=/any/path`` (the properties escape for a line break) used to
be accepted; the persisted file then carried a second line moving configStorePath, which a
restart from that file obeyed, so the next update wrote a file of the caller's choosing
(CVE-2023-37582's class; RocketMQ 4.9.7 accepts it too).
"""

from __future__ import annotations

import pytest

from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand

pytestmark = pytest.mark.timeout(60)


async def _update(client, ns, text: str):
    return await client.invoke(ns.addr, RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=text.encode()))


async def _get(client, ns) -> str:
    r = await client.invoke(ns.addr, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG))
    return bytes(r.body).decode()


async def test_escaped_line_breaks_are_refused_and_nothing_is_persisted(namesrv, tmp_path):
    evil = tmp_path / "evil.properties"
    store = tmp_path / "ns" / "namesrv.properties"
    async with RemotingClient() as client:
        # \n escape, \r escape, and the line separators str.splitlines() also ends lines at
        for text in (f"productEnvName=x\\nconfigStorePath={evil}\n",
                     f"productEnvName=x\\rconfigStorePath={evil}\n",
                     f"productEnvName=x\\u2028configStorePath={evil}\n",
                     f"productEnvName=x\\u000bconfigStorePath={evil}\n"):
            r = await _update(client, namesrv, text)
            assert r.code == ResponseCode.SYSTEM_ERROR, text
            assert r.remark == "the value of config key productEnvName contains a line break"
        assert not store.exists()
        assert "productEnvName=center\n" in await _get(client, namesrv)


async def test_persisted_values_round_trip_and_never_move_the_store(namesrv_factory, tmp_path):
    ns = namesrv_factory()
    store = tmp_path / "ns" / "namesrv.properties"
    async with RemotingClient() as client:
        r = await _update(client, ns, "productEnvName=a\\\\b\n")  # a backslash: escaped when persisted
        assert r.code == ResponseCode.SUCCESS, r.remark
    assert store.exists()
    # restart from the persisted file: same value, same store path
    ns.stop()
    ns.conf.write_text(store.read_text())
    ns.start()
    async with RemotingClient() as client:
        text = await _get(client, ns)
        assert "productEnvName=a\\\\b\n" in text  # escaped on the wire, one backslash in the value
        assert f"configStorePath={store}\n" in text
        r = await _update(client, ns, "productEnvName=back\n")
        assert r.code == ResponseCode.SUCCESS
    assert "productEnvName=back\n" in store.read_text()
    assert sorted(p.name for p in tmp_path.rglob("*.properties")) == ["namesrv.properties"]

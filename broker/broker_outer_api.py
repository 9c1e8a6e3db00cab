"""BrokerOuterAPI: the broker's calls to the NameServers (register / unregister)."""

from __future__ import annotations

import asyncio
import logging
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.role_state import RoleState
from remoting.client import RemotingClient
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand

if TYPE_CHECKING:  # bodies and headers are imported where used: a broker without a NameServer never needs them
    from remoting.body.topic_config import DataVersion, TopicConfigSerializeWrapper

__all__ = ["BrokerOuterAPI", "RegisterBrokerResult", "BrokerIdentity"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class BrokerIdentity:
    """Who this broker is, as the NameServer sees it; the broker id is the live one of ``role``."""

    cluster_name: str
    broker_name: str
    broker_addr: str
    role: RoleState
    ha_server_addr: str

    @property
    def broker_id(self) -> int:
        return self.role.broker_id

    def header_fields(self) -> dict[str, str | int]:
        """The four header fields every register/unregister/query-version request names the broker by."""
        return {"brokerName": self.broker_name, "brokerAddr": self.broker_addr,
                "clusterName": self.cluster_name, "brokerId": self.role.broker_id}


@dataclass(slots=True)
class RegisterBrokerResult:
    """A NameServer's answer: the master's addresses (for slaves) and the order-topic KV table."""

    namesrv: str
    ha_server_addr: str | None = None
    master_addr: str | None = None
    kv_table: dict[str, str] | None = None


class BrokerOuterAPI:
    """Talks to every configured NameServer in parallel through one RemotingClient."""

    def __init__(self, client: RemotingClient, namesrv_addrs: list[str]):
        self.client = client
        self.namesrv_addrs = list(namesrv_addrs)

    async def register_broker_all(
        self,
        ident: BrokerIdentity,
        wrapper: TopicConfigSerializeWrapper,
        *,
        oneway: bool = False,
        timeout_ms: int = 6000,
        compressed: bool = False,
        filter_server_list: list[str] | None = None,
    ) -> list[RegisterBrokerResult]:
        """REGISTER_BROKER to every NameServer in parallel; failures are logged, not raised.

        ``filter_server_list`` goes into the body's ``filterServerList`` (the live filter servers,
        as BrokerController.doRegisterBrokerAll sends them)."""
        # imported on first use: a broker without a NameServer never needs it (start-up time)
        from remoting.body.register_broker import RegisterBrokerBody

        if not self.namesrv_addrs:
            return []
        body = RegisterBrokerBody(
            topicConfigSerializeWrapper=wrapper, filterServerList=list(filter_server_list or ())
        ).encode(compressed)
        crc = zlib.crc32(body) & 0x7FFFFFFF

        async def one(addr: str) -> RegisterBrokerResult | None:
            # imported on first use: a broker without a NameServer never needs it (start-up time)
            from remoting.body.kv import KVTable
            from remoting.header.namesrv import RegisterBrokerRequestHeader

            header = RegisterBrokerRequestHeader(
                **ident.header_fields(), haServerAddr=ident.ha_server_addr, compressed=compressed, bodyCrc32=crc
            )
            cmd = RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body, oneway=oneway)
            try:
                if oneway:
                    await asyncio.wait_for(self.client.invoke_oneway(addr, cmd), timeout_ms / 1000)
                    return None
                resp = await self.client.invoke(addr, cmd, timeout_ms / 1000)
            except Exception as e:  # noqa: BLE001 - one dead NameServer must not stop the others
                log.warning("register broker to name server %s failed: %s", addr, e)
                return None
            if resp.code != ResponseCode.SUCCESS:
                log.warning("name server %s refused registration: %s %s", addr, resp.code, resp.remark)
                return None
            ext = resp.ext_fields or {}
            kv = None
            if resp.body:
                try:
                    kv = KVTable.from_json(resp.body).table
                except Exception:  # noqa: BLE001
                    kv = None
            return RegisterBrokerResult(addr, ext.get("haServerAddr"), ext.get("masterAddr"), kv)

        results = await asyncio.gather(*(one(a) for a in self.namesrv_addrs))
        return [r for r in results if r is not None]

    async def need_register(self, ident: BrokerIdentity, data_version: DataVersion, timeout_ms: int = 6000) -> bool:
        """QUERY_DATA_VERSION to every NameServer: True if any has another version (or did not answer)."""

        async def one(addr: str) -> bool:
            # imported on first use: a broker without a NameServer never needs it (start-up time)
            from remoting.header.namesrv import QueryDataVersionRequestHeader

            header = QueryDataVersionRequestHeader(**ident.header_fields())
            cmd = RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, header, data_version.to_json())
            try:
                resp = await self.client.invoke(addr, cmd, timeout_ms / 1000)
            except Exception as e:  # noqa: BLE001
                log.warning("query data version from name server %s failed: %s", addr, e)
                return True
            if resp.code != ResponseCode.SUCCESS:
                return True
            return (resp.ext_fields or {}).get("changed", "true").lower() == "true"

        results = await asyncio.gather(*(one(a) for a in self.namesrv_addrs))
        return any(results)

    async def unregister_broker_all(self, ident: BrokerIdentity, timeout_ms: int = 3000) -> None:
        async def one(addr: str) -> None:
            # imported on first use: a broker without a NameServer never needs it (start-up time)
            from remoting.header.namesrv import UnRegisterBrokerRequestHeader

            header = UnRegisterBrokerRequestHeader(**ident.header_fields())
            try:
                await self.client.invoke(addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header), timeout_ms / 1000)
            except Exception as e:  # noqa: BLE001
                log.warning("unregister broker from name server %s failed: %s", addr, e)

        await asyncio.gather(*(one(a) for a in self.namesrv_addrs))

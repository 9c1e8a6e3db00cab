"""ClientConfig: what every producer/consumer shares (NameServer list, identity, periods)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from client.acl import AclClientRPCHook, SessionCredentials
from client.exceptions import MQClientError
from client.message_id import local_ip
from common.topic_validator import validate_group
from remoting.tls import TlsSystemConfig

__all__ = ["ClientConfig", "namesrv_from_env", "group_config"]


def namesrv_from_env() -> str | None:
    """``NAMESRV_ADDR`` from the environment (or the ``rocketmq.namesrv.addr`` style property)."""
    return os.environ.get("NAMESRV_ADDR") or None


@dataclass
class ClientConfig:
    """Java ClientConfig defaults; ``namesrv_addr`` is ``host:port;host:port``."""

    namesrv_addr: str | None = field(default_factory=namesrv_from_env)
    client_ip: str = field(default_factory=local_ip)
    instance_name: str = field(default_factory=lambda: os.environ.get("rocketmq.client.name", "DEFAULT"))
    unit_name: str | None = None
    poll_name_server_interval: float = 30.0
    heartbeat_broker_interval: float = 30.0
    persist_consumer_offset_interval: float = 5.0
    mq_client_api_timeout: float = 3.0
    namespace: str | None = None
    #: sign every request for an ACL broker (Java: ``new AclClientRPCHook(credentials)``)
    credentials: SessionCredentials | None = None
    #: connect with TLS (Java ``useTLS``); ``tls`` holds the tls.client.* settings
    use_tls: bool = False
    tls: TlsSystemConfig | None = None

    def rpc_hook(self) -> AclClientRPCHook | None:
        return AclClientRPCHook(self.credentials) if self.credentials is not None else None

    def ssl_context(self):
        """The client ssl context when ``use_tls`` (trusting any server unless tls.client.authServer)."""
        if not self.use_tls:
            return None
        return (self.tls or TlsSystemConfig()).client_context()

    def namesrv_list(self) -> list[str]:
        """The NameServer addresses; ValueError when none is configured."""
        raw = self.namesrv_addr or ""
        addrs = [a.strip() for a in raw.replace(",", ";").split(";") if a.strip()]
        if not addrs:
            raise ValueError("no NameServer address: set namesrv_addr or NAMESRV_ADDR")
        return addrs

    def change_instance_name_to_pid(self) -> None:
        """Java: instance name DEFAULT becomes ``<pid>#<nanoTime>`` so clients of one process differ."""
        if self.instance_name == "DEFAULT":
            self.instance_name = f"{os.getpid()}#{time.monotonic_ns()}"

    def build_client_id(self) -> str:
        """``ip@instanceName[@unitName]`` as the Java client builds it."""
        cid = f"{self.client_ip}@{self.instance_name}"
        if self.unit_name:
            cid += f"@{self.unit_name}"
        return cid


def group_config(group: str, config: ClientConfig | None, namesrv_addr: str | None) -> ClientConfig:
    """The config a producer or consumer of ``group`` runs with (``namesrv_addr`` overrides the
    config's); MQClientError for a group name RocketMQ refuses."""
    err = validate_group(group)
    if err:
        raise MQClientError(err)
    config = config or ClientConfig()
    if namesrv_addr:
        config.namesrv_addr = namesrv_addr
    return config
